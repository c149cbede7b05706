//! An open directory and the `*at` calls relative to it (mkdirat, openat,
//! unlinkat). Cgroup file systems (kernfs) check permissions on every path
//! component under a lock, so walking `/sys/fs/cgroup/memory/drover/...`
//! for each file costs more than the file operation itself; the cgroup code
//! opens a job's directories once and names files relative to them.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A directory opened for `*at` calls (closed on drop).
#[derive(Debug)]
pub struct Dir(OwnedFd);

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Dir {
    /// Open the directory at `path`.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `c` is NUL-terminated for the call's duration.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Open the sub-directory `name`.
    pub fn sub(&self, name: &str) -> io::Result<Dir> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(Dir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// mkdir `name` (mode 0755); an existing directory is no error.
    pub fn mkdir(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        match check(unsafe { libc::mkdirat(self.0.as_raw_fd(), c.as_ptr(), 0o755) }) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// rmdir `name`.
    pub fn rmdir(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
            .map(|_| ())
    }

    /// rename `from` to `to`, both in this directory (how a cgroup v1
    /// group changes its name: only within its parent; cgroupfs refuses
    /// a `to` that exists).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        let fd = self.0.as_raw_fd();
        // SAFETY: a descriptor we own and two NUL-terminated names.
        check(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(|_| ())
    }

    /// Write `value` into the existing file `name` in one write(2), the
    /// way cgroup control files take it (no O_CREAT, no O_TRUNC).
    pub fn write(&self, name: &str, value: &[u8]) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let f = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: the pointer/length pair is `value`.
        let n = unsafe { libc::write(f.as_raw_fd(), value.as_ptr().cast(), value.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != value.len() {
            return Err(io::Error::from(io::ErrorKind::WriteZero));
        }
        Ok(())
    }

    /// The contents of the file `name` (small files: control files).
    pub fn read(&self, name: &str) -> io::Result<String> {
        let c = c_name(name)?;
        // SAFETY: a descriptor we own and a NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(
                self.0.as_raw_fd(),
                c.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        let mut s = String::new();
        io::Read::read_to_string(&mut f, &mut s)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_calls() {
        let t = tempfile::tempdir().unwrap();
        let d = Dir::open(t.path()).unwrap();
        d.mkdir("a").unwrap();
        d.mkdir("a").unwrap(); // exists: fine
        let a = d.sub("a").unwrap();
        std::fs::write(t.path().join("a/f"), "old contents").unwrap();
        a.write("f", b"new").unwrap();
        // No truncation: control files take one write; a plain file keeps its tail.
        assert_eq!(a.read("f").unwrap(), "new contents");
        assert_eq!(
            a.write("missing", b"x").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(d.rmdir("a").is_err(), "not empty");
        d.rename("a", "b").unwrap();
        assert!(d.rename("a", "c").is_err(), "gone");
        d.rename("b", "a").unwrap();
        std::fs::remove_file(t.path().join("a/f")).unwrap();
        d.rmdir("a").unwrap();
        assert!(!t.path().join("a").exists());
        assert!(d.sub("a").is_err());
        assert!(d.write("a\0b", b"x").is_err());
    }
}
