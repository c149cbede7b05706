//! The keeper of the local auth socket (`AuthInfo` socket=): if nothing
//! answers on it, this agent serves it.

use std::path::PathBuf;
use std::time::Duration;

use drover_proto::auth::ClusterKey;

use tokio::sync::oneshot;
use tracing::{info, warn};

use crate::every::Every;

/// Keep the local auth socket served: if nothing answers on it, serve it.
/// (`ttl`: how long a credential it signs stays valid.)
pub async fn auth_socket_loop(path: PathBuf, key: ClusterKey, ttl: i64) {
    let mut server: Option<tokio::task::JoinHandle<()>> = None;
    let mut failed_log = Every::new(Duration::from_secs(600));
    loop {
        let answered = tokio::net::UnixStream::connect(&path).await.is_ok();
        if !answered {
            if let Some(h) = server.take() {
                h.abort();
            }
            let key = key.clone();
            let p = path.clone();
            let (tx, rx) = oneshot::channel::<String>();
            server = Some(tokio::spawn(async move {
                if let Err(e) = drover_proto::auth::serve_auth_socket(&p, key, ttl).await {
                    let _ = tx.send(e.to_string());
                }
            }));
            // Give the bind a moment to fail before logging success.
            match tokio::time::timeout(Duration::from_millis(200), rx).await {
                Ok(Ok(e)) => {
                    if failed_log.due() {
                        warn!("cannot serve the auth socket {}: {e}", path.display());
                    }
                    server = None;
                }
                _ => info!("serving the auth socket {}", path.display()),
            }
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}
