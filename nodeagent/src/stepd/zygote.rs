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
    let _ = sys::send(CHANNEL, msg.as_bytes());
}

pub fn run() -> i32 {
    sys::set_process_name("drover-stepsrv");
    // Children are reaped automatically (each child restores SIGCHLD first
    // thing).
    for sig in [libc::SIGCHLD, libc::SIGPIPE, libc::SIGINT, libc::SIGHUP] {
        drover_proto::sys::signal_ignore(sig);
    }
    // Load the name-service modules (nsswitch.conf: files, systemd, ...)
    // once, here: every supervisor looks up its job's user and groups, and
    // a forked child finds them loaded instead of loading and relocating
    // them itself. glibc still re-reads nsswitch.conf when it changes.
    if let Some(pw) = drover_proto::sysdb::passwd_by_uid(0) {
        let _ = drover_proto::sys::grouplist(&pw.name, pw.gid);
    }
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let (n, fds) = match sys::recv_with_fds(CHANNEL, &mut buf) {
            Ok(x) => x,
            Err(_) => return 1,
        };
        if n == 0 {
            for fd in fds {
                sys::close(fd);
            }
            return 0; // the agent is gone
        }
        let answer = serve_one(&buf[..n], &fds);
        for fd in fds {
            // The parent's copies; the child has its own.
            sys::close(fd);
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
    // The child only runs the supervisor and exits.
    let pid = match sys::fork() {
        Err(e) => return format!("error fork: {e}"),
        Ok(sys::Forked::Parent(pid)) => pid,
        Ok(sys::Forked::Child) => 0,
    };
    if pid == 0 {
        for sig in [libc::SIGCHLD, libc::SIGINT, libc::SIGHUP] {
            drover_proto::sys::signal_default(sig);
        }
        // The request socket (our stdin, CHANNEL) is the server's.
        sys::stdin_to_dev_null();
        let opts = super::Options {
            notify_fd: Some(notify),
            conf: conf.to_string(),
            debug: debug == "1",
        };
        let code = super::run_with(Path::new(dir), opts);
        // Leave without running anything inherited from the server.
        sys::exit_now(code);
    }
    format!("ok {pid}")
}
