//! systemd's readiness notification (`Type=notify` units): one datagram
//! `READY=1` to `$NOTIFY_SOCKET` once a daemon listens. Without the
//! variable (not started by systemd) nothing happens.

use std::os::unix::net::UnixDatagram;

/// Tell systemd the daemon is ready; `status` shows in `systemctl status`.
pub fn ready(status: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let msg = format!("READY=1\nSTATUS={status}\nMAINPID={}\n", std::process::id());
    if let Err(e) = send(&path, msg.as_bytes()) {
        tracing::warn!("cannot notify systemd at {}: {e}", path.to_string_lossy());
    }
}

fn send(path: &std::ffi::OsStr, msg: &[u8]) -> std::io::Result<usize> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::ffi::OsStrExt;
    let sock = UnixDatagram::unbound()?;
    match path.as_bytes().strip_prefix(b"@") {
        Some(name) => {
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(msg, &addr)
        }
        None => sock.send_to(msg, path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_ready_to_a_path_socket() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("notify");
        let rx = UnixDatagram::bind(&p).unwrap();
        send(p.as_os_str(), b"READY=1\n").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\n");
    }
}
