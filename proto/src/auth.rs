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

#[derive(Debug)]
pub enum AuthError {
    Malformed,
    BadSignature,
    Expired,
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::Malformed => f.write_str("malformed credential"),
            AuthError::BadSignature => f.write_str("invalid credential (wrong cluster key?)"),
            AuthError::Expired => f.write_str("credential expired (clock skew?)"),
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
        let mut raw = [0u8; 32];
        SystemRandom::new()
            .fill(&mut raw)
            .map_err(|_| "no randomness available".to_string())?;
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
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
        let tag = hmac::sign(&self.key, body.as_bytes());
        tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Issue a token for a user identity, valid `ttl` seconds.
    pub fn issue_user(&self, uid: u32, gid: u32, groups: &[u32], host: &str, ttl: i64) -> String {
        self.issue('u', uid, gid, groups, host, ttl)
    }

    /// A daemon's own token (uid/gid of the daemon's process).
    pub fn issue_daemon(&self, host: &str) -> String {
        // SAFETY: getuid/getgid never fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        self.issue('d', uid, gid, &[], host, 300)
    }

    fn issue(
        &self,
        kind: char,
        uid: u32,
        gid: u32,
        groups: &[u32],
        host: &str,
        ttl: i64,
    ) -> String {
        let mut nonce = [0u8; 8];
        let _ = SystemRandom::new().fill(&mut nonce);
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        let host: String = host
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
            .collect();
        let expires = now_secs() + ttl.max(1);
        let body = format!(
            "v1:{kind}:{uid}:{gid}:{}:{expires}:{nonce}:{host}",
            groups.join(",")
        );
        let sig = self.sign(&body);
        format!("{body}:{sig}")
    }

    /// Check a token; returns who it speaks for.
    pub fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        let (body, sig) = token.rsplit_once(':').ok_or(AuthError::Malformed)?;
        let sig_bytes = decode_hex(sig).ok_or(AuthError::Malformed)?;
        hmac::verify(&self.key, body.as_bytes(), &sig_bytes)
            .map_err(|_| AuthError::BadSignature)?;
        let parts: Vec<&str> = body.split(':').collect();
        if parts.len() != 8 || parts[0] != "v1" {
            return Err(AuthError::Malformed);
        }
        let daemon = match parts[1] {
            "u" => false,
            "d" => true,
            _ => return Err(AuthError::Malformed),
        };
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
        let expires: i64 = parts[5].parse().map_err(|_| AuthError::Malformed)?;
        if expires < now_secs() {
            return Err(AuthError::Expired);
        }
        Ok(Identity {
            uid,
            gid,
            groups,
            daemon,
            host: parts[7].to_string(),
        })
    }
}

/// The host a token names (unverified: for log lines about refused
/// tokens), reduced to hostname characters and 64 of them at most.
pub fn claimed_host(token: &str) -> String {
    token
        .split(':')
        .nth(7)
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(64)
        .collect()
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

/// Supplementary groups of a process, as the kernel reports them.
pub fn process_groups(pid: i32) -> Vec<u32> {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
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
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Serve the local auth socket until the task is dropped: each connection
/// gets one token line for the peer's kernel-reported identity.
pub async fn serve_auth_socket(path: &Path, key: ClusterKey, ttl: i64) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    use tokio::io::AsyncWriteExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path)?;
    // Every local user must be able to ask for their own token.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))?;
    let host = hostname();
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("auth socket accept: {e}");
                continue;
            }
        };
        let cred = match stream.peer_cred() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("auth socket: no peer credentials: {e}");
                continue;
            }
        };
        let groups = cred.pid().map(process_groups).unwrap_or_default();
        let token = key.issue_user(cred.uid(), cred.gid(), &groups, &host, ttl);
        tokio::spawn(async move {
            let _ = stream.write_all(token.as_bytes()).await;
            let _ = stream.write_all(b"\n").await;
        });
    }
}

/// Ask the local auth socket for a token (blocking; clients call it once).
pub fn fetch_token(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut s = std::os::unix::net::UnixStream::connect(path).map_err(|e| {
        format!(
            "cannot reach the authentication socket {}: {e} (is droverctld or droverd running on this host?)",
            path.display()
        )
    })?;
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut out = String::new();
    s.read_to_string(&mut out)
        .map_err(|e| format!("authentication socket {}: {e}", path.display()))?;
    let t = out.trim().to_string();
    if t.is_empty() {
        return Err(format!(
            "authentication socket {} gave no credential",
            path.display()
        ));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_tamper() {
        let k = ClusterKey::from_bytes(b"0123456789abcdef0123456789abcdef");
        let t = k.issue_user(1000, 100, &[27, 44], "node1", 60);
        let id = k.verify(&t).unwrap();
        assert_eq!(id.uid, 1000);
        assert_eq!(id.gid, 100);
        assert_eq!(id.groups, vec![27, 44]);
        assert!(!id.daemon);
        let forged = t.replacen(":1000:", ":0:", 1);
        assert!(matches!(k.verify(&forged), Err(AuthError::BadSignature)));
        let other = ClusterKey::from_bytes(b"another key of sixteen+ bytes");
        assert!(other.verify(&t).is_err());
        assert!(k.verify("garbage").is_err());
        assert!(k.verify("").is_err());
        assert!(k.verify("a:zz").is_err());
        let d = k.issue_daemon("h");
        assert!(k.verify(&d).unwrap().daemon);
    }

    #[test]
    fn expired_is_refused() {
        let k = ClusterKey::from_bytes(b"0123456789abcdef0123456789abcdef");
        let body = format!("v1:u:1:1::{}:00:h", now_secs() - 5);
        let t = format!("{body}:{}", k.sign(&body));
        assert!(matches!(k.verify(&t), Err(AuthError::Expired)));
        assert_eq!(claimed_host(&t), "h");
        assert_eq!(claimed_host(&k.issue_daemon("n-1.x")), "n-1.x");
        assert_eq!(claimed_host("v1:u:0:0::1:ab:h$o\nst:sig"), "host");
        assert_eq!(claimed_host("garbage"), "");
    }
}
