//! The body of a `GET /jobs` answer: the pieces it is made of, sent one
//! after the other as HTTP body frames. Most pieces are the written jobs'
//! bytes as the cache holds them ([`crate::jobcache`], shared, counted
//! references, not copies); the length is known before the first byte,
//! so the answer goes out with `Content-Length` (no chunked encoding for
//! the client to take apart).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body::{Body, Frame, SizeHint};

/// An answer in pieces.
#[derive(Default)]
pub struct Pieces {
    parts: Vec<Bytes>,
    len: u64,
}

impl Pieces {
    pub fn with_capacity(n: usize) -> Pieces {
        Pieces {
            parts: Vec::with_capacity(n),
            len: 0,
        }
    }

    /// Append one piece (empty ones are dropped).
    pub fn push(&mut self, b: Bytes) {
        if !b.is_empty() {
            self.len += b.len() as u64;
            self.parts.push(b);
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The whole answer in one string (tests, and answers too small to
    /// be worth pieces).
    pub fn concat(&self) -> String {
        let mut v = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
        for p in &self.parts {
            v.extend_from_slice(p);
        }
        String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// A 200 `application/json` answer streaming the pieces.
    pub fn into_response(self) -> Response {
        let len = self.len;
        let mut r = (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            axum::body::Body::new(JobsBody {
                parts: self.parts.into_iter(),
                left: len,
            }),
        )
            .into_response();
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        r
    }
}

/// [`Pieces`] as an HTTP body: one frame per piece.
struct JobsBody {
    parts: std::vec::IntoIter<Bytes>,
    left: u64,
}

impl Body for JobsBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        Poll::Ready(this.parts.next().map(|b| {
            this.left -= b.len() as u64;
            Ok(Frame::data(b))
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_body_is_the_pieces_in_order_with_their_length() {
        let mut p = Pieces::default();
        p.push(Bytes::from_static(b"{\"a\":["));
        p.push(Bytes::new());
        p.push(Bytes::from_static(b"1,2"));
        p.push(Bytes::from("]}".to_string()));
        assert_eq!(p.len(), 11);
        assert_eq!(p.concat(), "{\"a\":[1,2]}");
        let r = p.into_response();
        assert_eq!(r.headers()[header::CONTENT_LENGTH], "11");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
        let body = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        assert_eq!(&body[..], b"{\"a\":[1,2]}");
    }
}
