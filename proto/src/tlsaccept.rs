//! A daemon's listener with TLS ([`crate::tls`]): each accepted connection
//! is sorted by its first byte (a TLS handshake starts with 0x16, an HTTP/2
//! client with `P`), so one port serves both where both are allowed:
//!
//! * TLS on the port: handshakes are completed (10 s at most) and a client
//!   certificate, if one is shown, must chain to the cluster CA; plaintext
//!   is accepted only from loopback peers under the default `TLSType`
//!   (their bytes never leave the host) and refused from anyone else;
//! * TLS off: plaintext only, a handshake is refused.
//!
//! Every refusal is a warning naming the peer and the reason, rate-limited
//! per peer ([`crate::authlog`]); a connection that sends nothing, or
//! (plaintext) has not sent the whole HTTP/2 preface, is dropped after the
//! same 10 s. None of it holds up the accept loop.

use std::net::IpAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

use crate::tls::{Conn, TlsConf, TlsFiles, TlsMode};

/// How long a new connection has to show its first byte and finish its
/// handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first byte of a TLS record carrying a handshake.
const TLS_HANDSHAKE: u8 = 0x16;

impl Connected for Conn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.tcp().connect_info()
    }
}

/// What a listener does with TLS.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    /// With TLS on: plaintext from loopback peers is accepted too.
    loopback_plaintext: bool,
}

impl ServerTls {
    pub fn is_on(&self) -> bool {
        self.acceptor.is_some()
    }
}

/// Decide (and load the certificates) for daemon `daemon` listening on
/// `listen`; says at startup what it decided, and warns when TLS is off
/// on an address other hosts can reach.
pub fn server_tls(
    daemon: &str,
    conf: &TlsConf,
    files: &TlsFiles,
    listen: IpAddr,
) -> Result<ServerTls, String> {
    let reachable = !crate::tls::is_loopback(listen);
    let on = match conf.mode {
        TlsMode::On => true,
        TlsMode::Auto => reachable,
        TlsMode::Off => {
            if reachable {
                tracing::warn!(
                    "{daemon}: TLS is off (TLSType=tls/none) while listening on {listen}: \
                     job scripts, environments and credentials cross the network in clear"
                );
            } else {
                tracing::info!("{daemon}: TLS off (TLSType=tls/none), listening on loopback");
            }
            false
        }
    };
    if !on {
        if conf.mode == TlsMode::Auto {
            tracing::info!("{daemon}: TLS off: listening on loopback {listen} only");
        }
        return Ok(ServerTls {
            acceptor: None,
            loopback_plaintext: true,
        });
    }
    let config = crate::tls::server_config(files).map_err(|e| {
        format!("{e} (TLS is on because {daemon} listens on {listen}; make the files with `drover ca issue`, or set TLSType=tls/none)")
    })?;
    let loopback_plaintext = conf.mode == TlsMode::Auto;
    tracing::info!(
        "{daemon}: TLS 1.3 on {listen}: certificate {}, key {}, trusting {}{}",
        files.cert.display(),
        files.key.display(),
        files.ca_cert.display(),
        if loopback_plaintext {
            "; plaintext from loopback peers only"
        } else {
            "; TLS required from every peer"
        }
    );
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    crate::tls::set_acceptor(acceptor.clone());
    Ok(ServerTls {
        acceptor: Some(acceptor),
        loopback_plaintext,
    })
}

/// The connections accepted on `listener`, sorted and (where due)
/// decrypted, for `Server::serve_with_incoming`.
pub fn incoming(
    listener: TcpListener,
    tls: ServerTls,
) -> ReceiverStream<Result<Conn, std::io::Error>> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = tx.closed() => return,
            };
            match accepted {
                Ok((tcp, peer)) => {
                    let _ = tcp.set_nodelay(true);
                    let tx = tx.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        if let Some(c) = sort(tcp, peer, &tls).await {
                            let _ = tx.send(Ok(c)).await;
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    ReceiverStream::new(rx)
}

/// What every plaintext gRPC client sends first.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Wait until the client's whole HTTP/2 preface is in (peeked: it stays
/// for the server to read). Bytes that are not the preface end the wait
/// at once (the server then refuses them). Polls with a growing pause:
/// a real client sends the preface in one segment, so only a slow one
/// (slowloris) is polled more than once.
async fn preface_in(tcp: &TcpStream) -> bool {
    let mut buf = [0u8; 24];
    let mut pause = Duration::from_millis(5);
    loop {
        match tcp.peek(&mut buf).await {
            Ok(0) | Err(_) => return false,
            Ok(n) if n >= H2_PREFACE.len() || buf[..n] != H2_PREFACE[..n] => return true,
            Ok(_) => {}
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
}

/// A plaintext connection, once its HTTP/2 preface is complete; one that
/// has not sent it by `deadline` (10 s after accept) is closed, so slow
/// clients cannot hold the daemon's connections and descriptors.
async fn plain(
    tcp: TcpStream,
    peer: std::net::SocketAddr,
    deadline: tokio::time::Instant,
) -> Option<Conn> {
    match tokio::time::timeout_at(deadline, preface_in(&tcp)).await {
        Ok(true) => Some(Conn::Plain(tcp)),
        Ok(false) => None,
        Err(_) => {
            crate::authlog::tls_refused(
                Some(peer),
                "slow",
                "HTTP/2 preface not complete in 10 s (a slowloris client?); closed",
            );
            None
        }
    }
}

async fn sort(tcp: TcpStream, peer: std::net::SocketAddr, tls: &ServerTls) -> Option<Conn> {
    let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut first = [0u8; 1];
    let n = match tokio::time::timeout(HANDSHAKE_TIMEOUT, tcp.peek(&mut first)).await {
        Ok(Ok(n)) => n,
        Ok(Err(_)) => return None,
        Err(_) => {
            crate::authlog::tls_refused(Some(peer), "silent", "sent nothing in 10 s; closed");
            return None;
        }
    };
    if n == 0 {
        return None;
    }
    let hello = first[0] == TLS_HANDSHAKE;
    let Some(acceptor) = &tls.acceptor else {
        if hello {
            crate::authlog::tls_refused(
                Some(peer),
                "tls to plain",
                "the client speaks TLS but TLS is off here (TLSType=tls/none or a loopback-only \
                 listener); set the same TLSType on both sides",
            );
            return None;
        }
        return plain(tcp, peer, deadline).await;
    };
    if !hello {
        if tls.loopback_plaintext && crate::tls::is_loopback(peer.ip()) {
            return plain(tcp, peer, deadline).await;
        }
        crate::authlog::tls_refused(
            Some(peer),
            "plaintext",
            "plaintext client, but this daemon requires TLS (is the client's TLSType=tls/none, \
             or its version without TLS?)",
        );
        return None;
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(s)) => Some(Conn::Tls(Box::new(tokio_rustls::TlsStream::Server(s)))),
        Ok(Err(e)) => {
            let (kind, why) = handshake_refusal(&e);
            crate::authlog::tls_refused(Some(peer), kind, &why);
            None
        }
        Err(_) => {
            crate::authlog::tls_refused(Some(peer), "slow", "TLS handshake not done in 10 s");
            None
        }
    }
}

/// Why a client's handshake failed: (kind, for the rate limit; words).
fn handshake_refusal(e: &std::io::Error) -> (&'static str, String) {
    use rustls::{CertificateError as C, Error as R};
    match e.get_ref().and_then(|x| x.downcast_ref::<R>()) {
        Some(R::InvalidCertificate(c)) => {
            let (kind, what) = match c {
                C::UnknownIssuer | C::BadSignature => {
                    ("foreign certificate", "not signed by this cluster's CA")
                }
                C::Expired | C::ExpiredContext { .. } => ("expired certificate", "expired"),
                C::NotValidYet | C::NotValidYetContext { .. } => {
                    ("early certificate", "not valid yet")
                }
                _ => ("bad certificate", "not acceptable"),
            };
            (
                kind,
                format!("its client certificate was refused: {what} ({c:?})"),
            )
        }
        Some(R::AlertReceived(a)) => (
            "client gave up",
            format!(
                "the client gave up the handshake ({a:?}): it does not trust this host's \
                 certificate (other CA, wrong name or expired; see the client's error)"
            ),
        ),
        Some(r) => ("handshake", format!("TLS handshake failed: {r}")),
        None => ("handshake", format!("TLS handshake failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn pair() -> (TcpStream, TcpStream, std::net::SocketAddr) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (server, peer) = l.accept().await.unwrap();
        (client, server, peer)
    }

    #[tokio::test]
    async fn a_whole_preface_is_served_and_a_trickled_one_dropped() {
        let (mut c, s, peer) = pair().await;
        c.write_all(H2_PREFACE).await.unwrap();
        let soon = tokio::time::Instant::now() + Duration::from_secs(5);
        assert!(plain(s, peer, soon).await.is_some());

        // Slowloris: part of the preface, then nothing.
        let (mut c, s, peer) = pair().await;
        c.write_all(&H2_PREFACE[..3]).await.unwrap();
        let started = tokio::time::Instant::now();
        let soon = started + Duration::from_millis(300);
        assert!(plain(s, peer, soon).await.is_none());
        assert!(started.elapsed() < Duration::from_secs(2));

        // Not HTTP/2 at all: handed on at once (the server refuses it).
        let (mut c, s, peer) = pair().await;
        c.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        let soon = tokio::time::Instant::now() + Duration::from_secs(5);
        assert!(plain(s, peer, soon).await.is_some());

        // A client that closes mid-preface.
        let (mut c, s, peer) = pair().await;
        c.write_all(&H2_PREFACE[..5]).await.unwrap();
        drop(c);
        let soon = tokio::time::Instant::now() + Duration::from_millis(300);
        assert!(plain(s, peer, soon).await.is_none());
    }
}
