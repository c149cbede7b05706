//! The supervisor fork server (`droverd --stepd-server`).
//!
//! Started once by the agent with a SOCK_SEQPACKET socket as stdin. Each
//! message is `JOBDIR \0 CONF \0 DEBUG` with the write end of the job's
//! notify pipe attached (SCM_RIGHTS); the server forks, the child becomes
//! the job's supervisor exactly as `droverd --stepd JOBDIR` would, and the
//! server answers `ok PID` (or `error ...`). Forking this small
//! single-threaded process is much cheaper than exec'ing the agent binary
//! for every job. When the agent goes away the server exits; supervisors
//! already started live on (each is in its own session).

use std::os::fd::RawFd;
use std::path::Path;

use super::sys;

/// The agent's end of the request socket is our stdin.
const CHANNEL: RawFd = 0;

fn reply(msg: &str) {
    // SAFETY: sending from a live buffer on our socket.
    unsafe {
        libc::send(CHANNEL, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL);
    }
}

pub fn run() -> i32 {
    sys::set_process_name("drover-stepsrv");
    // SAFETY: process-wide settings of this single-threaded process; children
    // are reaped automatically (each child restores SIGCHLD first thing).
    unsafe {
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let (n, fds) = match sys::recv_with_fds(CHANNEL, &mut buf) {
            Ok(x) => x,
            Err(_) => return 1,
        };
        if n == 0 {
            for fd in fds {
                // SAFETY: closing descriptors we were given.
                unsafe { libc::close(fd) };
            }
            return 0; // the agent is gone
        }
        let answer = serve_one(&buf[..n], &fds);
        for fd in fds {
            // SAFETY: the parent's copies; the child has its own.
            unsafe { libc::close(fd) };
        }
        reply(&answer);
    }
}

fn serve_one(msg: &[u8], fds: &[RawFd]) -> String {
    let text = String::from_utf8_lossy(msg);
    let mut parts = text.split('\0');
    let (Some(dir), Some(conf), Some(debug)) = (parts.next(), parts.next(), parts.next()) else {
        return "error malformed request".into();
    };
    if dir.is_empty() {
        return "error malformed request".into();
    }
    let Some(&notify) = fds.first() else {
        return "error no notify pipe".into();
    };
    // SAFETY: fork of a single-threaded process; the child only runs the
    // supervisor and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return format!("error fork: {}", sys::last_error());
    }
    if pid == 0 {
        // SAFETY: child-side descriptor and signal setup.
        unsafe {
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, 0);
                libc::close(null);
            } else {
                libc::close(CHANNEL);
            }
        }
        let opts = super::Options {
            notify_fd: Some(notify),
            conf: conf.to_string(),
            debug: debug == "1",
        };
        let code = super::run_with(Path::new(dir), opts);
        // SAFETY: leave without running anything inherited from the server.
        unsafe { libc::_exit(code) };
    }
    format!("ok {pid}")
}
