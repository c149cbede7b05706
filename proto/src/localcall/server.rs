//! The server side of local calls: the calls of a connection one after
//! another, each handed to the same tower stack (authentication, standby,
//! services) as the controller's HTTP/2 connections, with the connection's [`LocalPeer`]
//! in the request's extensions as tonic puts it there. A caller that
//! closes the connection before the answer is complete cancels the call,
//! as an HTTP/2 stream reset does.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::{BodyExt, StreamBody};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::body::Body;

use super::wire::{self, Kind};
use crate::localsock::LocalPeer;

use crate::BoxError;

/// What serves local calls: the controller's tower stack.
pub trait CallService:
    tower::Service<
        http::Request<Body>,
        Response = http::Response<Body>,
        Error = BoxError,
        Future: Send,
    > + Send
{
}

impl<S> CallService for S where
    S: tower::Service<
            http::Request<Body>,
            Response = http::Response<Body>,
            Error = BoxError,
            Future: Send,
        > + Send
{
}

/// A body chunk this long is written as it is, not copied into the
/// pending write.
const BIG: usize = 64 * 1024;

/// How long a connection may wait between calls before it is closed
/// (the client reuses one only while it is younger than half of this:
/// [`super::client`]).
pub const IDLE_WITHIN: Duration = Duration::from_secs(60);

/// Serve the calls on `stream` (its [`wire::MAGIC`] already read) with
/// `svc`, one after another, until the caller closes it, breaks the
/// protocol or leaves it idle for [`IDLE_WITHIN`]. What goes wrong is the
/// caller's to see (a closed connection) and logged at debug level.
pub async fn serve(stream: UnixStream, peer: LocalPeer, mut svc: impl CallService) {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    loop {
        let head = match tokio::time::timeout(IDLE_WITHIN, wire::read_frame(&mut rd)).await {
            Ok(Ok(Some((Kind::Head, p)))) => p,
            Ok(Ok(Some((k, _)))) => {
                tracing::debug!("local call: a {k:?} frame before the head");
                return;
            }
            Ok(Ok(None)) | Err(_) => return,
            Ok(Err(e)) => {
                tracing::debug!("local call: {e}");
                return;
            }
        };
        match serve_call(&head, &mut rd, &mut wr, peer.clone(), &mut svc).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::debug!("local call: {e}");
                return;
            }
        }
    }
}

/// One call, its head read. `Ok(true)`: answered, and the connection is
/// ready for the next call (the request was read to its end frame).
async fn serve_call(
    head: &[u8],
    rd: &mut BufReader<OwnedReadHalf>,
    wr: &mut OwnedWriteHalf,
    peer: LocalPeer,
    svc: &mut impl CallService,
) -> Result<bool, String> {
    let (path, headers) = wire::parse_request_head(head)?;
    let deadline = headers
        .get("grpc-timeout")
        .and_then(|v| v.to_str().ok())
        .and_then(grpc_timeout);
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, BoxError>>(8);
    let mut req = http::Request::new(Body::new(StreamBody::new(ReceiverStream::new(rx))));
    *req.method_mut() = http::Method::POST;
    *req.version_mut() = http::Version::HTTP_2;
    *req.uri_mut() =
        http::Uri::try_from(path.as_str()).map_err(|e| format!("path {path:?}: {e}"))?;
    *req.headers_mut() = headers;
    req.extensions_mut().insert(peer);

    // The request's body as it comes, then a wait for the caller to hang
    // up: polled alongside the call, in this task.
    let body_read = AtomicBool::new(false);
    let reading = async {
        if read_body(rd, tx).await {
            body_read.store(true, Ordering::Relaxed);
            watch_gone(rd).await;
        }
    };
    tokio::pin!(reading);
    let answered = async {
        std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
        svc.call(req).await
    };
    let resp = tokio::select! {
        r = with_deadline(deadline, answered) => r,
        _ = &mut reading => return Ok(false),
    };
    let mut resp = resp.unwrap_or_else(|e| tonic::Status::from_error(e).into_http());
    let mut head = wire::response_head(resp.status(), resp.headers());
    if head.len() > wire::MAX_HEAD_BYTES {
        // Instead, the status alone, in the headers (as tonic sends an error).
        resp = too_large("headers", head.len()).into_http();
        head = wire::response_head(resp.status(), resp.headers());
    }
    let mut body = resp.into_body();
    let mut out = Vec::with_capacity(512);
    wire::put_frame(&mut out, Kind::Head, &head);
    loop {
        // What is ready now goes in the same write (a unary answer: head,
        // message and trailers at once).
        let frame = match super::ready_frame(&mut body) {
            Some(f) => f,
            None => {
                write(wr, &mut out).await?;
                tokio::select! {
                    f = body.frame() => f,
                    _ = &mut reading => return Ok(false),
                }
            }
        };
        match frame {
            Some(Ok(frame)) => match frame.into_data() {
                // A large chunk (a long queue's listing) is written from
                // where it is, not copied behind the frames before it.
                Ok(data) if data.len() >= BIG => {
                    for part in data.chunks(wire::MAX_DATA_BYTES) {
                        wire::put_frame_header(&mut out, Kind::Data, part.len());
                        write(wr, &mut out).await?;
                        wr.write_all(part)
                            .await
                            .map_err(|e| format!("the caller went: {e}"))?;
                    }
                }
                Ok(data) => wire::put_data(&mut out, &data),
                Err(frame) => {
                    if let Ok(t) = frame.into_trailers() {
                        put_trailers(&mut out, wire::trailers(&t));
                        break;
                    }
                }
            },
            Some(Err(status)) => {
                // As tonic's HTTP/2 server: the status in trailers.
                put_trailers(&mut out, status_headers(&status));
                break;
            }
            None => {
                wire::put_frame(&mut out, Kind::End, &[]);
                break;
            }
        }
    }
    write(wr, &mut out).await?;
    // The watch reads nothing once the body is in: the next call's head is
    // still there to read. A call answered before reading its request (a
    // refusal) may still have its end waiting: read what is there now.
    // A request not ended by then leaves the connection in no known
    // state: closed.
    let gone = !body_read.load(Ordering::Relaxed)
        && reading
            .as_mut()
            .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
            .is_ready();
    Ok(body_read.load(Ordering::Relaxed) && !gone)
}

/// gRPC's status as trailers.
fn status_headers(status: &tonic::Status) -> Bytes {
    let mut t = http::HeaderMap::new();
    let _ = status.add_header(&mut t);
    wire::trailers(&t)
}

/// Refusal of an answer whose headers or trailers are larger than a local
/// call carries (the caller would refuse the frame): a status message of
/// more than 32 KiB.
fn too_large(what: &str, len: usize) -> tonic::Status {
    tonic::Status::internal(format!(
        "the answer's {what} take {len} bytes, more than a local call carries ({})",
        wire::MAX_HEAD_BYTES
    ))
}

/// Append the answer's trailers, or trailers saying they were too large.
fn put_trailers(out: &mut Vec<u8>, bytes: Bytes) {
    let bytes = if bytes.len() <= wire::MAX_HEAD_BYTES {
        bytes
    } else {
        status_headers(&too_large("trailers", bytes.len()))
    };
    wire::put_frame(out, Kind::Trailers, &bytes);
}

async fn write(wr: &mut OwnedWriteHalf, out: &mut Vec<u8>) -> Result<(), String> {
    if out.is_empty() {
        return Ok(());
    }
    wr.write_all(out)
        .await
        .map_err(|e| format!("the caller went: {e}"))?;
    out.clear();
    Ok(())
}

/// The request body's frames into `tx` until its end frame: true then;
/// false when the caller went (or sent what has no place in a request).
async fn read_body(
    rd: &mut BufReader<OwnedReadHalf>,
    tx: mpsc::Sender<Result<Frame<Bytes>, BoxError>>,
) -> bool {
    let mut tx = Some(tx);
    loop {
        match wire::read_frame(rd).await {
            Ok(Some((Kind::Data, p))) => {
                // A call that stopped reading its body still gets its end
                // read here; nothing more is kept.
                if let Some(t) = &tx {
                    if t.send(Ok(Frame::data(p))).await.is_err() {
                        tx = None;
                    }
                }
            }
            Ok(Some((Kind::End, _))) => return true,
            other => {
                match other {
                    Ok(Some((k, _))) => tracing::debug!("local call: a {k:?} frame in a request"),
                    Err(e) => tracing::debug!("local call: {e}"),
                    _ => {}
                }
                if let Some(t) = tx.take() {
                    let _ = t
                        .send(Err("local call: the caller went mid-request".into()))
                        .await;
                }
                return false;
            }
        }
    }
}

/// Return when the caller closes the connection (or sends anything
/// before its answer is complete, which it may not), reading nothing.
async fn watch_gone(rd: &BufReader<OwnedReadHalf>) {
    if !rd.buffer().is_empty() {
        return;
    }
    let stream: &UnixStream = rd.get_ref().as_ref();
    loop {
        if stream.readable().await.is_err() {
            return;
        }
        let peeked = stream.try_io(tokio::io::Interest::READABLE, || {
            crate::sys::peek_byte(std::os::fd::AsFd::as_fd(stream))
        });
        match peeked {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            _ => return,
        }
    }
}

/// A call under the caller's `grpc-timeout`, answered as tonic's own
/// timeout does when it passes.
async fn with_deadline<F>(
    deadline: Option<Duration>,
    call: F,
) -> Result<http::Response<Body>, BoxError>
where
    F: Future<Output = Result<http::Response<Body>, BoxError>>,
{
    match deadline {
        None => call.await,
        Some(d) => match tokio::time::timeout(d, call).await {
            Ok(r) => r,
            Err(_) => Ok(tonic::Status::cancelled("Timeout expired").into_http()),
        },
    }
}

/// gRPC's `grpc-timeout` header: at most 8 digits and a unit.
fn grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (n, unit) = v.split_at(v.len() - 1);
    let n: u64 = n.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.checked_mul(3600)?),
        "M" => Duration::from_secs(n.checked_mul(60)?),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers every call with an error whose message is `len` bytes.
    #[derive(Clone)]
    struct Refuses(usize);

    impl tower::Service<http::Request<Body>> for Refuses {
        type Response = http::Response<Body>;
        type Error = BoxError;
        type Future = std::future::Ready<Result<http::Response<Body>, BoxError>>;
        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), BoxError>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn call(&mut self, _: http::Request<Body>) -> Self::Future {
            std::future::ready(Ok(
                tonic::Status::permission_denied("x".repeat(self.0)).into_http()
            ))
        }
    }

    fn peer() -> LocalPeer {
        LocalPeer(crate::auth::Identity {
            uid: 0,
            gid: 0,
            groups: Vec::new(),
            daemon: false,
            host: "h".into(),
        })
    }

    /// One call's frames on `s`, and the answer's frames back.
    async fn one_call(s: &mut UnixStream) -> Vec<(Kind, Bytes)> {
        use tokio::io::AsyncWriteExt;
        let mut out = Vec::new();
        wire::put_frame(
            &mut out,
            Kind::Head,
            &wire::request_head("/a/B", &http::HeaderMap::new()),
        );
        wire::put_frame(&mut out, Kind::End, &[]);
        s.write_all(&out).await.unwrap();
        let mut got = Vec::new();
        loop {
            let (k, p) = wire::read_frame(s).await.unwrap().expect("an answer");
            got.push((k, p));
            if matches!(k, Kind::End | Kind::Trailers) {
                return got;
            }
        }
    }

    #[test]
    fn an_answer_too_large_for_a_frame_says_so_and_the_connection_serves_on() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            for len in [10, 40_000] {
                let (mut client, server) = UnixStream::pair().unwrap();
                tokio::spawn(serve(server, peer(), Refuses(len)));
                for _ in 0..2 {
                    let got = one_call(&mut client).await;
                    let (kind, head) = &got[0];
                    assert_eq!(*kind, Kind::Head);
                    let (status, h) = wire::parse_response_head(head).unwrap();
                    assert_eq!(status, http::StatusCode::OK);
                    let st = tonic::Status::from_header_map(&h).expect("a status in the head");
                    if len == 10 {
                        assert_eq!(st.code(), tonic::Code::PermissionDenied);
                    } else {
                        assert_eq!(st.code(), tonic::Code::Internal);
                        assert!(
                            st.message().contains("more than a local call carries"),
                            "{st:?}"
                        );
                    }
                    assert!(got.iter().all(|(_, p)| p.len() <= wire::MAX_HEAD_BYTES));
                }
            }
        });
    }

    #[test]
    fn grpc_timeouts_read_as_grpc_writes_them() {
        assert_eq!(grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(grpc_timeout("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(grpc_timeout("7u"), Some(Duration::from_micros(7)));
        for bad in ["", "S", "5", "5x", "123456789S", "-1S"] {
            assert_eq!(grpc_timeout(bad), None, "{bad}");
        }
    }
}
