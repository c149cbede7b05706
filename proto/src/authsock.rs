//! The local auth socket: a client writes one line `sign METHOD DIGEST`
//! (the gRPC path and the SHA-256 of the request body it is about to send),
//! the daemon answers one line, a credential bound to that request for the
//! peer's kernel-reported identity (`SO_PEERCRED`), or `error: WHY`.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::auth::{hostname, process_groups, Binding, ClusterKey};

/// Longest request line accepted (a method name and a digest fit easily).
const MAX_LINE: u64 = 512;
/// A client that connects must say what it wants within this time.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve the local auth socket until the task is dropped.
pub async fn serve_auth_socket(path: &Path, key: ClusterKey, ttl: i64) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path)?;
    // Every local user must be able to ask for their own credential.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))?;
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
        let key = key.clone();
        let host = host.clone();
        tokio::spawn(async move {
            let (rd, mut wr) = stream.into_split();
            let mut line = String::new();
            let mut rd = BufReader::new(rd).take(MAX_LINE);
            match tokio::time::timeout(READ_TIMEOUT, rd.read_line(&mut line)).await {
                // A liveness probe: connected and went away.
                Ok(Ok(0)) => return,
                Ok(Ok(_)) => {}
                Ok(Err(_)) | Err(_) => return,
            }
            let answer = match Binding::parse_request(&line) {
                Ok(bind) => {
                    let groups = cred.pid().map(process_groups).unwrap_or_default();
                    key.issue_user(cred.uid(), cred.gid(), &groups, &host, ttl, &bind)
                }
                Err(e) => {
                    tracing::warn!("auth socket: uid {}: bad request: {e}", cred.uid());
                    format!("error: {e}")
                }
            };
            let _ = wr.write_all(answer.as_bytes()).await;
            let _ = wr.write_all(b"\n").await;
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

/// Ask the local auth socket for a credential bound to one request.
pub async fn request_token(path: &Path, bind: &Binding) -> Result<String, String> {
    let ask = async {
        let mut s = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|e| unreachable(path, e))?;
        let io = |e: std::io::Error| format!("authentication socket {}: {e}", path.display());
        s.write_all(bind.request_line().as_bytes())
            .await
            .map_err(io)?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.map_err(io)?;
        Ok::<String, String>(out)
    };
    let out = tokio::time::timeout(READ_TIMEOUT, ask)
        .await
        .map_err(|_| format!("authentication socket {} did not answer", path.display()))??;
    let t = out.trim();
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
