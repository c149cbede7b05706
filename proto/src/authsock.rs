//! The local auth socket: a client writes a line `sign METHOD DIGEST` (the
//! gRPC path and the SHA-256 of the request body it is about to send), the
//! daemon answers one line, a credential bound to that request for the
//! peer's kernel-reported identity (`SO_PEERCRED`), or `error: WHY` (and
//! closes). A client may ask again on the same connection.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::auth::{hostname, peer_groups, Binding, ClusterKey};

/// Longest request line accepted (a method name and a digest fit easily).
const MAX_LINE: u64 = 512;
/// A client that connects must say what it wants within this time.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve the local auth socket until the task is dropped.
pub async fn serve_auth_socket(path: &Path, key: ClusterKey, ttl: i64) -> std::io::Result<()> {
    serve_auth_listener(bind_auth_socket(path)?, key, ttl).await
}

/// Bind the auth socket at `path` (replacing a stale one), open to every
/// local user. A plain listener, so that a daemon can bind it before it
/// gives up root (`SlurmUser`) and serve it afterwards.
pub fn bind_auth_socket(path: &Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(path);
    let listener = std::os::unix::net::UnixListener::bind(path)?;
    // Every local user must be able to ask for their own credential.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Serve a socket [`bind_auth_socket`] made until the task is dropped.
pub async fn serve_auth_listener(
    listener: std::os::unix::net::UnixListener,
    key: ClusterKey,
    ttl: i64,
) -> std::io::Result<()> {
    let listener = tokio::net::UnixListener::from_std(listener)?;
    let host = hostname();
    loop {
        let (stream, _) = match listener.accept().await {
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
        let groups = peer_groups(std::os::fd::AsFd::as_fd(&stream), cred.pid());
        let key = key.clone();
        let host = host.clone();
        tokio::spawn(async move {
            let (rd, mut wr) = stream.into_split();
            let mut rd = BufReader::new(rd);
            // One answer per request line, until the client goes away or
            // stays silent for READ_TIMEOUT.
            loop {
                let mut line = String::new();
                let mut limited = (&mut rd).take(MAX_LINE);
                match tokio::time::timeout(READ_TIMEOUT, limited.read_line(&mut line)).await {
                    Ok(Ok(n)) if n > 0 => {}
                    // EOF (or a liveness probe), an error, or idle.
                    _ => return,
                }
                let answer = match Binding::parse_request(&line) {
                    Ok(_) if !line.ends_with('\n') => Err("request line too long".to_string()),
                    Ok(bind) => {
                        Ok(key.issue_user(cred.uid(), cred.gid(), &groups, &host, ttl, &bind))
                    }
                    Err(e) => Err(e),
                };
                let text = match &answer {
                    Ok(t) => format!("{t}\n"),
                    Err(e) => {
                        tracing::warn!("auth socket: uid {}: bad request: {e}", cred.uid());
                        format!("error: {e}\n")
                    }
                };
                if wr.write_all(text.as_bytes()).await.is_err() || answer.is_err() {
                    return;
                }
            }
        });
    }
}

fn unreachable(path: &Path, e: std::io::Error) -> String {
    format!(
        "cannot reach the authentication socket {}: {e} (is droverctld or droverd running on this host?)",
        path.display()
    )
}

/// Check that the local auth socket answers (commands say so before their
/// first call rather than in the middle of it).
pub fn probe_socket(path: &Path) -> Result<(), String> {
    std::os::unix::net::UnixStream::connect(path)
        .map(drop)
        .map_err(|e| unreachable(path, e))
}

/// Connections to the local auth socket, kept for the next requests (one
/// round trip per credential, no connection set-up; concurrent calls use
/// connections of their own), made again when the daemon closed them.
pub struct AuthConn {
    path: PathBuf,
    idle: std::sync::Mutex<Vec<BufReader<UnixStream>>>,
}

/// Idle connections kept at most.
const KEEP: usize = 8;

impl AuthConn {
    pub fn new(path: PathBuf) -> AuthConn {
        AuthConn {
            path,
            idle: std::sync::Mutex::new(Vec::new()),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn take_idle(&self) -> Option<BufReader<UnixStream>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn keep(&self, conn: BufReader<UnixStream>) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < KEEP {
            idle.push(conn);
        }
    }

    /// A credential bound to `bind`.
    pub async fn request(&self, bind: &Binding) -> Result<String, String> {
        let path = &self.path;
        // A kept connection may have been closed by the daemon (idle, or
        // restarted): then once more on a fresh one.
        let mut kept = self.take_idle();
        loop {
            let fresh = kept.is_none();
            let conn = match kept.take() {
                Some(c) => c,
                None => BufReader::new(
                    UnixStream::connect(path)
                        .await
                        .map_err(|e| unreachable(path, e))?,
                ),
            };
            let err = match tokio::time::timeout(READ_TIMEOUT, ask(conn, bind)).await {
                Ok(Ok((line, conn))) => {
                    let a = answer(path, &line);
                    if a.is_ok() {
                        self.keep(conn);
                    }
                    return a;
                }
                Ok(Err(e)) => format!("authentication socket {}: {e}", path.display()),
                Err(_) => format!("authentication socket {} did not answer", path.display()),
            };
            if fresh {
                return Err(err);
            }
        }
    }
}

async fn ask(
    mut conn: BufReader<UnixStream>,
    bind: &Binding,
) -> std::io::Result<(String, BufReader<UnixStream>)> {
    conn.get_mut()
        .write_all(bind.request_line().as_bytes())
        .await?;
    let mut line = String::new();
    if conn.read_line(&mut line).await? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed without an answer",
        ));
    }
    Ok((line, conn))
}

fn answer(path: &Path, line: &str) -> Result<String, String> {
    let t = line.trim();
    if let Some(e) = t.strip_prefix("error:") {
        return Err(format!(
            "authentication socket {} refused: {}",
            path.display(),
            e.trim()
        ));
    }
    if t.is_empty() {
        return Err(format!(
            "authentication socket {} gave no credential",
            path.display()
        ));
    }
    Ok(t.to_string())
}

/// Ask the local auth socket for one credential (a connection of its own).
pub async fn request_token(path: &Path, bind: &Binding) -> Result<String, String> {
    AuthConn::new(path.to_path_buf()).request(bind).await
}
