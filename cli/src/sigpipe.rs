//! SIGPIPE, as a command-line tool wants it: writing to a closed standard
//! output (`squeue | head`) ends the command quietly, as the default action
//! does; but a write to a network or local socket whose peer went away
//! (a controller that died mid-call; HTTP/2 writes with `writev`, which
//! raises SIGPIPE) only fails that write, so the command reports it
//! ("Unable to contact slurm controller") or fails over to a backup,
//! instead of dying without a word.

/// Install the handler (once, first thing in `main`).
pub fn install() {
    // SAFETY: `on_sigpipe` only calls async-signal-safe functions (poll,
    // sigaction, raise); the sigaction struct is zeroed, then filled.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigpipe as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGPIPE, &sa, std::ptr::null_mut());
    }
}

extern "C" fn on_sigpipe(_: libc::c_int) {
    let mut fds = [
        libc::pollfd {
            fd: 1,
            events: 0,
            revents: 0,
        },
        libc::pollfd {
            fd: 2,
            events: 0,
            revents: 0,
        },
    ];
    // SAFETY: poll over a local array of two pollfds, timeout 0; then the
    // default action restored and the signal raised again, all
    // async-signal-safe.
    unsafe {
        libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0);
        if fds.iter().any(|f| f.revents & libc::POLLERR != 0) {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGPIPE, &sa, std::ptr::null_mut());
            libc::raise(libc::SIGPIPE);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    /// With the handler in place a vectored write (`writev`, as HTTP/2
    /// writes) to a socket whose peer is gone fails with EPIPE and the
    /// process lives on; under the default action this test process would
    /// die (its own standard streams are fine).
    #[test]
    fn a_closed_socket_fails_the_write_only() {
        super::install();
        let (mut a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(b);
        let bufs = [
            std::io::IoSlice::new(b"PRI * HTTP/2.0"),
            std::io::IoSlice::new(b"\r\n"),
        ];
        let e = a.write_vectored(&bufs).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
