//! Backup controllers: `SlurmctldHost` listed more than once, the first the
//! primary. Every controller shares `StateSaveLocation`; one at a time is
//! active, fenced by [`super::fence`].
//!
//! * A backup starts in standby: it serves `Ping` and `Takeover` only
//!   (everything else is refused with `NOT_ACTIVE`, see
//!   `drover_proto::standby`) and pings the controllers before it each
//!   second. When none has answered for `SlurmctldTimeout`, or on
//!   `scontrol takeover`, it takes control.
//! * Taking control (a backup, or the primary at start-up, which always
//!   takes control back as Slurm's does): ask every other controller that
//!   is active to relinquish (it writes its log, stops writing and steps
//!   down), raise the epoch, recover the state from the shared directory,
//!   serve.
//! * Stepping down on request: a backup goes back to standby (it executes
//!   itself again, a fresh process); the primary exits (`scontrol takeover`
//!   while it runs: Slurm's primary terminates too).

use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drover_conf::slurmconf::Config;
use drover_proto::client::Credential;
use drover_proto::{PingRequest, PingResponse, RelinquishRequest};
use tokio::sync::{watch, Notify};

/// This controller's place among the configured ones, and its state.
pub struct Ha {
    /// Index in `SlurmctldHost` (0: the primary).
    pub index: usize,
    /// Every controller's host name and `host:port`, in order.
    pub names: Vec<String>,
    pub addrs: Vec<String>,
    /// Serving (false in standby and while taking or giving up control).
    pub active: Arc<AtomicBool>,
    /// The fencing epoch held while active.
    pub epoch: AtomicU64,
    /// `scontrol takeover` arrived (standby).
    pub takeover: Notify,
    /// Control was requested by another controller; the owner is stopping.
    pub stepping_down: AtomicBool,
    /// Set once the owner stopped and the log is on disk (answers the
    /// request).
    pub stopped: watch::Sender<bool>,
    /// `SlurmctldTimeout`.
    pub timeout: Duration,
    /// SlurmUser's uid (may ask for a takeover, as root may).
    pub admin_uid: u32,
    pub cluster: String,
    pub start_time: i64,
}

impl Ha {
    /// Which controller `host` is. With one `SlurmctldHost` that is the
    /// primary whatever the host's name; with several, the host must be one
    /// of them (Slurm's "This host not a valid controller").
    pub fn new(cfg: &Config, host: &str, admin_uid: u32, now: i64) -> Result<Ha, String> {
        let names: Vec<String> = cfg.slurmctld_host.iter().map(|h| h.name.clone()).collect();
        let addrs: Vec<String> = cfg
            .controller_addrs()
            .split(',')
            .map(str::to_string)
            .collect();
        let short = host.split('.').next().unwrap_or(host);
        let index = if names.len() <= 1 {
            0
        } else {
            names
                .iter()
                .position(|n| n == host || n == short)
                .ok_or_else(|| {
                    format!(
                        "This host ({host}) not a valid controller: SlurmctldHost names {}",
                        names.join(", ")
                    )
                })?
        };
        Ok(Ha {
            index,
            names,
            addrs,
            active: Arc::new(AtomicBool::new(false)),
            epoch: AtomicU64::new(0),
            takeover: Notify::new(),
            stepping_down: AtomicBool::new(false),
            stopped: watch::channel(false).0,
            timeout: Duration::from_secs(cfg.slurmctld_timeout.max(1)),
            admin_uid,
            cluster: cfg.cluster_name.clone(),
            start_time: now,
        })
    }

    pub fn is_backup(&self) -> bool {
        self.index > 0
    }

    /// `primary`, `backup`, or `backupN` (N from 1) as scontrol ping says.
    pub fn mode(index: usize, count: usize) -> String {
        match index {
            0 => "primary".into(),
            1 if count == 2 => "backup".into(),
            i => format!("backup{i}"),
        }
    }

    /// This controller's host name as configured.
    pub fn name(&self) -> String {
        self.names
            .get(self.index)
            .cloned()
            .unwrap_or_else(drover_proto::auth::hostname)
    }

    /// What Ping answers in standby (the owner is not running).
    pub fn standby_ping(&self) -> PingResponse {
        PingResponse {
            host: self.name(),
            version: env!("CARGO_PKG_VERSION").into(),
            start_time: self.start_time,
            cluster: self.cluster.clone(),
            standby: true,
            index: self.index as u32,
            epoch: 0,
        }
    }
}

/// Why a backup takes control.
pub enum Why {
    Takeover,
    Silent(Duration),
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Takeover => write!(f, "scontrol takeover"),
            Why::Silent(d) => write!(
                f,
                "no controller before this one answered for {}s (SlurmctldTimeout)",
                d.as_secs()
            ),
        }
    }
}

/// Ping one controller (its own answer, not a failover to another).
async fn ping(addr: &str, cred: &Credential) -> Option<PingResponse> {
    let mut c = drover_proto::client::controller(addr, cred.clone()).ok()?;
    let mut req = tonic::Request::new(PingRequest {});
    req.set_timeout(Duration::from_secs(1));
    c.ping(req).await.ok().map(|r| r.into_inner())
}

/// Standby: watch the controllers before this one until they have all
/// been silent for `SlurmctldTimeout` (no answer to a ping, and the
/// heartbeat file in the state directory `dir` unchanged: an active
/// controller this host cannot reach but which still writes is left
/// alone), or a takeover is asked for.
pub async fn standby(ha: &Ha, cred: &Credential, dir: &std::path::Path) -> Why {
    tracing::info!(
        "standby: backup controller {} of {}, watching {} (SlurmctldTimeout {}s)",
        ha.index,
        ha.names.len(),
        ha.addrs[..ha.index].join(", "),
        ha.timeout.as_secs()
    );
    let mut heard = Instant::now();
    let mut beat = super::fence::heartbeat(dir);
    let mut warned = false;
    loop {
        tokio::select! {
            _ = ha.takeover.notified() => return Why::Takeover,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let mut answered = false;
        for addr in &ha.addrs[..ha.index] {
            if ping(addr, cred).await.is_some() {
                answered = true;
            }
        }
        let now_beat = super::fence::heartbeat(dir);
        let beating = now_beat != beat;
        beat = now_beat;
        if answered || beating {
            if !answered && !warned {
                tracing::warn!(
                    "no controller answers, but the heartbeat in the state directory goes on: \
                     not taking over"
                );
                warned = true;
            }
            warned &= !answered;
            heard = Instant::now();
        }
        if heard.elapsed() >= ha.timeout {
            return Why::Silent(heard.elapsed());
        }
    }
}

/// Before taking control: every other controller that answers as active
/// is asked to relinquish, and answers once it has written its log and
/// stopped writing. One that cannot be reached is fenced by the epoch.
pub async fn claim(ha: &Ha, cred: &Credential) {
    for (i, addr) in ha.addrs.iter().enumerate() {
        if i == ha.index {
            continue;
        }
        let Some(p) = ping(addr, cred).await else {
            continue;
        };
        if p.standby {
            continue;
        }
        tracing::info!(
            "controller {} ({addr}) is active: asking it to relinquish",
            p.host
        );
        let Ok(mut c) = drover_proto::client::controller(addr, cred.clone()) else {
            continue;
        };
        let mut req = tonic::Request::new(RelinquishRequest { to_host: ha.name() });
        req.set_timeout(Duration::from_secs(60));
        match c.relinquish(req).await {
            Ok(_) => tracing::info!("controller {} relinquished control", p.host),
            Err(s) => tracing::warn!(
                "controller {} did not answer the request to relinquish ({}); fencing it",
                p.host,
                s.message()
            ),
        }
    }
}

/// A stop (SIGTERM, SIGINT) has arrived: set by the signal handler itself,
/// not by the task that reads the signals, which may not run again before
/// this process executes itself anew ([`restart_in_standby`]).
static STOP_ASKED: AtomicBool = AtomicBool::new(false);

/// Note every SIGTERM and SIGINT in [`STOP_ASKED`] as it arrives (beside
/// the runtime's own handling of them).
pub fn note_stop_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        if let Err(e) = drover_proto::sys::note_signal(sig, &STOP_ASKED) {
            tracing::warn!("signal {sig}: {e}");
        }
    }
}

/// Before executing this program anew: from now on a stop ends the process
/// at once (stepped down, it has nothing to write), as it would the fresh
/// process before its handlers are set; true when one came before (its
/// handler ran, the task that reads it may not have), so that it is not
/// lost in the exec.
fn stop_asked_before_exec() -> bool {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        drover_proto::sys::signal_default(sig);
    }
    STOP_ASKED.load(Ordering::SeqCst)
}

/// Back to standby: this program again, from the start, same arguments
/// (every descriptor is close-on-exec). `/proc/self/exe`: the same binary
/// even if an upgrade replaced the file meanwhile. Returns on failure, and
/// with 0 when a stop arrived meanwhile (not lost in the exec).
pub fn restart_in_standby() -> i32 {
    if stop_asked_before_exec() {
        tracing::info!("signal received, shutting down");
        return 0;
    }
    tracing::info!("back to standby");
    let err = std::process::Command::new("/proc/self/exe")
        .args(std::env::args_os().skip(1))
        .exec();
    tracing::error!("cannot go back to standby: {err}");
    1
}

/// Mark the hand-over done (the log is on disk): the pending Relinquish
/// answers.
pub fn stepped_down(ha: &Ha) {
    ha.active.store(false, Ordering::Release);
    ha.stopped.send_replace(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        drover_conf::slurmconf::parse_str(text, "t.conf", &mut |_: &str| Err("none".to_string()))
            .unwrap()
            .0
    }

    #[test]
    fn a_host_finds_its_place() {
        let c = cfg("SlurmctldHost=a(10.0.0.1)\nSlurmctldHost=b(10.0.0.2)\nSlurmctldPort=7000\n");
        let b = Ha::new(&c, "b.example.org", 0, 0).unwrap();
        assert_eq!(b.index, 1);
        assert!(b.is_backup());
        assert_eq!(b.addrs, vec!["10.0.0.1:7000", "10.0.0.2:7000"]);
        let e = Ha::new(&c, "z", 0, 0).err().unwrap();
        assert!(e.contains("This host (z) not a valid controller"), "{e}");
        let one = cfg("SlurmctldHost=a\n");
        assert_eq!(Ha::new(&one, "anything", 0, 0).unwrap().index, 0);
        assert_eq!(Ha::mode(0, 2), "primary");
        assert_eq!(Ha::mode(1, 2), "backup");
        assert_eq!(Ha::mode(2, 3), "backup2");
    }

    /// A stop that arrives while a backup steps down is seen before it
    /// executes itself again (the task that reads the signals may not run
    /// before the exec), and from then on a stop takes the default action.
    #[test]
    fn a_stop_while_going_back_to_standby_is_not_lost() {
        note_stop_signals();
        assert!(!STOP_ASKED.load(Ordering::SeqCst));
        assert!(!drover_proto::sys::signal_is_default(libc::SIGTERM));
        // (Handled just above: the test goes on.)
        drover_proto::sys::raise(libc::SIGTERM);
        assert!(stop_asked_before_exec());
        assert!(drover_proto::sys::signal_is_default(libc::SIGTERM));
    }
}
