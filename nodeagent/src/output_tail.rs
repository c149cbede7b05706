//! The end of a file, read with the calling user's own rights: the web
//! dashboard's view of a job's output (`ReadOutput`). The agent opens
//! nothing as itself: the read runs on a thread switched to the caller's
//! uid, gid and groups ([`crate::asuser`]), so a caller reads exactly what
//! they could read in a shell on this host, and nothing else.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use drover_proto::auth::Identity;
use tonic::Status;

use crate::asuser::{self, Creds};

/// The most one call returns.
pub const MAX_TAIL: u64 = 64 * 1024;

/// The last `max` bytes of the regular file `path` and its size. Blocking.
pub fn tail(path: &Path, max: u64) -> std::io::Result<(Vec<u8>, u64)> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO would block the reader: never wait for a writer.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let size = meta.len();
    let want = max.min(MAX_TAIL).min(size);
    f.seek(SeekFrom::Start(size - want))?;
    let mut data = Vec::with_capacity(want as usize);
    f.take(want).read_to_end(&mut data)?;
    Ok((data, size))
}

/// `ReadOutput` for `caller`: refused for daemon credentials (no user to
/// act as) and relative paths; errors in the user's words.
pub fn read_as(caller: &Identity, path: &str, max: u64) -> Result<(Vec<u8>, u64), Status> {
    if caller.daemon {
        return Err(Status::permission_denied("Access/permission denied"));
    }
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(Status::invalid_argument(format!(
            "not an absolute path: {}",
            drover_proto::text::printable(path)
        )));
    }
    let creds = Creds {
        uid: caller.uid,
        gid: caller.gid,
        groups: &caller.groups,
    };
    asuser::run(creds, || tail(p, max)).map_err(|e| {
        let shown = drover_proto::text::printable(path);
        match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                Status::permission_denied(format!("{shown}: Access/permission denied"))
            }
            std::io::ErrorKind::NotFound => {
                Status::not_found(format!("{shown}: No such file or directory"))
            }
            _ => Status::failed_precondition(format!("{shown}: {e}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn tails_and_refusals() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(tail(&p, 4).unwrap(), (b"6789".to_vec(), 10));
        assert_eq!(tail(&p, 100).unwrap(), (b"0123456789".to_vec(), 10));
        assert!(tail(d.path(), 4).is_err());
        let me = Identity {
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
            daemon: false,
            host: String::new(),
        };
        assert!(read_as(&me, "relative/path", 4).is_err());
        let daemon = Identity {
            daemon: true,
            ..me.clone()
        };
        assert_eq!(
            read_as(&daemon, p.to_str().unwrap(), 4).unwrap_err().code(),
            tonic::Code::PermissionDenied
        );
        // As root, a file only its owner may read is refused to another user.
        if drover_proto::sys::is_root() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
            let e = read_as(&me, p.to_str().unwrap(), 4).unwrap_err();
            assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e}");
        }
    }
}
