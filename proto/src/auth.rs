//! Credentials, munge-style.
//!
//! A client never says who it is. It connects to the local auth socket
//! (`AuthInfo=socket=PATH`, served by the controller and by every node
//! agent); the daemon reads the peer's uid/gid/pid from the kernel
//! (`SO_PEERCRED`), its supplementary groups from `/proc/PID/status`, and
//! hands back a short-lived token signed with the cluster key (HMAC-SHA256).
//! The client puts that token in the `x-drover-auth` metadata of each call;
//! the controller checks signature and expiry. Daemons sign their own
//! tokens with the key (kind `d`), so only holders of the key act as daemons.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// Metadata key carrying the token on every RPC.
pub const METADATA_KEY: &str = "x-drover-auth";

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
    /// Signed by a daemon holding the cluster key (agent, controller, dbd).
    pub daemon: bool,
    pub host: String,
}

/// The cluster key, loaded once.
#[derive(Clone)]
pub struct ClusterKey {
    key: hmac::Key,
}

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)")
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum AuthError {
    Malformed,
    BadSignature,
    Expired,
    /// The credential was made for another gRPC method.
    WrongMethod {
        signed: String,
        called: String,
    },
    /// The credential was made for another request body.
    WrongBody,
    /// `issued` is further from the verifier's clock than `AuthInfo=skew`.
    Skew {
        issued_ms: i64,
        now_ms: i64,
    },
    /// Issued before this daemon started (its replay cache is younger).
    BeforeStart,
    /// The nonce was seen before: a replay.
    Replayed,
    /// The replay cache is full: nothing can be checked, so nothing passes.
    CacheFull,
}

/// Words of [`AuthError::BeforeStart`]'s message; a client that reads them
/// retries once with a fresh credential.
pub const BEFORE_START: &str = "credential issued before this daemon started";

impl AuthError {
    /// The kind of failure, for rate-limiting log lines per kind.
    pub fn kind(&self) -> &'static str {
        match self {
            AuthError::Malformed => "malformed",
            AuthError::BadSignature => "bad signature",
            AuthError::Expired => "expired",
            AuthError::WrongMethod { .. } => "wrong method",
            AuthError::WrongBody => "wrong body",
            AuthError::Skew { .. } => "skew",
            AuthError::BeforeStart => "before start",
            AuthError::Replayed => "replayed",
            AuthError::CacheFull => "cache full",
        }
    }
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Malformed => f.write_str("malformed credential"),
            AuthError::BadSignature => f.write_str("invalid credential (wrong cluster key?)"),
            AuthError::Expired => f.write_str("credential expired (clock skew?)"),
            AuthError::WrongMethod { signed, called } => {
                write!(f, "credential made for {signed} used for {called}")
            }
            AuthError::WrongBody => f.write_str("credential made for another request"),
            AuthError::Skew { issued_ms, now_ms } => write!(
                f,
                "credential issued {:.1} s from this host's clock, more than AuthInfo=skew allows",
                (issued_ms - now_ms) as f64 / 1000.0
            ),
            AuthError::BeforeStart => f.write_str(BEFORE_START),
            AuthError::Replayed => f.write_str("credential replayed (already used)"),
            AuthError::CacheFull => {
                f.write_str("replay cache full: cannot check credentials, try again later")
            }
        }
    }
}

impl std::error::Error for AuthError {}

pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Milliseconds since the epoch (a credential's `issued`).
pub fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The request a credential is bound to: the gRPC path and the SHA-256 of
/// the request body's bytes (hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub method: String,
    pub digest: String,
}

impl Binding {
    pub fn new(method: &str, body: &[u8]) -> Binding {
        Binding {
            method: method.to_string(),
            digest: hex(ring::digest::digest(&ring::digest::SHA256, body).as_ref()),
        }
    }

    /// A call sent without a credential: its method only, no digest.
    pub fn method_only(method: &str) -> Binding {
        Binding {
            method: method.to_string(),
            digest: String::new(),
        }
    }

    /// Parse the auth socket's request line `sign METHOD DIGEST`.
    pub fn parse_request(line: &str) -> Result<Binding, String> {
        let mut w = line.split_ascii_whitespace();
        let (Some("sign"), Some(method), Some(digest), None) =
            (w.next(), w.next(), w.next(), w.next())
        else {
            return Err("expected 'sign METHOD DIGEST'".into());
        };
        let method_ok = method.len() <= 200
            && method.starts_with('/')
            && method[1..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/'));
        if !method_ok {
            return Err(format!("bad method '{}'", crate::text::printable(method)));
        }
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("bad digest (want 64 hex characters)".into());
        }
        Ok(Binding {
            method: method.to_string(),
            digest: digest.to_ascii_lowercase(),
        })
    }

    /// The auth socket's request line for this binding.
    pub fn request_line(&self) -> String {
        format!("sign {} {}\n", self.method, self.digest)
    }
}

/// A verified credential: who, and what the replay cache must remember.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub identity: Identity,
    pub nonce: u128,
    pub issued_ms: i64,
    /// Until when the credential could be accepted (the cache keeps its
    /// nonce that long): the earlier of its expiry and issued + skew.
    pub usable_until_ms: i64,
}

/// The streaming calls (sbcast's upload, sattach's two-way stream): their
/// body is not known before the call starts, so their credential binds the
/// method and an empty body; it is still used once only (replay cache).
pub const STREAMING_METHODS: &[&str] = &[
    "/drover.NodeAgent/FileBcast",
    "/drover.NodeAgent/AttachStep",
];

/// Is `method` one of [`STREAMING_METHODS`]?
pub fn is_streaming(method: &str) -> bool {
    STREAMING_METHODS.contains(&method)
}

/// Who a credential claims to be (unchecked: for log lines about refusals).
pub fn claimed(token: &str) -> String {
    let p: Vec<&str> = token.split(':').collect();
    match (p.get(2), p.get(8)) {
        (Some(uid), Some(host)) => format!(
            "uid {} host {}",
            crate::text::printable(uid),
            crate::text::printable(host)
        ),
        _ => "unreadable credential".to_string(),
    }
}

/// Lowercase hex digits of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `n` bytes from the system's random source.
pub fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut raw = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut raw)
        .map_err(|_| "no randomness available".to_string())?;
    Ok(raw)
}

impl ClusterKey {
    pub fn from_bytes(bytes: &[u8]) -> ClusterKey {
        ClusterKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, bytes),
        }
    }

    /// Read the key file; refuses an empty file or one others can read.
    pub fn load(path: &Path) -> Result<ClusterKey, String> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path)
            .map_err(|e| format!("cannot read cluster key {}: {e}", path.display()))?;
        if meta.mode() & 0o077 != 0 {
            return Err(format!(
                "cluster key {} is readable by group or others (mode {:o}): chmod 600 it",
                path.display(),
                meta.mode() & 0o777
            ));
        }
        let data = std::fs::read(path)
            .map_err(|e| format!("cannot read cluster key {}: {e}", path.display()))?;
        let trimmed = data.trim_ascii();
        if trimmed.len() < 16 {
            return Err(format!(
                "cluster key {} is too short (need at least 16 bytes)",
                path.display()
            ));
        }
        Ok(ClusterKey::from_bytes(trimmed))
    }

    /// Write a fresh random key (64 hex characters, mode 0600). Fails if the file exists.
    pub fn generate(path: &Path) -> Result<(), String> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let hex = hex(&random_bytes(32)?);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        f.write_all(hex.as_bytes())
            .and_then(|_| f.write_all(b"\n"))
            .and_then(|_| f.sync_all())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }

    fn sign(&self, body: &str) -> String {
        hex(hmac::sign(&self.key, body.as_bytes()).as_ref())
    }

    /// A user's credential for one request, valid `ttl` seconds.
    pub fn issue_user(
        &self,
        uid: u32,
        gid: u32,
        groups: &[u32],
        host: &str,
        ttl: i64,
        bind: &Binding,
    ) -> String {
        self.issue('u', uid, gid, groups, host, ttl, bind, now_millis())
    }

    /// A daemon's own credential for one request (uid/gid of the process).
    pub fn issue_daemon(&self, host: &str, bind: &Binding) -> String {
        let (uid, gid) = (crate::sys::getuid(), crate::sys::getgid());
        self.issue('d', uid, gid, &[], host, 300, bind, now_millis())
    }

    #[allow(clippy::too_many_arguments)]
    fn issue(
        &self,
        kind: char,
        uid: u32,
        gid: u32,
        groups: &[u32],
        host: &str,
        ttl: i64,
        bind: &Binding,
        issued_ms: i64,
    ) -> String {
        let mut nonce = [0u8; 16];
        let _ = SystemRandom::new().fill(&mut nonce);
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let host: String = host
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
            .collect();
        let expires = issued_ms / 1000 + ttl.max(1);
        let body = format!(
            "v2:{kind}:{uid}:{gid}:{}:{issued_ms}:{expires}:{}:{host}:{}:{}",
            groups.join(","),
            hex(&nonce),
            bind.method,
            bind.digest
        );
        let sig = self.sign(&body);
        format!("{body}:{sig}")
    }

    /// Check a credential against the request it came with, at `now_ms`,
    /// tolerating `skew_ms` between the issuer's clock and ours. The replay
    /// cache is the caller's ([`crate::replay::ReplayCache`]).
    pub fn verify(
        &self,
        token: &str,
        bind: &Binding,
        now_ms: i64,
        skew_ms: i64,
    ) -> Result<Verified, AuthError> {
        let (body, sig) = token.rsplit_once(':').ok_or(AuthError::Malformed)?;
        let sig_bytes = decode_hex(sig).ok_or(AuthError::Malformed)?;
        hmac::verify(&self.key, body.as_bytes(), &sig_bytes)
            .map_err(|_| AuthError::BadSignature)?;
        let parts: Vec<&str> = body.split(':').collect();
        if parts.len() != 11 || parts[0] != "v2" {
            return Err(AuthError::Malformed);
        }
        let daemon = match parts[1] {
            "u" => false,
            "d" => true,
            _ => return Err(AuthError::Malformed),
        };
        let num = |s: &str| s.parse::<i64>().map_err(|_| AuthError::Malformed);
        let uid = parts[2].parse().map_err(|_| AuthError::Malformed)?;
        let gid = parts[3].parse().map_err(|_| AuthError::Malformed)?;
        let groups = if parts[4].is_empty() {
            Vec::new()
        } else {
            parts[4]
                .split(',')
                .map(|g| g.parse().map_err(|_| AuthError::Malformed))
                .collect::<Result<Vec<u32>, _>>()?
        };
        let issued_ms = num(parts[5])?;
        let expires = num(parts[6])?;
        let nonce = decode_hex(parts[7])
            .and_then(|b| <[u8; 16]>::try_from(b).ok())
            .map(u128::from_be_bytes)
            .ok_or(AuthError::Malformed)?;
        if parts[9] != bind.method {
            return Err(AuthError::WrongMethod {
                signed: parts[9].to_string(),
                called: bind.method.clone(),
            });
        }
        if parts[10] != bind.digest {
            return Err(AuthError::WrongBody);
        }
        if expires.saturating_mul(1000) < now_ms {
            return Err(AuthError::Expired);
        }
        if (issued_ms - now_ms).abs() > skew_ms {
            return Err(AuthError::Skew { issued_ms, now_ms });
        }
        Ok(Verified {
            identity: Identity {
                uid,
                gid,
                groups,
                daemon,
                host: parts[8].to_string(),
            },
            nonce,
            issued_ms,
            usable_until_ms: expires
                .saturating_mul(1000)
                .min(issued_ms.saturating_add(skew_ms)),
        })
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Supplementary groups of the peer of an accepted Unix socket: as the
/// kernel recorded them when it connected, else (a kernel older than 4.13)
/// as its process has them now.
pub fn peer_groups(sock: std::os::fd::BorrowedFd<'_>, pid: Option<i32>) -> Vec<u32> {
    crate::sys::peer_groups(sock)
        .or_else(|| pid.map(process_groups))
        .unwrap_or_default()
}

/// Supplementary groups of a process, as the kernel reports them.
fn process_groups(pid: i32) -> Vec<u32> {
    use std::io::Read;
    // Room for the whole file at once: /proc reports a size of 0, so a
    // plain read_to_string reads it in growing steps (nine reads here).
    let mut status = String::with_capacity(4096);
    let read = std::fs::File::open(format!("/proc/{pid}/status"))
        .and_then(|mut f| f.read_to_string(&mut status));
    if read.is_err() {
        return Vec::new();
    }
    status
        .lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// This host's short name.
pub fn hostname() -> String {
    crate::sys::gethostname().unwrap_or_else(|| "localhost".into())
}

pub use crate::authsock::{probe_socket, request_token, serve_auth_socket};

#[cfg(test)]
mod tests {
    use super::*;

    const SKEW: i64 = 60_000;

    fn key() -> ClusterKey {
        ClusterKey::from_bytes(b"0123456789abcdef0123456789abcdef")
    }

    fn bind() -> Binding {
        Binding::new("/drover.Controller/SubmitJob", b"\0\0\0\0\x02ab")
    }

    #[test]
    fn round_trip_and_tamper() {
        let k = key();
        let t = k.issue_user(1000, 100, &[27, 44], "node1", 60, &bind());
        let v = k.verify(&t, &bind(), now_millis(), SKEW).unwrap();
        assert_eq!(v.identity.uid, 1000);
        assert_eq!(v.identity.gid, 100);
        assert_eq!(v.identity.groups, vec![27, 44]);
        assert_eq!(v.identity.host, "node1");
        assert!(!v.identity.daemon);
        assert!(v.usable_until_ms <= v.issued_ms + SKEW);
        let forged = t.replacen(":1000:", ":0:", 1);
        assert_eq!(
            k.verify(&forged, &bind(), now_millis(), SKEW),
            Err(AuthError::BadSignature)
        );
        let other = ClusterKey::from_bytes(b"another key of sixteen+ bytes");
        assert!(other.verify(&t, &bind(), now_millis(), SKEW).is_err());
        for bad in ["garbage", "", "a:zz", "v1:u:1:1::9:00:h:00"] {
            assert!(k.verify(bad, &bind(), now_millis(), SKEW).is_err());
        }
        let d = k.issue_daemon("h", &bind());
        assert!(
            k.verify(&d, &bind(), now_millis(), SKEW)
                .unwrap()
                .identity
                .daemon
        );
    }

    #[test]
    fn bound_to_method_and_body() {
        let k = key();
        let t = k.issue_user(1000, 100, &[], "h", 60, &bind());
        let other_method = Binding::new("/drover.Controller/CancelJob", b"\0\0\0\0\x02ab");
        assert_eq!(
            k.verify(&t, &other_method, now_millis(), SKEW),
            Err(AuthError::WrongMethod {
                signed: "/drover.Controller/SubmitJob".into(),
                called: "/drover.Controller/CancelJob".into()
            })
        );
        let other_body = Binding::new("/drover.Controller/SubmitJob", b"\0\0\0\0\x02ac");
        assert_eq!(
            k.verify(&t, &other_body, now_millis(), SKEW),
            Err(AuthError::WrongBody)
        );
        // Two credentials for the same request differ (fresh nonce).
        let t2 = k.issue_user(1000, 100, &[], "h", 60, &bind());
        let n1 = k.verify(&t, &bind(), now_millis(), SKEW).unwrap().nonce;
        let n2 = k.verify(&t2, &bind(), now_millis(), SKEW).unwrap().nonce;
        assert_ne!(n1, n2);
    }

    #[test]
    fn clock_skew_and_expiry() {
        let k = key();
        let issued = 1_000_000_000_000;
        let t = k.issue('u', 1, 1, &[], "h", 300, &bind(), issued);
        assert!(k.verify(&t, &bind(), issued + SKEW, SKEW).is_ok());
        assert!(k.verify(&t, &bind(), issued - SKEW, SKEW).is_ok());
        assert!(matches!(
            k.verify(&t, &bind(), issued + SKEW + 1, SKEW),
            Err(AuthError::Skew { .. })
        ));
        assert!(matches!(
            k.verify(&t, &bind(), issued - SKEW - 1, SKEW),
            Err(AuthError::Skew { .. })
        ));
        let short = k.issue('u', 1, 1, &[], "h", 1, &bind(), issued);
        assert_eq!(
            k.verify(&short, &bind(), issued + 1_001, SKEW),
            Err(AuthError::Expired)
        );
        let v = k.verify(&short, &bind(), issued, SKEW).unwrap();
        assert_eq!(v.usable_until_ms, issued + 1_000);
    }

    #[test]
    fn socket_request_lines() {
        let b = bind();
        assert_eq!(Binding::parse_request(&b.request_line()), Ok(b.clone()));
        for bad in [
            "",
            "sign",
            "sign /a/B",
            "sign a/B 00",
            &format!("sign /a:b/C {}", b.digest),
            &format!("sign /a/B {}x", b.digest),
            &format!("sign /a/B {} extra", b.digest),
            &format!("token /a/B {}", b.digest),
        ] {
            assert!(Binding::parse_request(bad).is_err(), "{bad}");
        }
    }

    /// The groups a socket's peer connected with are those its process has
    /// (here, this process at both ends).
    #[test]
    fn a_peers_groups_come_with_its_connection() {
        use std::os::fd::AsFd;
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut own = process_groups(std::process::id() as i32);
        own.sort_unstable();
        let mut got = peer_groups(a.as_fd(), None);
        got.sort_unstable();
        assert_eq!(got, own);
        #[cfg(target_arch = "x86_64")]
        assert!(crate::sys::peer_groups(a.as_fd()).is_some());
    }

    #[test]
    fn claimed_reads_unchecked_fields() {
        let t = key().issue_user(1234, 1, &[], "node7", 60, &bind());
        assert_eq!(claimed(&t), "uid 1234 host node7");
        assert_eq!(claimed("junk"), "unreadable credential");
    }
}
