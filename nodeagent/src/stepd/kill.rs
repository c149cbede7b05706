//! Signalling a job's processes and making sure none survives it.

use std::os::fd::RawFd;

use super::sys::{drain_signalfd, poll_one, waitpid};
use crate::proctree;

/// Send `sig` to every process of the job: the script's process group
/// (while the script has not been reaped, so the group id cannot have been
/// reused) and every descendant of the supervisor.
pub fn signal_all(sig: i32, pgid: Option<i32>) {
    let me = std::process::id() as i32;
    if let Some(g) = pgid.filter(|g| *g > 1) {
        let _ = drover_proto::sys::kill(-g, sig);
    }
    for pid in proctree::descendants(&proctree::scan(), me) {
        let _ = drover_proto::sys::kill(pid, sig);
    }
}

/// Reap every exited child without blocking. Returns the children's
/// `(pid, wait status)` pairs and whether any child is still alive.
pub fn reap_nohang() -> (Vec<(i32, i32)>, bool) {
    let mut out = Vec::new();
    loop {
        match waitpid(-1, libc::WNOHANG) {
            Ok(Some((pid, status))) => out.push((pid, status)),
            Ok(None) => return (out, true),
            Err(e) if e == libc::EINTR => continue,
            Err(_) => return (out, false), // ECHILD: no children at all
        }
    }
}

/// After the script ended: SIGKILL every remaining descendant and reap them
/// all, until the supervisor has no child left. Orphans of the job are
/// re-parented to the supervisor (it is a child subreaper), so "no child"
/// means "no process of the job".
pub fn kill_all_and_reap(sigfd: RawFd) {
    let me = std::process::id() as i32;
    loop {
        let (_, alive) = reap_nohang();
        if !alive {
            return;
        }
        for pid in proctree::descendants(&proctree::scan(), me) {
            let _ = drover_proto::sys::kill(pid, libc::SIGKILL);
        }
        // Wait for SIGCHLD, with a timeout in case a process forked between
        // the scan and the kill and has to be found again.
        poll_one(sigfd, 100);
        drain_signalfd(sigfd);
    }
}
