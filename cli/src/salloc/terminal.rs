//! salloc's command in its own foreground process group on the terminal,
//! as Slurm's salloc does: salloc takes the terminal (ignoring the job
//! control signals), puts its command in a new process group and makes
//! that the terminal's foreground group, takes it back when the command
//! ends, and gives it to its parent's group when it is done (`_reset_input_mode`).

/// The terminal while salloc holds it (interactive use only).
pub struct Foreground;

impl Foreground {
    /// Take the terminal on standard input when salloc runs in its
    /// foreground (Slurm's `is_interactive`); None otherwise.
    pub fn take() -> Option<Foreground> {
        // SAFETY: plain system calls on fd 0 and this process; signal
        // dispositions set to SIG_IGN.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let before = libc::tcgetpgrp(0);
            if before < 0 || libc::getpgrp() != before {
                return None;
            }
            libc::signal(libc::SIGTSTP, libc::SIG_IGN);
            libc::signal(libc::SIGTTIN, libc::SIG_IGN);
            libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            let me = libc::getpid();
            libc::setpgid(me, me);
            libc::tcsetpgrp(0, me);
            Some(Foreground)
        }
    }

    /// Make the command's group (`pid`) the foreground one.
    pub fn give(&self, pid: libc::pid_t) {
        // SAFETY: as above; the child is not reaped yet.
        unsafe {
            libc::setpgid(pid, pid);
            libc::tcsetpgrp(0, pid);
        }
    }

    /// The command ended: salloc's group is the foreground again.
    pub fn take_back(&self) {
        // SAFETY: as above.
        unsafe { libc::tcsetpgrp(0, libc::getpgrp()) };
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::tcsetpgrp(0, libc::getpgid(libc::getppid())) };
    }
}

/// The command starts in a process group of its own with the job control
/// signals at their defaults (salloc ignores them).
pub fn own_group(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTTIN, libc::SIGTTOU] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}
