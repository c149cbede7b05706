//! File operations on a job user's paths, done with that user's credentials.
//!
//! The agent runs as root, but a path a user names (`srun -o/-e/-i`) must be
//! opened, created or removed with the user's rights, never root's: else a
//! user could read `/etc/shadow` through `-i`, or remove and take over any
//! file through `-o`. The operation runs on a short-lived thread whose
//! credentials are switched with raw system calls (which change the calling
//! thread only, unlike glibc's wrappers that switch every thread); the
//! thread ends with the operation, and its credentials with it.

/// The identity to act as.
#[derive(Clone, Copy, Debug)]
pub struct Creds<'a> {
    pub uid: u32,
    pub gid: u32,
    pub groups: &'a [u32],
}

/// Run `f` with `c`'s credentials. Without root there is nothing to switch
/// (the agent can do no more than itself) and `f` runs here.
pub fn run<T: Send>(c: Creds, f: impl FnOnce() -> std::io::Result<T> + Send) -> std::io::Result<T> {
    if !drover_proto::sys::is_root() || c.uid == 0 {
        return f();
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::sys::creds::switch_this_thread(c.uid, c.gid, c.groups)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("file operation panicked")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn acts_with_the_users_rights_only_on_its_own_thread() {
        if !drover_proto::sys::is_root() {
            return; // nothing to switch from
        }
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root only").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let nobody = Creds {
            uid: 65534,
            gid: 65534,
            groups: &[],
        };
        let read = run(nobody, || std::fs::read(&secret));
        assert_eq!(
            read.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        let made = dir.path().join("made");
        run(nobody, || std::fs::write(&made, "x")).unwrap();
        assert_eq!(std::fs::metadata(&made).unwrap().uid(), 65534);
        assert_eq!(std::fs::metadata(&made).unwrap().gid(), 65534);
        // The caller's thread is still root.
        assert_eq!(std::fs::read(&secret).unwrap(), b"root only");
        assert_eq!(drover_proto::sys::geteuid(), 0);
    }
}
