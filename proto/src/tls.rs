//! TLS between hosts: TLS 1.3 only (rustls with ring), certificates from the
//! cluster CA that `drover ca` makes. The one place where every daemon's
//! listener ([`crate::tlsaccept`]) and every client's connection
//! ([`connect`], used by [`crate::client::channel`]) gets its TLS.
//!
//! When: `TLSType` unset means TLS on every connection whose other end is
//! not a loopback address (a daemon listening on loopback only serves
//! plaintext; a client whose peer is loopback sends plaintext);
//! `tls/rustls` means TLS everywhere, `tls/none` nowhere.
//!
//! Who: a client verifies the server's certificate against the cluster CA
//! and the server's *host name* (the name the configuration gives the
//! address it dials, e.g. `SlurmctldHost=ctl(10.0.0.1)` -> `ctl`). Daemons
//! also present their own host certificate as clients; a server accepts
//! a client without one (user commands hold no private key: the request's
//! HMAC credential is what proves who they are) but refuses one whose
//! certificate does not chain to the cluster CA.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

pub use drover_conf::tls::{TlsConf, TlsFiles, TlsMode};

/// The crypto provider: ring, already a dependency for the credentials.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificates in PEM file `path` (a bundle: the CA file holds the
/// old and the new CA during a rotation).
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let iter = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read certificate file {}: {e}", path.display()))?;
    let certs = iter
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not a PEM certificate file: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", path.display()));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("cannot read private key {}: {e}", path.display()))
}

fn roots(files: &TlsFiles) -> Result<Arc<RootCertStore>, String> {
    let mut store = RootCertStore::empty();
    for c in read_certs(&files.ca_cert)? {
        store.add(c).map_err(|e| {
            format!(
                "{}: not a usable CA certificate: {e}",
                files.ca_cert.display()
            )
        })?;
    }
    Ok(Arc::new(store))
}

/// A daemon's server side: its host certificate; clients may present a
/// certificate, which must then chain to the cluster CA.
pub fn server_config(files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(files)?, provider())
            .allow_unauthenticated()
            .build()
            .map_err(|e| format!("{}: {e}", files.ca_cert.display()))?;
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(read_certs(&files.cert)?, read_key(&files.key)?)
        .map_err(|e| {
            format!(
                "certificate {} and key {} do not make a usable pair: {e}",
                files.cert.display(),
                files.key.display()
            )
        })?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// A client: trusts the cluster CA; presents the host certificate when
/// `identity` (daemons).
pub fn client_config(files: &TlsFiles, identity: bool) -> Result<Arc<ClientConfig>, String> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots(files)?);
    let mut cfg = if identity {
        builder
            .with_client_auth_cert(read_certs(&files.cert)?, read_key(&files.key)?)
            .map_err(|e| {
                format!(
                    "certificate {} and key {} do not make a usable pair: {e}",
                    files.cert.display(),
                    files.key.display()
                )
            })?
    } else {
        builder.with_no_client_auth()
    };
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(cfg))
}

/// This process's client side: set once at start-up ([`set_client`]).
struct ClientSide {
    mode: TlsMode,
    files: TlsFiles,
    /// Address (as dialled) -> host name the certificate must carry.
    names: HashMap<String, String>,
    identity: bool,
    /// Loaded on the first connection that needs it.
    config: OnceLock<Result<Arc<ClientConfig>, String>>,
}

static CLIENT: std::sync::RwLock<Option<Arc<ClientSide>>> = std::sync::RwLock::new(None);

/// Set how this process connects: `mode` and `files` from its
/// configuration, `names` the (address, host name) pairs it gives
/// (`SlurmctldHost=name(addr)`, `NodeHostname`/`NodeAddr`), `identity`
/// for daemons (present the host certificate). A later call replaces an
/// earlier one for new connections (a configless host connects before it
/// has its configuration).
pub fn set_client(mode: TlsMode, files: TlsFiles, names: Vec<(String, String)>, identity: bool) {
    let side = Arc::new(ClientSide {
        mode,
        files,
        names: names.into_iter().collect(),
        identity,
        config: OnceLock::new(),
    });
    *CLIENT.write().unwrap_or_else(|e| e.into_inner()) = Some(side);
}

/// This host's TLS files under `conf`, for a configuration file at
/// `conf_path` (defaults beside it, in `tls/`, named after this host).
pub fn files_for(conf: &TlsConf, conf_path: &Path) -> TlsFiles {
    let dir = conf_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let full = crate::auth::hostname();
    conf.files(dir, drover_conf::local::short_host(&full))
}

/// [`set_client`] from a drover.conf loaded from `conf_path`.
pub fn set_client_from(cfg: &drover_conf::slurmconf::Config, conf_path: &Path, identity: bool) {
    set_client(
        cfg.tls.mode,
        files_for(&cfg.tls, conf_path),
        cfg.tls_names(),
        identity,
    );
}

fn client_side() -> Arc<ClientSide> {
    if let Some(side) = CLIENT.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return side.clone();
    }
    let mut side = CLIENT.write().unwrap_or_else(|e| e.into_inner());
    side.get_or_insert_with(|| {
        Arc::new(ClientSide {
            mode: TlsMode::Auto,
            files: TlsConf::default().files(Path::new("/etc/drover"), &crate::auth::hostname()),
            names: HashMap::new(),
            identity: false,
            config: OnceLock::new(),
        })
    })
    .clone()
}

/// Does a connection with `peer` at the other end use TLS under `mode`?
pub fn wanted(mode: TlsMode, peer: IpAddr) -> bool {
    match mode {
        TlsMode::On => true,
        TlsMode::Off => false,
        TlsMode::Auto => !is_loopback(peer),
    }
}

/// Loopback, IPv4-mapped IPv6 included.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.is_loopback(),
        IpAddr::V6(a) => a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v| v.is_loopback()),
    }
}

/// A connection, in clear or over TLS (either side).
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

impl Conn {
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) => s,
            Conn::Tls(s) => s.get_ref().0,
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Connect to `host:port` (`host` as dialled: a name or an address,
/// IPv6 in brackets), with TLS when this process's settings want it for
/// the address reached. Errors name the peer and the reason.
pub async fn connect(host: &str, port: u16) -> std::io::Result<Conn> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let tcp = match bare.parse::<IpAddr>() {
        Ok(ip) => TcpStream::connect((ip, port)).await?,
        Err(_) => {
            // Names as this process may look them up (`sys::nss`).
            let name = bare.to_string();
            let addrs =
                tokio::task::spawn_blocking(move || crate::sys::nss::host_addrs(&name, port))
                    .await
                    .map_err(std::io::Error::other)??;
            TcpStream::connect(&addrs[..]).await?
        }
    };
    let _ = tcp.set_nodelay(true);
    secure_as_client(tcp, bare).await
}

/// Does this process use TLS with `peer` (its `TLSType`, see [`wanted`])?
pub fn wanted_with(peer: IpAddr) -> bool {
    wanted(client_side().mode, peer)
}

/// The TLS client side on a connected socket, when [`wanted_with`] its
/// peer: the server's certificate must carry the host name the
/// configuration gives `host` (an address, or a name as dialled), else
/// `host` itself.
pub async fn secure_as_client(tcp: TcpStream, host: &str) -> std::io::Result<Conn> {
    let side = client_side();
    let peer = tcp.peer_addr()?;
    if !wanted(side.mode, peer.ip()) {
        return Ok(Conn::Plain(tcp));
    }
    let bare = host;
    let fail = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("TLS with {host} ({peer}): {why}"),
        )
    };
    let config = side
        .config
        .get_or_init(|| client_config(&side.files, side.identity))
        .clone()
        .map_err(fail)?;
    let name = side
        .names
        .get(bare)
        .cloned()
        .unwrap_or_else(|| bare.to_string());
    let server_name =
        ServerName::try_from(name.clone()).map_err(|_| fail(format!("bad host name '{name}'")))?;
    match tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
    {
        Ok(s) => Ok(Conn::Tls(Box::new(tokio_rustls::TlsStream::Client(s)))),
        Err(e) => {
            let why = explain(&e, &name, &side.files);
            crate::authlog::tls_failed(Some(peer), &why);
            Err(fail(why))
        }
    }
}

/// This daemon's TLS server side, for connections it makes but serves
/// (step I/O: the agent connects to srun, which holds no certificate).
static ACCEPTOR: OnceLock<tokio_rustls::TlsAcceptor> = OnceLock::new();

/// Set by [`crate::tlsaccept::server_tls`] when the daemon has its
/// certificate loaded.
pub(crate) fn set_acceptor(a: tokio_rustls::TlsAcceptor) {
    let _ = ACCEPTOR.set(a);
}

/// The TLS server side on a socket this daemon connected, when
/// [`wanted_with`] its peer.
pub async fn secure_as_server(tcp: TcpStream) -> std::io::Result<Conn> {
    let peer = tcp.peer_addr()?;
    if !wanted_with(peer.ip()) {
        return Ok(Conn::Plain(tcp));
    }
    let fail = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            format!("TLS with {peer}: {why}"),
        )
    };
    let acceptor = ACCEPTOR
        .get()
        .ok_or_else(|| fail("this daemon has no TLS certificate loaded".into()))?;
    match acceptor.accept(tcp).await {
        Ok(s) => Ok(Conn::Tls(Box::new(tokio_rustls::TlsStream::Server(s)))),
        Err(e) => Err(fail(format!("TLS handshake failed: {e}"))),
    }
}

/// A failed handshake in words an admin can act on.
pub fn explain(e: &std::io::Error, name: &str, files: &TlsFiles) -> String {
    use rustls::{CertificateError as C, Error as R};
    let Some(r) = e.get_ref().and_then(|x| x.downcast_ref::<R>()) else {
        return if e.kind() == std::io::ErrorKind::UnexpectedEof {
            "the peer closed the connection during the TLS handshake \
             (is TLS off there, TLSType=tls/none? see its log)"
                .to_string()
        } else {
            format!("TLS handshake failed: {e}")
        };
    };
    match r {
        R::InvalidCertificate(C::UnknownIssuer) | R::InvalidCertificate(C::BadSignature) => {
            format!(
                "certificate not signed by a CA this host trusts ({}): {r}",
                files.ca_cert.display()
            )
        }
        R::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            format!("certificate expired: {r}")
        }
        R::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            format!("certificate not valid yet: {r}")
        }
        R::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => {
            format!("certificate is not for host '{name}': {r}")
        }
        R::AlertReceived(a) => format!("the peer refused the TLS handshake ({a:?}); see its log"),
        _ => format!("TLS handshake failed: {r}"),
    }
}

/// The reason a call failed to connect, when it is a TLS one (from the
/// error chain of a tonic status): commands print it before Slurm's
/// "Unable to contact" line.
pub fn failure_reason(st: &tonic::Status) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(st);
    while let Some(e) = cur {
        let text = e.to_string();
        if text.starts_with("TLS with ") {
            return Some(text);
        }
        cur = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn when_tls_is_used() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        let far: IpAddr = "10.1.0.2".parse().unwrap();
        assert!(!wanted(TlsMode::Auto, lo));
        assert!(!wanted(TlsMode::Auto, mapped));
        assert!(wanted(TlsMode::Auto, far));
        assert!(wanted(TlsMode::On, lo));
        assert!(!wanted(TlsMode::Off, far));
    }
}
