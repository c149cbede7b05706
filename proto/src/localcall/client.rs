//! The client side of local calls: a tower service for tonic's generated
//! clients, each call on a connection of its own (the first on the one
//! the command opened to find the controller). A unary call's request goes
//! in one write; its answer is read as the body is polled.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::{Body as _, Frame};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tonic::body::Body;

use super::wire::{self, Kind};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Reader = BufReader<OwnedReadHalf>;

/// Calls to the controller on its local socket.
#[derive(Clone)]
pub struct LocalCalls {
    path: Arc<PathBuf>,
    first: Arc<Mutex<Option<std::os::unix::net::UnixStream>>>,
}

impl LocalCalls {
    /// Calls on the socket at `path`, the first on `first` (a connection
    /// already made there).
    pub fn new(path: PathBuf, first: std::os::unix::net::UnixStream) -> LocalCalls {
        LocalCalls {
            path: Arc::new(path),
            first: Arc::new(Mutex::new(Some(first))),
        }
    }
}

impl tower::Service<http::Request<Body>> for LocalCalls {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let first = self.first.lock().unwrap_or_else(|p| p.into_inner()).take();
        let path = self.path.clone();
        Box::pin(async move {
            let stream = match first {
                Some(s) => {
                    s.set_nonblocking(true)?;
                    UnixStream::from_std(s)?
                }
                None => UnixStream::connect(&*path)
                    .await
                    .map_err(|e| format!("cannot connect to {}: {e}", path.display()))?,
            };
            call(stream, req).await
        })
    }
}

/// Append the body's frames that are ready now (all of a unary call's);
/// true when the body ended (its end frame appended too).
fn take_ready(body: &mut Body, out: &mut Vec<u8>) -> Result<bool, BoxError> {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match Pin::new(&mut *body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    wire::put_data(out, &data);
                }
            }
            Poll::Ready(Some(Err(e))) => return Err(e.into()),
            Poll::Ready(None) => {
                wire::put_frame(out, Kind::End, &[]);
                return Ok(true);
            }
            Poll::Pending => return Ok(false),
        }
    }
}

async fn call(
    stream: UnixStream,
    req: http::Request<Body>,
) -> Result<http::Response<Body>, BoxError> {
    let (parts, mut body) = req.into_parts();
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(wire::MAGIC);
    let head = wire::request_head(parts.uri.path(), &parts.headers);
    wire::put_frame(&mut out, Kind::Head, &head);
    let ended = take_ready(&mut body, &mut out)?;
    let (rd, mut wr) = stream.into_split();
    wr.write_all(&out).await?;
    // The write half stays open until the answer is read: the server takes
    // the connection's end for the caller hanging up.
    let pump = if ended {
        wr.forget();
        None
    } else {
        Some(AbortOnDrop(tokio::spawn(pump(body, wr))))
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

/// The answer's body: data frames, then trailers (gRPC's status). Dropped,
/// it closes the connection (the server drops the call).
struct Answer {
    next: Option<Next>,
    _pump: Option<AbortOnDrop>,
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
                Ok(h) => Frame::trailers(h),
                Err(e) => return Poll::Ready(Some(Err(format!("local call: {e}").into()))),
            },
            Ok(Some((Kind::End, _))) => return Poll::Ready(None),
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
