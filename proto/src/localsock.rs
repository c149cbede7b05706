//! The controller's local socket (`drover_conf::ctldsock`): its gRPC
//! services on a Unix socket, for commands run on its host, as local calls
//! ([`crate::localcall`], what the commands send) or over HTTP/2. The caller's
//! identity is the kernel's: uid and gid of the connecting process from
//! `SO_PEERCRED` when it connected, its supplementary groups from
//! `/proc/PID/status` (as the auth socket does it, `crate::authsock`), so
//! such a call carries no credential and costs no auth-socket round trip,
//! no TCP and no TLS. [`crate::verify::AuthLayer`] turns the connection's
//! [`LocalPeer`] into the call's `Identity` when the call carries no
//! credential; one that does is checked as on TCP.
//!
//! A user cannot claim another uid here: the kernel fills `SO_PEERCRED`,
//! and a TCP connection never has a [`LocalPeer`] (the server puts the
//! connection's own info in every request; a client cannot add it).

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::Connected;

use crate::auth::{hostname, peer_groups, Identity};

use crate::localcall::server::CallService;

/// Local connections open at once at most; one more is closed as soon as
/// it is accepted (a warning a minute says so).
pub const MAX_CONNECTIONS: usize = 1024;

/// Who is at the other end of a local connection, as the kernel reported
/// it when the connection was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalPeer(pub Identity);

/// An accepted local connection that speaks HTTP/2, and its peer.
pub struct LocalConn {
    stream: UnixStream,
    /// What was read to tell HTTP/2 from a local call, given back first.
    sniffed: Vec<u8>,
    peer: LocalPeer,
    _slot: OwnedSemaphorePermit,
}

impl Connected for LocalConn {
    type ConnectInfo = LocalPeer;
    fn connect_info(&self) -> LocalPeer {
        self.peer.clone()
    }
}

impl AsyncRead for LocalConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.sniffed.is_empty() {
            let n = self.sniffed.len().min(buf.remaining());
            buf.put_slice(&self.sniffed[..n]);
            self.sniffed.drain(..n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LocalConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Bind the local socket at `path`, open to every local user (who they are
/// comes from the kernel). A stale socket there is replaced; one another
/// controller still serves, or anything else there, is left alone and is an
/// error. A plain listener, so that the controller can bind it before it
/// gives up root (`SlurmUser`).
pub fn bind(path: &Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() && connect(path).is_some() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                "another process serves it (left alone)",
            ))
        }
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "exists and is not a socket (left alone)",
            ))
        }
        Err(_) => {}
    }
    let listener = std::os::unix::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// The peer of an accepted connection, None when the kernel does not say.
fn peer_of(stream: &UnixStream, host: &str) -> Option<LocalPeer> {
    let cred = stream.peer_cred().ok()?;
    let groups = peer_groups(std::os::fd::AsFd::as_fd(stream), cred.pid());
    Some(LocalPeer(Identity {
        uid: cred.uid(),
        gid: cred.gid(),
        groups,
        daemon: false,
        host: host.to_string(),
    }))
}

/// How long a new connection may take to send its first bytes.
const FIRST_BYTES_WITHIN: Duration = Duration::from_secs(10);

/// The connections accepted on `listener`: a local call
/// ([`crate::localcall`]) is served here with `calls`; an HTTP/2
/// connection is handed on, with its peer, for
/// `Server::serve_with_incoming`. Must be called inside the runtime.
pub fn incoming(
    listener: std::os::unix::net::UnixListener,
    calls: impl CallService + Clone + 'static,
) -> std::io::Result<ReceiverStream<Result<LocalConn, std::io::Error>>> {
    let listener = tokio::net::UnixListener::from_std(listener)?;
    let host = hostname();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut warned: Option<std::time::Instant> = None;
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = tx.closed() => return,
            };
            let stream = match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!("local socket accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                if warned.is_none_or(|w| w.elapsed() >= crate::authlog::WINDOW) {
                    tracing::warn!(
                        "local socket: {MAX_CONNECTIONS} connections open, closing a new one"
                    );
                    warned = Some(std::time::Instant::now());
                }
                continue;
            };
            let Some(peer) = peer_of(&stream, &host) else {
                tracing::warn!("local socket: no peer credentials, connection closed");
                continue;
            };
            tokio::spawn(sort(stream, peer, slot, calls.clone(), tx.clone()));
        }
    });
    Ok(ReceiverStream::new(rx))
}

/// Read a new connection's first bytes: a local call is served here, an
/// HTTP/2 connection goes to `http2`.
async fn sort(
    mut stream: UnixStream,
    peer: LocalPeer,
    slot: OwnedSemaphorePermit,
    calls: impl CallService,
    http2: mpsc::Sender<Result<LocalConn, std::io::Error>>,
) {
    use tokio::io::AsyncReadExt;
    let mut first = vec![0u8; crate::localcall::wire::MAGIC.len()];
    match tokio::time::timeout(FIRST_BYTES_WITHIN, stream.read_exact(&mut first)).await {
        Ok(Ok(_)) => {}
        // Closed, or silent: nothing to serve.
        _ => return,
    }
    if first == crate::localcall::wire::MAGIC {
        crate::localcall::server::serve(stream, peer, calls).await;
        drop(slot);
        return;
    }
    let _ = http2
        .send(Ok(LocalConn {
            stream,
            sniffed: first,
            peer,
            _slot: slot,
        }))
        .await;
}

/// A connection to the controller's local socket at `path`, when one
/// answers there (None: no socket, or no controller behind it).
pub fn connect(path: &Path) -> Option<std::os::unix::net::UnixStream> {
    std::os::unix::net::UnixStream::connect(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_replaces_only_a_stale_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run").join("ctld.sock");
        let live = bind(&path).expect("a fresh path binds, its directory made");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o777);
        // Served: left alone.
        let e = bind(&path).expect_err("a live socket is not taken over");
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
        assert!(connect(&path).is_some());
        // Stale (its listener gone): replaced.
        drop(live);
        assert!(connect(&path).is_none());
        let _again = bind(&path).expect("a stale socket is replaced");
        assert!(connect(&path).is_some());
        // Not a socket: left alone.
        let file = dir.path().join("file");
        std::fs::write(&file, "data").unwrap();
        let e = bind(&file).expect_err("a plain file is not removed");
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "data");
    }
}
