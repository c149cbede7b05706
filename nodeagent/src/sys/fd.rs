//! Descriptors: pipes, sockets (SCM_RIGHTS, peer credentials), poll,
//! signalfd, terminals.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::{errno, last_error};

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

/// Tell a terminal (and the job in it: SIGWINCH) its new size.
pub fn set_winsize(t: &std::fs::File, rows: u16, cols: u16) {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize from a valid pointer.
    unsafe { libc::ioctl(t.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
}

/// The pid of the process at the other end of a Unix socket (SO_PEERCRED).
pub fn peer_pid(sock: RawFd) -> Option<i32> {
    peer_cred(sock).map(|c| c.pid)
}

/// The uid of the process at the other end of a Unix socket: the one that
/// connected (seen by an accepting end) or listened (seen by a connecting
/// end).
pub fn peer_uid(sock: RawFd) -> Option<u32> {
    peer_cred(sock).map(|c| c.uid)
}

fn peer_cred(sock: RawFd) -> Option<libc::ucred> {
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
    (r == 0).then_some(cred)
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

/// Own a descriptor the kernel just returned (from [`super::bpf`]).
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

/// poll(2) on `fds` for at most `timeout_ms` (-1 = forever).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> i32 {
    // SAFETY: fds is a valid array of pollfd of the given length.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }
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
