//! The daemons `drover up` runs: started as its children, watched, and
//! stopped whatever happens.
//!
//! * SIGINT, SIGTERM and SIGHUP are caught from the very start of `drover up`
//!   ([`catch_signals`]); every wait polls [`interrupted`], so an interrupted
//!   start-up stops the daemons already running.
//! * Every early return drops the [`Daemons`], which stops them (SIGTERM,
//!   then SIGKILL after a grace period), last started first.
//! * If `drover up` itself is killed (`kill -9`), each daemon gets SIGTERM from
//!   the kernel: it is started with `PR_SET_PDEATHSIG` (the signal follows the
//!   death of the thread that forked it: always `drover up`'s main thread).

use std::fs;
use std::io::BufRead;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// Catch SIGINT, SIGTERM and SIGHUP: they only set a flag ([`interrupted`]).
pub fn catch_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // The handler is async-signal-safe: one atomic store.
        drover_proto::sys::signal_handler(sig, on_signal);
    }
}

/// The signal that asked `drover up` to stop, if any.
pub fn interrupted() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// `SIGKILL` for 9.
pub fn signal_name(sig: i32) -> String {
    crate::sbatch::options::SIGNALS
        .iter()
        .find(|(_, n)| *n as i32 == sig)
        .map_or_else(|| format!("signal {sig}"), |(name, _)| format!("SIG{name}"))
}

/// How a daemon ended, in words.
pub fn describe_exit(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => format!("was killed by signal {s} ({})", signal_name(s)),
        _ => "ended".to_string(),
    }
}

/// The last `n` lines of a log file.
pub fn log_tail(path: &Path, n: usize) -> String {
    let Ok(f) = fs::File::open(path) else {
        return String::new();
    };
    let lines: Vec<String> = std::io::BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub struct Daemon {
    pub name: &'static str,
    pub child: Child,
    pub log: PathBuf,
}

/// Why a wait ended without its condition.
#[derive(Debug)]
pub enum Halt {
    /// A signal asked drover up to stop.
    Signal(i32),
    /// A daemon died: the message says which, how, and its last log lines.
    Died(String),
    Timeout,
}

/// The daemons started so far; dropping it stops them.
#[derive(Default)]
pub struct Daemons {
    list: Vec<Daemon>,
}

impl Daemons {
    /// Start `bin args` with its output appended to `log`, to die with us.
    pub fn start(
        &mut self,
        name: &'static str,
        bin: &Path,
        args: &[&str],
        log: &Path,
    ) -> Result<(), String> {
        // Daemon logs name other users' jobs: 0600.
        let f =
            drover_proto::private::append(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let f2 = f.try_clone().map_err(|e| e.to_string())?;
        let parent = drover_proto::sys::getpid();
        let mut cmd = Command::new(bin);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(f2))
            .stderr(Stdio::from(f));
        // If drover up died before the prctl, the daemon does not outlive it.
        drover_proto::sys::die_with_parent(&mut cmd, libc::SIGTERM, Some(parent));
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        tracing::debug!(daemon = name, pid = child.id(), "started");
        self.list.push(Daemon {
            name,
            child,
            log: log.to_path_buf(),
        });
        Ok(())
    }

    /// The first daemon that has ended: which, how, and its log's last lines.
    pub fn dead(&mut self) -> Option<String> {
        for d in &mut self.list {
            if let Ok(Some(st)) = d.child.try_wait() {
                return Some(format!(
                    "{} (pid {}) {}; last lines of {}:\n{}",
                    d.name,
                    d.child.id(),
                    describe_exit(st),
                    d.log.display(),
                    log_tail(&d.log, 20)
                ));
            }
        }
        None
    }

    /// Poll `ready` until it holds, a signal comes, a daemon dies or
    /// `timeout` passes.
    pub fn wait_for(
        &mut self,
        timeout: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), Halt> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = interrupted() {
                return Err(Halt::Signal(s));
            }
            if let Some(msg) = self.dead() {
                return Err(Halt::Died(msg));
            }
            if ready() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Halt::Timeout);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The last lines of every daemon's log (for a start-up that timed out).
    pub fn logs(&self) -> String {
        self.list
            .iter()
            .map(|d| format!("--- {}\n{}", d.log.display(), log_tail(&d.log, 20)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stop every daemon, last started first: SIGTERM, SIGKILL after `grace`.
    pub fn stop_all(&mut self, grace: Duration) {
        while let Some(mut d) = self.list.pop() {
            stop(&mut d.child, grace);
            tracing::debug!(daemon = d.name, "stopped");
        }
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        self.stop_all(Duration::from_secs(10));
    }
}

fn stop(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_in_words() {
        assert_eq!(
            describe_exit(ExitStatus::from_raw(1 << 8)),
            "exited with status 1"
        );
        assert_eq!(
            describe_exit(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(40), "signal 40");
    }
}
