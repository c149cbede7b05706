//! The agent's and the supervisor's only `unsafe` code: safe wrappers over
//! system calls (no tokio, no threads), each block with its `SAFETY:` reason.
//! [`creds`] switches processes and threads to a job's user.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The calling thread's errno.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `strerror` text without Rust's " (os error N)" suffix.
pub fn strerror(e: i32) -> String {
    let s = std::io::Error::from_raw_os_error(e).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

pub fn last_error() -> String {
    strerror(errno())
}

pub fn now_secs() -> i64 {
    drover_proto::auth::now_secs()
}

pub fn cstring(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"))
}

/// Write all of `buf` to a raw fd (retrying on EINTR); errors are ignored.
pub fn write_fd(fd: RawFd, buf: &[u8]) {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer/length pair stays within `buf`.
        let n = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if n < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return;
        }
        if n == 0 {
            return;
        }
        off += n as usize;
    }
}

/// A user's home directory and login shell from the password database.
pub fn user_home_shell(uid: u32) -> (Option<String>, Option<String>) {
    match drover_proto::sysdb::passwd_by_uid(uid) {
        Some(p) => (Some(p.dir), Some(p.shell)),
        None => (None, None),
    }
}

/// Block `signals` for the process and return a non-blocking signalfd for them.
pub fn signalfd_for(signals: &[i32]) -> Result<RawFd, String> {
    // SAFETY: sigset_t is plain data; the libc calls only write into it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(format!("sigprocmask: {}", last_error()));
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(format!("signalfd: {}", last_error()));
        }
        Ok(fd)
    }
}

/// Read and discard everything pending on a signalfd.
pub fn drain_signalfd(fd: RawFd) {
    let mut buf = [0u8; 128 * 8];
    loop {
        // SAFETY: buf is valid for its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            return;
        }
    }
}

/// Wait until `fd` is readable or `timeout_ms` passes (-1 = forever).
pub fn poll_one(fd: RawFd, timeout_ms: i32) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe {
        libc::poll(&mut p, 1, timeout_ms);
    }
}

pub fn set_cloexec(fd: RawFd) {
    // SAFETY: fcntl on an fd we own; failure is harmless.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

pub fn set_blocking(fd: RawFd) {
    // SAFETY: fcntl on an fd we own; failure is harmless.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

/// Whether `fd` is an open pipe/FIFO.
pub fn is_fifo(fd: RawFd) -> bool {
    // SAFETY: fstat writes into a zeroed stat.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFIFO
    }
}

/// Send one message with one file descriptor attached (SCM_RIGHTS).
pub fn send_with_fd(sock: RawFd, data: &[u8], fd: RawFd) -> std::io::Result<()> {
    // SAFETY: the msghdr points at live buffers sized with CMSG_SPACE.
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
        let mut cbuf = vec![0u8; space];
        let mut iov = libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: data.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() {
            return Err(std::io::Error::other("no room for SCM_RIGHTS"));
        }
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), fd);
        loop {
            let n = libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            if n >= 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Receive one message and the descriptors attached to it (made close-on-exec).
/// Returns the byte count (0 = peer closed) and the descriptors.
pub fn recv_with_fds(sock: RawFd, buf: &mut [u8]) -> std::io::Result<(usize, Vec<RawFd>)> {
    // SAFETY: the msghdr points at live buffers; cmsg walking stays within msg_controllen.
    unsafe {
        let space = libc::CMSG_SPACE((4 * std::mem::size_of::<RawFd>()) as u32) as usize;
        let mut cbuf = vec![0u8; space];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let n = loop {
            let n = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n >= 0 {
                break n as usize;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        };
        let mut fds = Vec::new();
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let len = (*cmsg).cmsg_len as usize - (data as usize - cmsg as usize);
                for i in 0..len / std::mem::size_of::<RawFd>() {
                    fds.push(std::ptr::read_unaligned(data.cast::<RawFd>().add(i)));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        Ok((n, fds))
    }
}

/// Set the process name shown by `ps -o comm` / `top` (at most 15 bytes).
pub fn set_process_name(name: &str) {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0);
    }
}

pub mod creds;
pub mod task;

/// Tests: run `f` in a forked child and return its exit code. `f` runs in
/// the child of a multi-threaded process: it may only make
/// async-signal-safe calls (no allocation, no locks).
#[cfg(test)]
pub(crate) fn fork_and_wait(f: impl FnOnce() -> i32) -> Option<i32> {
    // SAFETY: the child only runs `f` (async-signal-safe by the contract
    // above) and leaves with _exit; the parent reaps it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(f());
        }
        if pid < 0 {
            return None;
        }
        let mut st = 0;
        while libc::waitpid(pid, &mut st, 0) < 0 && errno() == libc::EINTR {}
        libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st))
    }
}

/// `waitpid(pid, flags)`: `Some((pid, status))` for a child that changed
/// state, `None` when WNOHANG found none; the error is the errno.
pub fn waitpid(pid: i32, flags: i32) -> Result<Option<(i32, i32)>, i32> {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, flags) };
    match r {
        r if r > 0 => Ok(Some((r, status))),
        0 => Ok(None),
        _ => Err(errno()),
    }
}

/// Tell a terminal (and the job in it: SIGWINCH) its new size.
pub fn set_winsize(t: &std::fs::File, rows: u16, cols: u16) {
    use std::os::fd::AsRawFd;
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize from a valid pointer.
    unsafe { libc::ioctl(t.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
}

/// (sysname, release) from uname(2).
pub fn uname() -> Option<(String, String)> {
    // SAFETY: uname fills a zeroed struct with NUL-terminated strings,
    // read while the struct lives.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return None;
        }
        let s = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        Some((s(&u.sysname), s(&u.release)))
    }
}

/// The pid of the process at the other end of a Unix socket (SO_PEERCRED).
pub fn peer_pid(sock: RawFd) -> Option<i32> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: cred/len are valid out-pointers for SO_PEERCRED.
    let r = unsafe {
        libc::getsockopt(
            sock,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(cred.pid)
}

/// A connected pair of close-on-exec SOCK_SEQPACKET Unix sockets.
pub fn seqpacket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: socketpair just returned these descriptors; nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// SO_RCVTIMEO on a socket: a receive waits at most `secs` seconds.
pub fn set_recv_timeout(sock: &impl AsRawFd, secs: i64) {
    let timeout = libc::timeval {
        tv_sec: secs as libc::time_t,
        tv_usec: 0,
    };
    // SAFETY: setsockopt reads a valid timeval of the size passed.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
}

/// Close a raw descriptor this process owns and no object holds (one
/// received with SCM_RIGHTS, or a pipe end made with [`pipe_raw`]).
pub fn close(fd: RawFd) {
    // SAFETY: closing a descriptor nothing else owns; errors are harmless.
    unsafe {
        libc::close(fd);
    }
}

/// Whether descriptor `fd` is open.
pub fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: fcntl(F_GETFD) only queries the descriptor.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Make `to` a copy of `from` (dup2); `to` is one of the standard
/// descriptors, which the process owns.
pub fn dup2(from: &impl AsRawFd, to: RawFd) -> std::io::Result<()> {
    // SAFETY: dup2 on a live descriptor onto a standard slot; no memory.
    if unsafe { libc::dup2(from.as_raw_fd(), to) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Detach: fork, the parent leaves at once (exit 0), the child starts a
/// new session with standard input on `null` and output and error on
/// `out`. Only before any thread is started.
pub fn detach_process(null: &impl AsRawFd, out: &impl AsRawFd) -> Result<(), String> {
    if threads() > 1 {
        return Err("cannot detach: threads are already running".into());
    }
    // SAFETY: the process is single-threaded (checked above); the parent
    // leaves with _exit, running nothing of ours.
    unsafe {
        match libc::fork() {
            -1 => return Err(format!("fork: {}", std::io::Error::last_os_error())),
            0 => {}
            _ => libc::_exit(0),
        }
        libc::setsid();
    }
    let _ = dup2(null, 0);
    let _ = dup2(out, 1);
    let _ = dup2(out, 2);
    Ok(())
}

/// How many threads this process has (1 when /proc cannot tell).
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(1, |d| d.count().max(1))
}

/// The `bpf(2)` system call on an attribute block.
///
/// Every address the caller wrote into `attr` must point at a buffer that
/// stays alive, with the length written next to it, for the duration of
/// the call (the kernel reads and writes them).
pub(crate) fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> std::io::Result<i32> {
    // SAFETY: attr is a valid, initialised buffer of the size passed; the
    // addresses inside it are live buffers (this function's contract, kept
    // by its one caller, cgroup::bpf).
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr() as *mut libc::c_void,
            attr.len() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

/// Own a descriptor the kernel just returned (from [`bpf`]).
pub(crate) fn own_new_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: a descriptor just returned by a system call to this process,
    // not yet owned by anything else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Copy `fd` onto a private close-on-exec descriptor (3 or above) and point
/// `fd` at /dev/null (or close it, when above 2 and /dev/null is missing).
pub fn move_to_private_fd(fd: RawFd) -> Option<RawFd> {
    // SAFETY: descriptor calls on fds this process owns; the path is a
    // NUL-terminated literal.
    unsafe {
        let private = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3);
        if private < 0 {
            return None;
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, fd);
            libc::close(null);
        } else if fd > 2 {
            libc::close(fd);
        }
        Some(private)
    }
}

/// Start a new session (setsid); harmless when already a group leader.
pub fn setsid() {
    // SAFETY: setsid takes no arguments and touches no memory.
    unsafe {
        libc::setsid();
    }
}

/// Become a child subreaper: orphaned descendants are re-parented here.
pub fn set_child_subreaper() {
    // SAFETY: prctl with integer arguments only sets a process flag.
    unsafe {
        libc::prctl(
            libc::PR_SET_CHILD_SUBREAPER,
            1 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        );
    }
}

/// Resource usage of the reaped children (getrusage(RUSAGE_CHILDREN)).
pub fn children_rusage() -> libc::rusage {
    // SAFETY: getrusage writes into a zeroed (valid) struct.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru);
        ru
    }
}

/// poll(2) on `fds` for at most `timeout_ms` (-1 = forever).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> i32 {
    // SAFETY: fds is a valid array of pollfd of the given length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }
}

/// Which side of a [`fork`] this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    Child,
    Parent(i32),
}

/// fork(2), for a single-threaded process only (the supervisor, the fork
/// server, a daemon before its runtime): refused when other threads run, so
/// that the child may use anything (allocate, lock) until it execs or exits.
pub fn fork() -> std::io::Result<Forked> {
    if threads() > 1 {
        return Err(std::io::Error::other(
            "fork refused: the process has several threads",
        ));
    }
    // SAFETY: the process is single-threaded (checked above), so the child
    // is a full copy in a consistent state.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Leave this process now with `code`, running no destructor and no
/// exit handler (a forked child that did not exec).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit ends the process; nothing after it runs.
    unsafe { libc::_exit(code) }
}

/// send(2) on a socket (MSG_NOSIGNAL); the count sent or the error.
pub fn send(sock: RawFd, data: &[u8]) -> std::io::Result<usize> {
    // SAFETY: sending from a live buffer of the length passed.
    let n = unsafe { libc::send(sock, data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Standard input on /dev/null (the old descriptor 0 closed with it).
pub fn stdin_to_dev_null() {
    // SAFETY: descriptor calls on fds this process owns; the path is a
    // NUL-terminated literal.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::close(null);
        } else {
            libc::close(0);
        }
    }
}

/// NUL-terminated strings and the NULL-terminated pointer array execve(2)
/// takes, made before a fork so that the child allocates nothing.
pub struct CStrArray {
    strings: Vec<CString>,
    ptrs: Vec<*const libc::c_char>,
}

impl CStrArray {
    pub fn new(strings: Vec<CString>) -> CStrArray {
        let mut ptrs: Vec<*const libc::c_char> = strings.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        CStrArray { strings, ptrs }
    }

    pub fn strings(&self) -> &[CString] {
        &self.strings
    }
}

/// execve(2): returns only on failure, with the errno.
pub fn execve(path: &std::ffi::CStr, argv: &CStrArray, envp: &CStrArray) -> i32 {
    // SAFETY: path is NUL-terminated; both arrays are NULL-terminated and
    // point into CStrings that `argv` and `envp` keep alive.
    unsafe {
        libc::execve(path.as_ptr(), argv.ptrs.as_ptr(), envp.ptrs.as_ptr());
    }
    errno()
}

/// setpgid(2) (0, 0: lead a new group).
pub fn setpgid(pid: i32, pgid: i32) {
    // SAFETY: integer arguments only.
    unsafe {
        libc::setpgid(pid, pgid);
    }
}

/// Before exec: no signal blocked, and signals 1 to `below - 1` (but
/// SIGKILL and SIGSTOP) at their default action. Async-signal-safe.
pub fn reset_signals(below: i32) {
    // SAFETY: sigset_t is plain data the libc calls initialise; signal
    // takes integers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        for sig in 1..below {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// open(2) on a C path; the new descriptor or the errno.
pub fn open(path: &std::ffi::CStr, flags: i32, mode: u32) -> Result<RawFd, i32> {
    // SAFETY: path is NUL-terminated for the call's duration.
    let fd = unsafe { libc::open(path.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// write(2) once; the count written or the errno.
pub fn write_once(fd: RawFd, buf: &[u8]) -> Result<usize, i32> {
    // SAFETY: the pointer/length pair is `buf`.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

/// read(2) once; the count read (0 = end) or the errno.
pub fn read_once(fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: the pointer/length pair is `buf`, writable.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

/// chdir(2) on a C path; the errno on failure.
pub fn chdir(path: &std::ffi::CStr) -> Result<(), i32> {
    // SAFETY: path is NUL-terminated for the call's duration.
    if unsafe { libc::chdir(path.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// dup2(2) on raw descriptors this process owns; the errno on failure.
pub fn dup2_raw(from: RawFd, to: RawFd) -> Result<(), i32> {
    // SAFETY: integer arguments only; `to` is replaced atomically.
    if unsafe { libc::dup2(from, to) } < 0 {
        Err(errno())
    } else {
        Ok(())
    }
}

/// A close-on-exec pipe as raw descriptors (read end, write end), for a
/// fork whose child closes one end; close them with [`close`].
pub fn pipe_raw() -> Result<(RawFd, RawFd), i32> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(errno());
    }
    Ok((fds[0], fds[1]))
}

/// The child side of a fork for exec: it makes only async-signal-safe
/// calls, so it is sound even in the child of a multi-threaded process.
/// `child` execs; when it returns (the exec failed) the child exits 127.
fn fork_for_exec(child: impl FnOnce()) -> Result<i32, i32> {
    // SAFETY: the child runs `child`, which (for every caller in this
    // module) only makes async-signal-safe calls on memory prepared before
    // the fork, then leaves with _exit.
    match unsafe { libc::fork() } {
        -1 => Err(errno()),
        0 => {
            child();
            exit_now(127)
        }
        pid => Ok(pid),
    }
}

/// Start `prog` (no arguments, environment `envp`) in a process group of
/// its own, with every signal at its default, standard streams on
/// /dev/null and `/` as its directory (Prolog/Epilog). Its pid or the errno
/// of the fork; a program that cannot be run exits 127.
pub fn spawn_quiet(prog: &std::ffi::CStr, envp: &CStrArray) -> Result<i32, i32> {
    let argv = CStrArray::new(vec![prog.to_owned()]);
    fork_for_exec(|| {
        reset_signals(32);
        setpgid(0, 0);
        if let Ok(null) = open(c"/dev/null", libc::O_RDWR, 0) {
            let _ = dup2_raw(null, 0);
            let _ = dup2_raw(null, 1);
            let _ = dup2_raw(null, 2);
        }
        let _ = chdir(c"/");
        execve(prog, &argv, envp);
    })
}

/// Start `prog` (no arguments, environment `envp`) with its standard
/// output on a pipe: its pid and the pipe's read end (close it with
/// [`close`]). A program that cannot be run exits 127.
pub fn spawn_stdout_to_pipe(
    prog: &std::ffi::CStr,
    envp: &CStrArray,
) -> Result<(i32, RawFd), String> {
    let argv = CStrArray::new(vec![prog.to_owned()]);
    let (rd, wr) = pipe_raw().map_err(|e| format!("pipe: {}", strerror(e)))?;
    let pid = fork_for_exec(|| {
        let _ = dup2_raw(wr, 1);
        execve(prog, &argv, envp);
    });
    close(wr);
    match pid {
        Ok(pid) => Ok((pid, rd)),
        Err(e) => {
            close(rd);
            Err(format!("fork: {}", strerror(e)))
        }
    }
}
