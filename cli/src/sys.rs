//! The commands' only `unsafe` code: terminal and time-zone calls of the C
//! library behind safe functions, each block with its `SAFETY:` reason.
//! (Process ids, signals, users and files: `drover_proto::sys`.)

/// The size of the terminal on standard input (rows, columns), if it is one.
pub fn term_size() -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ writes a winsize into a valid pointer.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        (libc::ioctl(0, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_row > 0)
            .then_some((ws.ws_row, ws.ws_col))
    }
}

/// Standard input's terminal in raw mode; the saved settings come back on drop.
pub struct RawMode(libc::termios);

impl RawMode {
    pub fn enter() -> Option<RawMode> {
        // SAFETY: termios calls on fd 0 with valid pointers to a zeroed
        // (valid) termios.
        unsafe {
            if libc::isatty(0) != 1 {
                return None;
            }
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                return None;
            }
            let saved = t;
            libc::cfmakeraw(&mut t);
            if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                return None;
            }
            Some(RawMode(saved))
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enter`.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &self.0) };
    }
}

/// Take the terminal on standard input when this process runs in its
/// foreground: ignore the job control signals, lead a process group of its
/// own and make it the foreground one. False when not interactive.
pub fn take_terminal() -> bool {
    // SAFETY: plain system calls on fd 0 and this process; signal
    // dispositions set to SIG_IGN.
    unsafe {
        if libc::isatty(0) != 1 {
            return false;
        }
        let before = libc::tcgetpgrp(0);
        if before < 0 || libc::getpgrp() != before {
            return false;
        }
        libc::signal(libc::SIGTSTP, libc::SIG_IGN);
        libc::signal(libc::SIGTTIN, libc::SIG_IGN);
        libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        let me = libc::getpid();
        libc::setpgid(me, me);
        libc::tcsetpgrp(0, me);
        true
    }
}

/// Put `pid` (a child not reaped yet) in a group of its own and make that
/// the terminal's foreground group.
pub fn give_terminal(pid: libc::pid_t) {
    // SAFETY: integer-only system calls on fd 0 and our child.
    unsafe {
        libc::setpgid(pid, pid);
        libc::tcsetpgrp(0, pid);
    }
}

/// The child `cmd` starts (already leading its own process group) makes
/// that group the terminal's foreground one before exec. SIGTTOU is still
/// ignored there (inherited), so a background group may do it; register
/// this before [`default_job_signals`].
pub fn foreground_in_child(cmd: &mut tokio::process::Command) {
    // SAFETY: only async-signal-safe calls (getpgrp, tcsetpgrp) between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::tcsetpgrp(0, libc::getpgrp());
            Ok(())
        });
    }
}

/// Make this process's group the terminal's foreground group again.
pub fn terminal_to_own_group() {
    // SAFETY: integer-only system calls on fd 0.
    unsafe { libc::tcsetpgrp(0, libc::getpgrp()) };
}

/// Give the terminal to the parent's process group.
pub fn terminal_to_parent_group() {
    // SAFETY: integer-only system calls on fd 0.
    unsafe { libc::tcsetpgrp(0, libc::getpgid(libc::getppid())) };
}

/// The command `cmd` starts gets the job control signals (SIGINT,
/// SIGQUIT, SIGTTIN, SIGTTOU) back at their defaults.
pub fn default_job_signals(cmd: &mut tokio::process::Command) {
    // SAFETY: only async-signal-safe calls (signal) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGTTIN, libc::SIGTTOU] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
}

/// Broken-down local time of `t` (localtime_r): (year, month 1-12, day,
/// hour, minute, second, weekday 0-6).
pub fn localtime(t: i64) -> Option<(i32, i32, i32, i32, i32, i32, i32)> {
    // SAFETY: localtime_r only writes into the zeroed (valid) tm we pass.
    unsafe {
        let tt: libc::time_t = t as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&tt, &mut tm).is_null() {
            return None;
        }
        Some((
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec,
            tm.tm_wday,
        ))
    }
}

/// The time of a local date (mktime, month from 0, out-of-range fields
/// normalised, daylight saving time found by the C library).
pub fn mktime(year: i32, month0: i32, day: i32, hour: i32, min: i32, sec: i32) -> Option<i64> {
    // SAFETY: mktime reads and normalises the zeroed (valid) tm we own.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        tm.tm_year = year - 1900;
        tm.tm_mon = month0;
        tm.tm_mday = day;
        tm.tm_hour = hour;
        tm.tm_min = min;
        tm.tm_sec = sec;
        tm.tm_isdst = -1;
        let t = libc::mktime(&mut tm);
        (t != -1).then_some(t as i64)
    }
}

// SIGPIPE, as a command-line tool wants it: writing to a closed standard
// output (`squeue | head`) ends the command quietly, as the default action
// does; but a write to a network or local socket whose peer went away
// (a controller that died mid-call; HTTP/2 writes with `writev`, which
// raises SIGPIPE) only fails that write, so the command reports it
// ("Unable to contact slurm controller") or fails over to a backup,
// instead of dying without a word. Installed once, first thing in `main`.
/// Install the SIGPIPE handler described above.
pub fn install_sigpipe() {
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
mod sigpipe_tests {
    use std::io::Write;

    /// With the handler in place a vectored write (`writev`, as HTTP/2
    /// writes) to a socket whose peer is gone fails with EPIPE and the
    /// process lives on; under the default action this test process would
    /// die (its own standard streams are fine).
    #[test]
    fn a_closed_socket_fails_the_write_only() {
        super::install_sigpipe();
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
