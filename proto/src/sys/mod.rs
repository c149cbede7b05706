//! The crate's only `unsafe` code: small safe wrappers over the C library,
//! shared by every daemon and command (the other crates call these rather
//! than libc where a wrapper fits). Each block says why it is sound.
//!
//! [`db`] holds the user and group database lookups, [`nss`] the way a
//! statically linked process makes them.

pub mod db;
pub mod nss;

use std::ffi::CString;

/// The real user id of this process.
pub fn getuid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The effective user id of this process.
pub fn geteuid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The real group id of this process.
pub fn getgid() -> u32 {
    // SAFETY: getgid has no preconditions and cannot fail.
    unsafe { libc::getgid() }
}

/// The effective group id of this process.
pub fn getegid() -> u32 {
    // SAFETY: getegid has no preconditions and cannot fail.
    unsafe { libc::getegid() }
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    geteuid() == 0
}

/// This process's id.
pub fn getpid() -> i32 {
    // SAFETY: getpid has no preconditions and cannot fail.
    unsafe { libc::getpid() }
}

/// The parent process's id.
pub fn getppid() -> i32 {
    // SAFETY: getppid has no preconditions and cannot fail.
    unsafe { libc::getppid() }
}

/// Send `sig` to `pid` (a negative pid names a process group, as in
/// kill(2)); the error is the OS error.
pub fn kill(pid: i32, sig: i32) -> std::io::Result<()> {
    // SAFETY: kill takes plain integers and touches no memory of ours.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Set the file-creation mask; returns the previous one.
pub fn umask(mask: u32) -> u32 {
    // SAFETY: umask only changes this process's creation mask.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// Whether `fd` is a terminal.
pub fn isatty(fd: i32) -> bool {
    // SAFETY: isatty takes a plain integer; a bad fd only returns 0.
    unsafe { libc::isatty(fd) == 1 }
}

/// `sysconf(name)`: -1 when the value is unknown.
fn sysconf(name: libc::c_int) -> i64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    unsafe { libc::sysconf(name) as i64 }
}

/// Clock ticks per second (the unit of /proc's CPU times), at least 1.
pub fn clock_ticks() -> u64 {
    sysconf(libc::_SC_CLK_TCK).max(1) as u64
}

/// The memory page size in bytes, at least 1.
pub fn page_size() -> u64 {
    sysconf(libc::_SC_PAGESIZE).max(1) as u64
}

/// Online processors, at least 1.
pub fn online_cpus() -> u32 {
    sysconf(libc::_SC_NPROCESSORS_ONLN).max(1) as u32
}

/// The password-database buffer size hint, if the system has one.
pub(crate) fn passwd_buf_hint() -> Option<usize> {
    let n = sysconf(libc::_SC_GETPW_R_SIZE_MAX);
    (n > 0).then_some(n as usize)
}

/// `SO_PEERGROUPS` (Linux 4.13) where it has the asm-generic value (x86,
/// Arm, RISC-V); None elsewhere.
const SO_PEERGROUPS: Option<libc::c_int> = if cfg!(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64"
)) {
    Some(59)
} else {
    None
};

/// The supplementary groups the peer of a connected Unix socket had when
/// it connected, as the kernel recorded them with its credentials (None
/// where it cannot say: an older kernel, another architecture).
pub fn peer_groups(sock: std::os::fd::BorrowedFd<'_>) -> Option<Vec<u32>> {
    use std::os::fd::AsRawFd;
    const GID: usize = std::mem::size_of::<libc::gid_t>();
    let opt = SO_PEERGROUPS?;
    let mut room = 64usize;
    loop {
        let mut groups = vec![0 as libc::gid_t; room];
        let mut len = (room * GID) as libc::socklen_t;
        // SAFETY: groups is valid for len bytes; getsockopt writes at most
        // len bytes there and sets len to what it wrote (or, with ERANGE,
        // to what it needs).
        let rc = unsafe {
            libc::getsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                groups.as_mut_ptr().cast(),
                &mut len,
            )
        };
        let err = (rc != 0).then(std::io::Error::last_os_error);
        match err.and_then(|e| e.raw_os_error()) {
            None => {
                groups.truncate(len as usize / GID);
                return Some(groups);
            }
            Some(libc::ERANGE) if len as usize / GID > room => room = len as usize / GID,
            Some(_) => return None,
        }
    }
}

/// How many bytes (0 or 1) a connected socket has to read, without
/// reading them or waiting: 0 when the peer closed its end; `WouldBlock`
/// when there is nothing yet.
pub fn peek_byte(sock: std::os::fd::BorrowedFd<'_>) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    let mut b = [0u8; 1];
    // SAFETY: a one-byte buffer of ours; MSG_PEEK leaves the byte in the
    // socket, MSG_DONTWAIT never blocks.
    let n = unsafe {
        libc::recv(
            sock.as_raw_fd(),
            b.as_mut_ptr().cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// This host's name as gethostname(2) gives it.
pub fn gethostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// The groups `initgroups(name, gid)` would give a process: every group the
/// group database lists `name` in, and `gid` (always first).
pub fn grouplist(name: &str, gid: u32) -> Vec<u32> {
    if nss::route(nss::Db::Group) != nss::Route::Libc {
        let mut groups = vec![gid];
        for g in db::initgroups_via_getent(name) {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        return groups;
    }
    let Ok(c) = CString::new(name) else {
        return vec![gid];
    };
    let mut n: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let cap = n;
        // SAFETY: groups has room for n entries; getgrouplist writes at most
        // n and sets n to the count needed.
        let rc = unsafe { libc::getgrouplist(c.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
        if rc >= 0 {
            groups.truncate(n.max(0) as usize);
            return groups;
        }
        if n <= cap || n > 65_536 {
            return vec![gid];
        }
    }
}

/// Make a named pipe at `path` with `mode`.
pub fn mkfifo(path: &std::path::Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path contains a NUL byte"))?;
    // SAFETY: c is a valid NUL-terminated path for the call's duration.
    if unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Make a character device node at `path` (mode 0666) for `major:minor`.
pub fn mknod_char(path: &std::path::Path, major: u32, minor: u32) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path contains a NUL byte"))?;
    // SAFETY: c is a valid NUL-terminated path for the call's duration.
    let r = unsafe {
        libc::mknod(
            c.as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(major, minor),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Restore the default action of `sig` (e.g. SIGPIPE, so that writing to a
/// closed pipe ends a command quietly).
pub fn signal_default(sig: i32) {
    // SAFETY: installs the default disposition; no handler of ours runs.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
    }
}

/// Set `flag` whenever `sig` arrives, from the signal handler itself,
/// beside the other actions registered for it (tokio's among them).
pub fn note_signal(sig: i32, flag: &'static std::sync::atomic::AtomicBool) -> std::io::Result<()> {
    // SAFETY: the action only stores to an atomic, which is
    // async-signal-safe; the registry chains it with the other actions.
    let r = unsafe {
        signal_hook_registry::register(sig, move || {
            flag.store(true, std::sync::atomic::Ordering::SeqCst)
        })
    };
    r.map(drop)
}

/// Whether `sig` has its default action here.
pub fn signal_is_default(sig: i32) -> bool {
    // SAFETY: reads the disposition into a zeroed (valid) struct only.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_DFL
    }
}

/// Send `sig` to the calling thread (its handler has run on return).
pub fn raise(sig: i32) {
    // SAFETY: raise has no memory-safety preconditions.
    unsafe {
        libc::raise(sig);
    }
}

/// Ignore `sig`.
pub fn signal_ignore(sig: i32) {
    // SAFETY: installs SIG_IGN; no handler of ours runs.
    unsafe {
        libc::signal(sig, libc::SIG_IGN);
    }
}

/// Install `handler` for `sig` (sigaction, empty mask, no flags). The
/// handler must only do async-signal-safe work (an atomic store).
pub fn signal_handler(sig: i32, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a plain sigaction with a zeroed (valid) struct; the handler
    // is a plain function the caller keeps async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// `flock(fd, op)` (LOCK_EX, LOCK_NB, LOCK_UN ...).
pub fn flock(fd: &impl std::os::fd::AsRawFd, op: i32) -> std::io::Result<()> {
    // SAFETY: flock on a descriptor the caller keeps open; no memory passed.
    if unsafe { libc::flock(fd.as_raw_fd(), op) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `mallopt(param, value)`: tune glibc's allocator.
pub fn mallopt(param: i32, value: i32) {
    // SAFETY: mallopt only changes allocator settings.
    unsafe {
        libc::mallopt(param, value);
    }
}

/// Give free heap pages back to the system.
pub fn malloc_trim() {
    // SAFETY: malloc_trim only releases free heap pages.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Make the process `cmd` starts get `sig` when the thread that spawns it
/// ends (PR_SET_PDEATHSIG). With `parent`, a child whose parent is already
/// gone (it died before the prctl) exits at once instead of living on.
pub fn die_with_parent(cmd: &mut std::process::Command, sig: i32, parent: Option<i32>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only makes async-signal-safe
    // system calls (prctl, getppid, _exit) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if parent.is_some_and(|p| libc::getppid() != p) {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Become `uid`/`gid` for good, with exactly `groups` as supplementary
/// groups: setgroups, then setresgid and setresuid (real, effective and
/// saved ids alike; glibc applies them to every thread). Needs root.
pub fn set_ids(uid: u32, gid: u32, groups: &[u32]) -> std::io::Result<()> {
    let check = |r: libc::c_int| {
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    };
    // SAFETY: setgroups reads `groups.len()` ids from a live slice; the
    // setres* calls take integers.
    unsafe {
        check(libc::setgroups(groups.len(), groups.as_ptr()))?;
        check(libc::setresgid(gid, gid, gid))?;
        check(libc::setresuid(uid, uid, uid))?;
    }
    Ok(())
}

/// Whether this process can make itself root again (setuid(0) succeeds:
/// it then is root again, so call this only to refuse to go on).
pub fn can_regain_root() -> bool {
    // SAFETY: setuid takes an integer.
    unsafe { libc::setuid(0) == 0 }
}

/// Have the process `cmd` starts write itself into each `cgroup.procs`
/// file of `files` before it execs (failing the spawn if one refuses).
pub fn join_cgroups_in_child(cmd: &mut std::process::Command, files: Vec<CString>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only makes async-signal-safe
    // system calls (open, write, close) on paths made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            for f in &files {
                let fd = libc::open(f.as_ptr(), libc::O_WRONLY);
                if fd < 0 || libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(fd);
            }
            Ok(())
        });
    }
}

/// Have the process `cmd` starts set its umask to `mask` before it execs.
pub fn umask_in_child(cmd: &mut std::process::Command, mask: u32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: umask(2) is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(mask as libc::mode_t);
            Ok(())
        });
    }
}

/// Free bytes and free inodes of the file system holding `path`, as an
/// unprivileged user sees them (`statvfs`: `f_bavail` × `f_frsize`,
/// `f_favail`); inodes `None` where the file system does not count them.
pub fn free_space(path: &std::path::Path) -> std::io::Result<(u64, Option<u64>)> {
    use std::os::unix::ffi::OsStrExt;
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct;
    // `c` is NUL-terminated and `st` a valid out pointer for the call.
    let st = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        st
    };
    let bytes = (st.f_bavail as u64).saturating_mul(st.f_frsize as u64);
    let inodes = (st.f_files > 0).then_some(st.f_favail as u64);
    Ok((bytes, inodes))
}

/// The open files limit (RLIMIT_NOFILE): (soft, hard).
pub fn nofile_limit() -> std::io::Result<(u64, u64)> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given a valid pointer to.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((r.rlim_cur, r.rlim_max))
}

/// Set the open files limit's soft value (at most the hard one).
pub fn set_nofile_soft(soft: u64, hard: u64) -> std::io::Result<()> {
    let r = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads the struct it is given a valid pointer to.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_limits() {
        assert_eq!(is_root(), geteuid() == 0);
        assert!(clock_ticks() >= 1 && page_size() >= 512 && online_cpus() >= 1);
        assert!(kill(getpid(), 0).is_ok());
        assert!(gethostname().is_some_and(|h| !h.is_empty()));
        let old = umask(0o027);
        assert_eq!(umask(old), 0o027);
    }

    #[test]
    fn root_is_in_its_own_group() {
        assert_eq!(grouplist("root", 0).first(), Some(&0));
        assert_eq!(grouplist("no such user here", 4242), vec![4242]);
    }
}
