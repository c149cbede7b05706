//! The supervisor's control socket (see `stepd::protocol`): a Unix socket
//! in the abstract namespace, whose name the supervisor writes into
//! `JOBDIR/stepd.addr`. Not a socket file in the job directory: making and
//! unlinking one inode per job cost the spool's file system two metadata
//! updates per job, and on an ext4 without a journal (this project's VM)
//! every later file creation then scans past the recently deleted inodes
//! (docs/benchmarks.md). The socket goes when the supervisor exits, even
//! by SIGKILL.
//!
//! An abstract name has no permissions, so both ends check each other
//! (`SO_PEERCRED`): the supervisor serves only its own user (root, the
//! agent's), and the agent talks only to a listener of its own user. The
//! name is random (128 bits), so no one can take it before the supervisor
//! binds it; a name seen in /proc/net/unix gets a caller nowhere.

use std::io;
use std::os::fd::AsRawFd;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::path::Path;

use drover_proto::auth::random_bytes;

/// The job directory's file naming the supervisor's socket.
pub const ADDR_FILE: &str = "stepd.addr";

const PREFIX: &str = "drover-stepd-";

/// Is the other end of `s` a process of this process's own user?
pub fn trusted(s: &UnixStream) -> bool {
    crate::sys::peer_uid(s.as_raw_fd()) == Some(drover_proto::sys::geteuid())
}

/// Bind a new socket under a fresh random name and record the name in
/// `jobdir` (written over, not replaced: no new inode per job).
pub fn listen(jobdir: &Path) -> Result<UnixListener, String> {
    let name = format!("{PREFIX}{}", drover_proto::auth::hex(&random_bytes(16)?));
    let addr = SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|e| format!("socket name {name}: {e}"))?;
    let listener =
        UnixListener::bind_addr(&addr).map_err(|e| format!("cannot listen on @{name}: {e}"))?;
    let path = jobdir.join(ADDR_FILE);
    drover_proto::private::rewrite(&path, name.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(listener)
}

/// Connect to the supervisor of `jobdir`. NotFound: no name recorded;
/// ConnectionRefused: nobody listens (the supervisor is gone);
/// PermissionDenied: the listener is not of this user.
pub fn connect(jobdir: &Path) -> io::Result<UnixStream> {
    let name = std::fs::read(jobdir.join(ADDR_FILE))?;
    if !name.starts_with(PREFIX.as_bytes()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a supervisor's socket name",
        ));
    }
    let s = UnixStream::connect_addr(&SocketAddr::from_abstract_name(&name)?)?;
    if !trusted(&s) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the socket is not the supervisor's",
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_and_connect_by_the_recorded_name() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(
            connect(t.path()).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let l = listen(t.path()).unwrap();
        let name = std::fs::read_to_string(t.path().join(ADDR_FILE)).unwrap();
        assert!(
            name.starts_with(PREFIX) && name.len() == PREFIX.len() + 32,
            "{name}"
        );
        let c = connect(t.path()).unwrap();
        let (s, _) = l.accept().unwrap();
        assert!(trusted(&s) && trusted(&c));
        // A second supervisor in the same directory: a new name, written
        // over the old one (the same file).
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = ino(&t.path().join(ADDR_FILE));
        drop((l, s, c));
        let l2 = listen(t.path()).unwrap();
        assert_ne!(
            std::fs::read_to_string(t.path().join(ADDR_FILE)).unwrap(),
            name
        );
        assert_eq!(ino(&t.path().join(ADDR_FILE)), before);
        drop(l2);
        // Gone: refused, not hung. (A test of this process that forks
        // meanwhile holds a copy of the listener until its child executes
        // its program: asked again until then, at most 5 s.)
        let refused = |r: io::Result<UnixStream>| matches!(r, Err(e) if e.kind() == io::ErrorKind::ConnectionRefused);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !refused(connect(t.path())) {
            assert!(std::time::Instant::now() < deadline, "still answering");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::fs::write(t.path().join(ADDR_FILE), "elsewhere").unwrap();
        assert_eq!(
            connect(t.path()).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    /// Another user can neither pose as the supervisor nor be served by it.
    #[test]
    fn other_users_are_not_trusted() {
        if !drover_proto::sys::is_root() {
            eprintln!("skipped: needs root to act as another user");
            return;
        }
        let nobody = crate::asuser::Creds {
            uid: 65534,
            gid: 65534,
            groups: &[],
        };
        let t = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        // A listener of nobody's under a name the agent would read.
        let theirs =
            crate::asuser::run(nobody, || listen(t.path()).map_err(io::Error::other)).unwrap();
        assert_eq!(
            connect(t.path()).unwrap_err().kind(),
            io::ErrorKind::PermissionDenied
        );
        drop(theirs);
        // nobody connecting to root's listener: the supervisor sees it.
        let ours = listen(t.path()).unwrap();
        let name = std::fs::read(t.path().join(ADDR_FILE)).unwrap();
        let _c = crate::asuser::run(nobody, || {
            UnixStream::connect_addr(&SocketAddr::from_abstract_name(&name)?)
        })
        .unwrap();
        let (s, _) = ours.accept().unwrap();
        assert!(!trusted(&s));
    }
}
