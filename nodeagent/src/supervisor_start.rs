//! Starting supervisors. The fast path asks the fork server
//! (`droverd --stepd-server`, one per agent) to fork one; if the server is
//! not available the agent exec's `droverd --stepd JOBDIR` itself.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::stepd::sys;

struct Server {
    chan: OwnedFd,
    child: std::process::Child,
}

/// Hands out supervisors; shared by all launches.
pub struct Spawner {
    exe: PathBuf,
    /// Use the fork server at all.
    enabled: bool,
    /// The server, and when it was last (re)started.
    server: Mutex<(Option<Server>, Option<Instant>)>,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner").field("exe", &self.exe).finish()
    }
}

fn start_server(exe: &Path) -> Result<Server, String> {
    let (ours, theirs) = sys::seqpacket_pair().map_err(|e| format!("socketpair: {e}"))?;
    sys::set_recv_timeout(&ours, 10);
    let child = std::process::Command::new(exe)
        .arg("--stepd-server")
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {} --stepd-server: {e}", exe.display()))?;
    Ok(Server { chan: ours, child })
}

impl Spawner {
    /// Start the fork server (blocking); without it, launches exec the supervisor.
    pub fn new(exe: &Path) -> Spawner {
        let server = match start_server(exe) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!("{e}; supervisors will be exec'ed");
                None
            }
        };
        Spawner {
            exe: exe.to_path_buf(),
            enabled: true,
            server: Mutex::new((server, Some(Instant::now()))),
        }
    }

    /// A spawner that never uses the fork server.
    pub fn exec_only(exe: &Path) -> Spawner {
        Spawner {
            exe: exe.to_path_buf(),
            enabled: false,
            server: Mutex::new((None, None)),
        }
    }

    /// Start a supervisor for `dir` through the fork server. Returns the read
    /// end of its notify pipe. Blocking (a fork in the server, ~0.1 ms).
    pub fn spawn_forked(&self, dir: &Path, conf: &Path, debug: bool) -> Result<OwnedFd, String> {
        if !self.enabled {
            return Err("fork server disabled".into());
        }
        let (rd, wr) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let (rd, wr) = (OwnedFd::from(rd), OwnedFd::from(wr));
        let mut msg = Vec::new();
        msg.extend_from_slice(dir.as_os_str().as_encoded_bytes());
        msg.push(0);
        msg.extend_from_slice(conf.as_os_str().as_encoded_bytes());
        msg.push(0);
        msg.push(if debug { b'1' } else { b'0' });

        let mut guard = self.server.lock().unwrap_or_else(|p| p.into_inner());
        if guard.0.is_none() {
            // Retry starting the server at most every 10 s.
            let due = guard
                .1
                .is_none_or(|t| t.elapsed() > Duration::from_secs(10));
            if due {
                guard.1 = Some(Instant::now());
                match start_server(&self.exe) {
                    Ok(s) => {
                        tracing::info!("supervisor fork server restarted");
                        guard.0 = Some(s);
                    }
                    Err(e) => tracing::warn!("{e}"),
                }
            }
        }
        let Some(server) = guard.0.as_mut() else {
            return Err("no fork server".into());
        };
        let chan = server.chan.as_raw_fd();
        if let Err(e) = sys::send_with_fd(chan, &msg, wr.as_raw_fd()) {
            // Not delivered: no supervisor was started; the caller may exec one.
            self.drop_server(&mut guard);
            return Err(format!("fork server: {e}"));
        }
        drop(wr);
        let mut buf = [0u8; 512];
        match sys::recv_with_fds(chan, &mut buf) {
            Ok((n, extra)) if n > 0 => {
                for fd in extra {
                    // Unexpected descriptors are closed.
                    sys::close(fd);
                }
                let answer = String::from_utf8_lossy(&buf[..n]).into_owned();
                if answer.starts_with("ok ") {
                    Ok(rd)
                } else {
                    // The server did not fork: the caller may exec a supervisor.
                    Err(format!("fork server: {answer}"))
                }
            }
            other => {
                // No answer: a supervisor may or may not have been forked.
                // Never start a second one; the notify pipe tells: either the
                // supervisor speaks on it, or it reaches EOF once the server
                // (holding the other copy of the write end) is gone.
                tracing::warn!("fork server did not answer ({other:?}); restarting it");
                self.drop_server(&mut guard);
                Ok(rd)
            }
        }
    }

    fn drop_server(&self, guard: &mut (Option<Server>, Option<Instant>)) {
        if let Some(mut s) = guard.0.take() {
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        guard.1 = Some(Instant::now());
    }
}
