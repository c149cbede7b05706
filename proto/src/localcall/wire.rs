//! The frames of a local call ([`super`]): what goes over the socket,
//! and reading it back with every length checked before anything is
//! allocated for it.
//!
//! A connection starts with [`MAGIC`] from the client, then frames of
//! `kind:u8 len:u32le payload`, one call after another. For a call the
//! client sends one [`Kind::Head`] (the method's path and the request's
//! headers), the request body as [`Kind::Data`] frames and [`Kind::End`];
//! the server answers with one [`Kind::Head`] (status and headers), the
//! response body as [`Kind::Data`] frames, then [`Kind::Trailers`] or
//! [`Kind::End`]; only then may the client send the next call's head. A
//! header list is `count:u16` then `name_len:u16 name value_len:u32 value`
//! per entry.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The first bytes of a local call's connection. An HTTP/2 client's first
/// bytes are its preface, `PRI * HTTP/2.0`: the two never mix.
pub const MAGIC: &[u8; 4] = b"DLC1";

/// Largest head or trailers frame accepted (the HTTP/2 servers' header
/// list limit is 16 KiB; a few bytes of framing on top).
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// Largest data frame sent or accepted; a longer body goes in several.
pub const MAX_DATA_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Head = 1,
    Data = 2,
    Trailers = 3,
    End = 4,
}

impl Kind {
    fn of(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Head,
            2 => Kind::Data,
            3 => Kind::Trailers,
            4 => Kind::End,
            _ => return None,
        })
    }

    fn limit(self) -> usize {
        match self {
            Kind::Head | Kind::Trailers => MAX_HEAD_BYTES,
            Kind::Data => MAX_DATA_BYTES,
            Kind::End => 0,
        }
    }
}

/// Append one frame.
pub fn put_frame(out: &mut Vec<u8>, kind: Kind, payload: &[u8]) {
    put_frame_header(out, kind, payload.len());
    out.extend_from_slice(payload);
}

/// Append a frame's kind and length (its payload to follow).
pub fn put_frame_header(out: &mut Vec<u8>, kind: Kind, len: usize) {
    out.push(kind as u8);
    out.extend_from_slice(&(len as u32).to_le_bytes());
}

/// Append a body chunk as data frames of at most [`MAX_DATA_BYTES`].
pub fn put_data(out: &mut Vec<u8>, mut data: &[u8]) {
    while !data.is_empty() {
        let n = data.len().min(MAX_DATA_BYTES);
        put_frame(out, Kind::Data, &data[..n]);
        data = &data[n..];
    }
}

fn put_headers(out: &mut BytesMut, headers: &HeaderMap) {
    out.put_u16_le(headers.len().min(u16::MAX as usize) as u16);
    for (name, value) in headers.iter().take(u16::MAX as usize) {
        out.put_u16_le(name.as_str().len() as u16);
        out.put_slice(name.as_str().as_bytes());
        out.put_u32_le(value.len() as u32);
        out.put_slice(value.as_bytes());
    }
}

/// A request's head: the method's path and the headers.
pub fn request_head(path: &str, headers: &HeaderMap) -> Bytes {
    let mut b = BytesMut::with_capacity(64 + path.len());
    b.put_u16_le(path.len().min(u16::MAX as usize) as u16);
    b.put_slice(&path.as_bytes()[..path.len().min(u16::MAX as usize)]);
    put_headers(&mut b, headers);
    b.freeze()
}

/// A response's head: the status and the headers.
pub fn response_head(status: http::StatusCode, headers: &HeaderMap) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    b.put_u16_le(status.as_u16());
    put_headers(&mut b, headers);
    b.freeze()
}

/// Trailers (gRPC's status, message and details).
pub fn trailers(headers: &HeaderMap) -> Bytes {
    let mut b = BytesMut::new();
    put_headers(&mut b, headers);
    b.freeze()
}

/// Reads a head's fields in order, each bounds-checked.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("frame shorter than its fields".into());
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn headers(&mut self) -> Result<HeaderMap, String> {
        let n = self.u16()? as usize;
        let mut map = HeaderMap::with_capacity(n.min(64));
        for _ in 0..n {
            let len = self.u16()? as usize;
            let name = HeaderName::from_bytes(self.take(len)?)
                .map_err(|_| "a header name that is not one".to_string())?;
            let len = self.u32()? as usize;
            let value = HeaderValue::from_bytes(self.take(len)?)
                .map_err(|_| format!("header {name}: a value that is not one"))?;
            map.append(name, value);
        }
        if !self.0.is_empty() {
            return Err("bytes after the headers".into());
        }
        Ok(map)
    }
}

/// A request head's path and headers.
pub fn parse_request_head(b: &[u8]) -> Result<(String, HeaderMap), String> {
    let mut f = Fields(b);
    let n = f.u16()? as usize;
    let path = std::str::from_utf8(f.take(n)?)
        .map_err(|_| "a path that is not UTF-8".to_string())?
        .to_string();
    if !path.starts_with('/') {
        return Err(format!("path {path:?} does not start with /"));
    }
    Ok((path, f.headers()?))
}

/// A response head's status and headers.
pub fn parse_response_head(b: &[u8]) -> Result<(http::StatusCode, HeaderMap), String> {
    let mut f = Fields(b);
    let status =
        http::StatusCode::from_u16(f.u16()?).map_err(|_| "a status that is not one".to_string())?;
    Ok((status, f.headers()?))
}

pub fn parse_trailers(b: &[u8]) -> Result<HeaderMap, String> {
    Fields(b).headers()
}

/// Read one frame: its kind and payload. `Ok(None)`: the peer closed the
/// connection between frames.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<Option<(Kind, Bytes)>> {
    let mut hdr = [0u8; 5];
    match r.read_exact(&mut hdr[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut hdr[1..]).await?;
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    let kind = Kind::of(hdr[0]).ok_or_else(|| invalid(format!("unknown frame kind {}", hdr[0])))?;
    let len = u32::from_le_bytes([hdr[1], hdr[2], hdr[3], hdr[4]]) as usize;
    if len > kind.limit() {
        return Err(invalid(format!(
            "{kind:?} frame of {len} bytes (at most {})",
            kind.limit()
        )));
    }
    // Read into spare capacity: a large answer's megabytes are not zeroed
    // first.
    let mut payload = BytesMut::with_capacity(len);
    while payload.len() < len {
        let want = (len - payload.len()) as u64;
        if (&mut *r).take(want).read_buf(&mut payload).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(Some((kind, payload.freeze())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    fn headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/grpc"));
        h.append("x-many", HeaderValue::from_static("one"));
        h.append("x-many", HeaderValue::from_static("two"));
        h
    }

    #[test]
    fn heads_read_back_as_written() {
        let b = request_head("/drover.Controller/Submit", &headers());
        let (path, h) = parse_request_head(&b).unwrap();
        assert_eq!(path, "/drover.Controller/Submit");
        assert_eq!(h, headers());
        let b = response_head(http::StatusCode::OK, &headers());
        assert_eq!(
            parse_response_head(&b).unwrap(),
            (http::StatusCode::OK, headers())
        );
        assert_eq!(parse_trailers(&trailers(&headers())).unwrap(), headers());
    }

    #[test]
    fn a_cut_or_padded_head_is_refused_not_misread() {
        let b = request_head("/a/B", &headers());
        for n in 0..b.len() {
            assert!(parse_request_head(&b[..n]).is_err(), "cut at {n}");
        }
        let mut long = b.to_vec();
        long.push(0);
        assert!(parse_request_head(&long).is_err());
        assert!(parse_request_head(&request_head("nopath", &HeaderMap::new())).is_err());
        // A header name the http crate refuses.
        let mut bad = BytesMut::new();
        bad.put_u16_le(2);
        bad.put_slice(b"/x");
        bad.put_u16_le(1);
        bad.put_u16_le(3);
        bad.put_slice(b"a b");
        bad.put_u32_le(0);
        assert!(parse_request_head(&bad).is_err());
    }

    #[test]
    fn frames_read_back_and_lengths_are_checked_before_reading() {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        put_frame(&mut out, Kind::Head, b"head");
        put_data(&mut out, &vec![7u8; MAX_DATA_BYTES + 3]);
        put_frame(&mut out, Kind::End, &[]);
        let rt = rt();
        let mut r = &out[4..];
        rt.block_on(async {
            let (k, p) = read_frame(&mut r).await.unwrap().unwrap();
            assert_eq!((k, &p[..]), (Kind::Head, &b"head"[..]));
            let (k, p) = read_frame(&mut r).await.unwrap().unwrap();
            assert_eq!((k, p.len()), (Kind::Data, MAX_DATA_BYTES));
            let (k, p) = read_frame(&mut r).await.unwrap().unwrap();
            assert_eq!((k, p.len()), (Kind::Data, 3));
            let (k, p) = read_frame(&mut r).await.unwrap().unwrap();
            assert_eq!((k, p.len()), (Kind::End, 0));
            assert!(read_frame(&mut r).await.unwrap().is_none(), "closed");
            // A frame claiming 4 GiB is refused from its header alone.
            let mut huge: &[u8] = &[2, 255, 255, 255, 255];
            let e = read_frame(&mut huge).await.unwrap_err();
            assert!(e.to_string().contains("at most"), "{e}");
            let mut unknown: &[u8] = &[9, 0, 0, 0, 0];
            assert!(read_frame(&mut unknown).await.is_err());
            // Cut inside a frame: an error, not a clean close.
            let mut cut: &[u8] = &[2, 5, 0, 0, 0, 1, 2];
            assert!(read_frame(&mut cut).await.is_err());
            let mut cut: &[u8] = &[2, 5];
            assert!(read_frame(&mut cut).await.is_err());
        });
    }
}
