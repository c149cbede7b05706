//! The agent's client of a supervisor's control socket.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use crate::stepd::protocol::Request;

/// Connect to the supervisor of `jobdir` ([`crate::stepd_socket::connect`]).
fn connect(jobdir: &Path) -> std::io::Result<UnixStream> {
    let s = crate::stepd_socket::connect(jobdir)?;
    s.set_nonblocking(true)?;
    UnixStream::from_std(s)
}

/// Send one request and read the one-line reply (`ok`, `error ...`, `running PID`).
pub async fn request(jobdir: &Path, req: &Request) -> std::io::Result<String> {
    let fut = async {
        let mut s = connect(jobdir)?;
        s.write_all(req.to_line().as_bytes()).await?;
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).await?;
        Ok(line.trim_end().to_string())
    };
    tokio::time::timeout(Duration::from_secs(10), fut)
        .await
        .map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::TimedOut, "supervisor did not answer")
        })?
}

/// Connect and send `wait`; the supervisor answers `done ...` when the job has ended.
pub async fn wait_connection(jobdir: &Path) -> std::io::Result<BufReader<UnixStream>> {
    let mut s = connect(jobdir)?;
    s.write_all(Request::Wait.to_line().as_bytes()).await?;
    Ok(BufReader::new(s))
}
