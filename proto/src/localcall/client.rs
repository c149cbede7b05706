//! The client side of local calls: a tower service for tonic's generated
//! clients. A call takes a connection of its own: the one the command
//! opened to find the controller, one a finished call left (calls made at
//! once, as `drover bench submit` makes them, each have one; one after
//! another share one), or a new one; at most [`MAX_CALLS`] at once, as
//! HTTP/2 would carry on one connection. A unary call's request goes in
//! one write; its answer is read as the body is polled.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body as _, Frame};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;

use super::wire::{self, Kind};

use crate::BoxError;
type Reader = BufReader<OwnedReadHalf>;

/// Most calls in flight at once (more wait for one to end), as many as an
/// HTTP/2 connection to the controller carries at once; also the most
/// connections kept for calls to come.
const MAX_CALLS: usize = 256;

/// A kept connection is used again only this long after its last call
/// (the server closes one idle for [`super::server::IDLE_WITHIN`]).
const REUSE_WITHIN: Duration = Duration::from_secs(30);

/// Connections whose calls are done, with when each was put back.
type Idle = Arc<Mutex<Vec<(UnixStream, Instant)>>>;

/// Calls to the controller on its local socket.
#[derive(Clone)]
pub struct LocalCalls {
    path: Arc<PathBuf>,
    first: Arc<Mutex<Option<std::os::unix::net::UnixStream>>>,
    idle: Idle,
    in_flight: Arc<Semaphore>,
}

impl LocalCalls {
    /// Calls on the socket at `path`, the first on `first` (a connection
    /// already made there).
    pub fn new(path: PathBuf, first: std::os::unix::net::UnixStream) -> LocalCalls {
        LocalCalls {
            path: Arc::new(path),
            first: Arc::new(Mutex::new(Some(first))),
            idle: Arc::default(),
            in_flight: Arc::new(Semaphore::new(MAX_CALLS)),
        }
    }
}

/// The most recently kept connection still open and young enough.
fn kept(idle: &Idle) -> Option<UnixStream> {
    let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
    while let Some((s, at)) = idle.pop() {
        // Nothing to read, and not closed: the server holds it open.
        let open = matches!(
            crate::sys::peek_byte(std::os::fd::AsFd::as_fd(&s)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        );
        if open && at.elapsed() < REUSE_WITHIN {
            return Some(s);
        }
    }
    None
}

impl tower::Service<http::Request<Body>> for LocalCalls {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let calls = self.clone();
        Box::pin(async move {
            let permit = calls.in_flight.clone().acquire_owned().await?;
            let kept = kept(&calls.idle);
            let first = match kept {
                Some(_) => None,
                None => calls.first.lock().unwrap_or_else(|p| p.into_inner()).take(),
            };
            let (stream, fresh) = match (kept, first) {
                (Some(s), _) => (s, false),
                (None, Some(s)) => {
                    s.set_nonblocking(true)?;
                    (UnixStream::from_std(s)?, true)
                }
                (None, None) => {
                    let path = &calls.path;
                    let s = UnixStream::connect(&**path)
                        .await
                        .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?;
                    (s, true)
                }
            };
            call(stream, fresh, req, calls.idle, permit).await
        })
    }
}

/// Append the body's frames that are ready now (all of a unary call's);
/// true when the body ended (its end frame appended too).
fn take_ready(body: &mut Body, out: &mut Vec<u8>) -> Result<bool, BoxError> {
    while let Some(frame) = super::ready_frame(body) {
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    wire::put_data(out, &data);
                }
            }
            Some(Err(e)) => return Err(e.into()),
            None => {
                wire::put_frame(out, Kind::End, &[]);
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// One call on `stream` (`fresh`: a new connection, which starts with
/// [`wire::MAGIC`]); a unary call's connection goes back to `idle` once
/// its answer has been read whole.
async fn call(
    stream: UnixStream,
    fresh: bool,
    req: http::Request<Body>,
    idle: Idle,
    permit: OwnedSemaphorePermit,
) -> Result<http::Response<Body>, BoxError> {
    let (parts, mut body) = req.into_parts();
    let mut out = Vec::with_capacity(512);
    if fresh {
        out.extend_from_slice(wire::MAGIC);
    }
    let head = wire::request_head(parts.uri.path(), &parts.headers);
    if head.len() > wire::MAX_HEAD_BYTES {
        // The controller would close the connection unanswered.
        return Err(format!(
            "local call: the request's headers take {} bytes, at most {} are accepted",
            head.len(),
            wire::MAX_HEAD_BYTES
        )
        .into());
    }
    wire::put_frame(&mut out, Kind::Head, &head);
    let ended = take_ready(&mut body, &mut out)?;
    let (rd, mut wr) = stream.into_split();
    wr.write_all(&out).await?;
    // The write half stays open until the answer is read: the server takes
    // the connection's end for the caller hanging up.
    let (pump, reuse) = if ended {
        (None, Some((wr, idle)))
    } else {
        (Some(AbortOnDrop(tokio::spawn(pump(body, wr)))), None)
    };
    let mut rd = BufReader::new(rd);
    let (status, headers) = match wire::read_frame(&mut rd).await? {
        Some((Kind::Head, p)) => wire::parse_response_head(&p)?,
        Some((k, _)) => {
            return Err(format!("local call: a {k:?} frame before the answer's head").into())
        }
        None => {
            return Err("local call: the controller closed the connection before answering".into())
        }
    };
    let mut resp = http::Response::new(Body::new(Answer {
        next: Some(Box::pin(next_frame(rd))),
        _pump: pump,
        reuse,
        _permit: permit,
    }));
    *resp.status_mut() = status;
    *resp.headers_mut() = headers;
    Ok(resp)
}

/// A streaming request's body, frame by frame as it comes.
async fn pump(mut body: Body, mut wr: OwnedWriteHalf) {
    let mut out = Vec::new();
    loop {
        let end = match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    wire::put_data(&mut out, &data);
                }
                false
            }
            // The call's own error: the connection goes with it.
            Some(Err(_)) => return,
            None => {
                wire::put_frame(&mut out, Kind::End, &[]);
                true
            }
        };
        if wr.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
        if end {
            wr.forget();
            return;
        }
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

type Next = Pin<Box<dyn Future<Output = (Reader, std::io::Result<Option<(Kind, Bytes)>>)> + Send>>;

async fn next_frame(mut rd: Reader) -> (Reader, std::io::Result<Option<(Kind, Bytes)>>) {
    let r = wire::read_frame(&mut rd).await;
    (rd, r)
}

/// The answer's body: data frames, then trailers (gRPC's status). Dropped
/// before its end, it closes the connection (the server drops the call).
struct Answer {
    next: Option<Next>,
    _pump: Option<AbortOnDrop>,
    /// A unary call's write half, and where its connection goes once the
    /// answer has been read whole.
    reuse: Option<(OwnedWriteHalf, Idle)>,
    /// The call's place among those in flight, given up with the answer.
    _permit: OwnedSemaphorePermit,
}

impl Answer {
    /// The answer read whole: its connection kept for the next call.
    fn done(&mut self, rd: Reader) {
        let Some((wr, idle)) = self.reuse.take() else {
            return;
        };
        if !rd.buffer().is_empty() {
            return;
        }
        if let Ok(s) = rd.into_inner().reunite(wr) {
            let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < MAX_CALLS {
                idle.push((s, Instant::now()));
            }
        }
    }
}

impl http_body::Body for Answer {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let Some(next) = this.next.as_mut() else {
            return Poll::Ready(None);
        };
        let (rd, r) = match next.as_mut().poll(cx) {
            Poll::Ready(v) => v,
            Poll::Pending => return Poll::Pending,
        };
        this.next = None;
        let frame = match r {
            Ok(Some((Kind::Data, p))) => {
                this.next = Some(Box::pin(next_frame(rd)));
                Frame::data(p)
            }
            Ok(Some((Kind::Trailers, p))) => match wire::parse_trailers(&p) {
                Ok(h) => {
                    this.done(rd);
                    Frame::trailers(h)
                }
                Err(e) => return Poll::Ready(Some(Err(format!("local call: {e}").into()))),
            },
            Ok(Some((Kind::End, _))) => {
                this.done(rd);
                return Poll::Ready(None);
            }
            Ok(Some((Kind::Head, _))) => {
                return Poll::Ready(Some(Err("local call: a second head in the answer".into())))
            }
            Ok(None) => {
                return Poll::Ready(Some(Err(
                    "local call: the controller closed the connection mid-answer".into(),
                )))
            }
            Err(e) => return Poll::Ready(Some(Err(format!("local call: {e}").into()))),
        };
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.next.is_none()
    }
}
