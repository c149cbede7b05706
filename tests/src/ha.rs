//! Backup controllers in multi-host tests ([`crate::Spec::backup_ctld`]):
//! the primary on host `ctl` (log `droverctld`), the backup on `ctl2`
//! (log `droverctld-ctl2`), one shared state directory.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::Cluster;

/// The log line a controller writes each time it takes control.
pub const IN_CONTROL: &str = "in control (state epoch";

impl Cluster {
    /// Start the backup controller on `ctl2` and wait until it is in standby.
    pub fn start_backup_ctld(&mut self) -> Result<(), String> {
        let child = self
            .daemon_on("ctl2", "droverctld")
            .arg("-f")
            .arg(&self.conf)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(self.log("droverctld-ctl2"))
            .stderr(self.log("droverctld-ctl2"))
            .spawn()
            .map_err(|e| e.to_string())?;
        self.backup = Some(child);
        self.wait_log("droverctld-ctl2", "standby: backup controller", 1);
        Ok(())
    }

    /// Wait until `log` holds `needle` at least `count` times; the count.
    pub fn wait_log(&self, log: &str, needle: &str, count: usize) -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let n = self.log_text(log).matches(needle).count();
            if n >= count {
                return n;
            }
            assert!(
                Instant::now() < deadline,
                "{log} never logged {needle:?} {count} time(s):\n{}",
                crate::tail(&self.log_text(log))
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Send `sig` to the primary controller (kept, unless it is SIGKILL).
    pub fn signal_ctld(&mut self, sig: i32) {
        if sig == libc::SIGKILL {
            Cluster::kill(&mut self.ctld, sig);
        } else if let Some(c) = &self.ctld {
            let _ = crate::sys::kill(c.id() as i32, sig);
        }
    }

    /// Wait for the primary controller to exit by itself; its status code.
    pub fn wait_ctld_exit(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            let c = self.ctld.as_mut()?;
            if let Ok(Some(st)) = c.try_wait() {
                self.ctld = None;
                return st.code();
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
