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
        crate::sys::take_terminal().then_some(Foreground)
    }

    /// Make the command's group (`pid`) the foreground one.
    pub fn give(&self, pid: libc::pid_t) {
        crate::sys::give_terminal(pid);
    }

    /// The command ended: salloc's group is the foreground again.
    pub fn take_back(&self) {
        crate::sys::terminal_to_own_group();
    }
}

impl Drop for Foreground {
    fn drop(&mut self) {
        crate::sys::terminal_to_parent_group();
    }
}

/// The command starts in a process group of its own with the job control
/// signals at their defaults (salloc ignores them). When salloc holds the
/// terminal, the child makes its group the foreground one itself, before
/// exec (the parent does too, in [`Foreground::give`]): whichever runs
/// first, the command never starts in the background.
pub fn own_group(cmd: &mut tokio::process::Command, tty: Option<&Foreground>) {
    cmd.process_group(0);
    if tty.is_some() {
        crate::sys::foreground_in_child(cmd);
    }
    crate::sys::default_job_signals(cmd);
}
