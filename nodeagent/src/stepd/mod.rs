//! The per-job supervisor (`droverd --stepd JOBDIR`): plain std + libc,
//! single-threaded, one `poll` loop.
//!
//! It starts its own session, becomes a child subreaper (so every process
//! the job creates, even double-forked daemons, stays its descendant),
//! listens on its control socket (`stepd_socket`, see [`protocol`]), starts the script as
//! the user, waits for it, kills whatever the job left behind, writes
//! `JOBDIR/status` atomically, answers `wait` clients and exits.

pub mod hooks;
pub mod kill;
pub mod protocol;
pub mod run_script;
pub use crate::sys;
pub mod zygote;

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prost::Message;

use crate::cgroup::job::JobCgroup;
use crate::cgroup::pool::BASE_FILE;
use crate::cgroup::Plan;
use crate::status::{JobStatus, LAUNCH_FILE, LOG_FILE, SCRIPT_FILE};
use crate::stepd_socket;
use protocol::Request;

/// The cgroup plan the agent writes next to the launch record.
pub const CGROUP_PLAN_FILE: &str = "cgroup.plan";

/// Environment variable naming the fd of the agent's notify pipe (the
/// agent passes the pipe as the supervisor's stdout: `1`).
pub const NOTIFY_FD_ENV: &str = "DROVER_STEPD_NOTIFY_FD";
/// Environment variable carrying the agent's config path (for `SLURM_CONF`).
pub const CONF_ENV: &str = "DROVER_STEPD_CONF";
/// Set to `1` to log routine events to `stepd.log` too (agent `-v`).
pub const DEBUG_ENV: &str = "DROVER_STEPD_DEBUG";

/// A request line may not be longer than this.
const MAX_LINE: usize = 4096;

/// `JOBDIR/stepd.log`, opened on the first message.
struct Log {
    path: PathBuf,
    file: Option<std::fs::File>,
    debug: bool,
}

static LOG: Mutex<Option<Log>> = Mutex::new(None);

fn log_line(msg: &str, routine: bool) {
    let mut guard = LOG.lock().unwrap_or_else(|p| p.into_inner());
    let Some(log) = guard.as_mut() else {
        return;
    };
    if routine && !log.debug {
        return;
    }
    if log.file.is_none() {
        log.file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&log.path)
            .ok();
    }
    let Some(f) = log.file.as_mut() else {
        return;
    };
    let stamp = {
        use drover_conf::datetime::{fmt_iso, Utc, Zone};
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        format!("{}Z", fmt_iso(&Utc.to_tm(now)))
    };
    let _ = writeln!(f, "{stamp} stepd[{}]: {msg}", std::process::id());
}

/// A message that is always written (errors, anomalies).
fn log(msg: &str) {
    log_line(msg, false);
}

/// A routine message, written only in debug mode.
fn debug(msg: &str) {
    log_line(msg, true);
}

/// The agent's notify pipe (absent when the supervisor runs on its own).
struct Notify(Option<RawFd>);

impl Notify {
    /// Take the pipe `fd` onto a private close-on-exec descriptor; `fd`
    /// then points at /dev/null so that nothing else can write into the
    /// protocol (it is stdout when the agent exec'ed us).
    fn take(fd: Option<RawFd>) -> Notify {
        let Some(fd) = fd.filter(|&fd| fd >= 0 && sys::is_fifo(fd)) else {
            return Notify(None);
        };
        let Some(private) = sys::move_to_private_fd(fd) else {
            return Notify(None);
        };
        sys::set_blocking(private);
        Notify(Some(private))
    }

    fn send(&self, line: &str) {
        if let Some(fd) = self.0 {
            sys::write_fd(fd, line.as_bytes());
        }
    }
}

impl Drop for Notify {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            sys::close(fd);
        }
    }
}

struct Client {
    stream: UnixStream,
    buf: Vec<u8>,
    waiting: bool,
    /// The peer closed its side: no more reads (kept only to answer `wait`).
    eof: bool,
    dead: bool,
}

struct Supervisor {
    script_pid: i32,
    sigfd: RawFd,
    /// The control socket; closed once the job has ended (late clients
    /// then read the status file).
    listener: Option<UnixListener>,
    clients: Vec<Client>,
    kill_deadline: Option<Instant>,
    timeout: bool,
    cg: Option<JobCgroup>,
}

/// How the supervisor was started.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Write end of the agent's notify pipe.
    pub notify_fd: Option<RawFd>,
    /// The agent's config path (`SLURM_CONF` of the job).
    pub conf: String,
    /// Log routine events to `stepd.log`.
    pub debug: bool,
}

/// Entry point of `droverd --stepd JOBDIR` (options from the environment);
/// returns the process exit code.
pub fn run(jobdir: &Path) -> i32 {
    let opts = Options {
        notify_fd: std::env::var(NOTIFY_FD_ENV)
            .ok()
            .and_then(|v| v.parse::<RawFd>().ok()),
        conf: std::env::var(CONF_ENV).unwrap_or_default(),
        debug: std::env::var(DEBUG_ENV).is_ok_and(|v| v == "1"),
    };
    run_with(jobdir, opts)
}

/// The supervisor proper (also entered by forked children of the fork server).
pub fn run_with(jobdir: &Path, opts: Options) -> i32 {
    *LOG.lock().unwrap_or_else(|p| p.into_inner()) = Some(Log {
        path: jobdir.join(LOG_FILE),
        file: None,
        debug: opts.debug,
    });
    std::panic::set_hook(Box::new(|info| log(&format!("panic: {info}"))));
    sys::set_process_name("drover-stepd");
    // Hold no directory busy (the job itself runs in its work dir).
    let _ = std::env::set_current_dir("/");
    let notify = Notify::take(opts.notify_fd);
    sys::setsid();
    sys::set_child_subreaper();
    // Children must be waited for (an inherited SIG_IGN would auto-reap them).
    drover_proto::sys::signal_default(libc::SIGCHLD);
    {
        for sig in [
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGQUIT,
            libc::SIGUSR1,
            libc::SIGUSR2,
            libc::SIGPIPE,
        ] {
            drover_proto::sys::signal_ignore(sig);
        }
    }
    let conf = opts.conf;

    let req = match std::fs::read(jobdir.join(LAUNCH_FILE)) {
        Ok(bytes) => match drover_proto::LaunchRequest::decode(bytes.as_slice()) {
            Ok(r) => r,
            Err(e) => return launch_failed(jobdir, &notify, &format!("bad launch record: {e}")),
        },
        Err(e) => {
            return launch_failed(
                jobdir,
                &notify,
                &format!(
                    "cannot read launch record: {}",
                    sys::strerror(e.raw_os_error().unwrap_or(0))
                ),
            )
        }
    };
    debug(&format!("job {} on {}: starting", req.job_id, req.node));

    let sigfd = match sys::signalfd_for(&[libc::SIGCHLD]) {
        Ok(fd) => fd,
        Err(e) => return launch_failed(jobdir, &notify, &e),
    };
    let listener = match stepd_socket::listen(jobdir) {
        Ok(l) => l,
        Err(e) => return launch_failed(jobdir, &notify, &e),
    };
    let _ = listener.set_nonblocking(true);

    let hooks = std::fs::read_to_string(jobdir.join(hooks::HOOKS_FILE))
        .map(|t| hooks::Hooks::parse(&t))
        .unwrap_or_default();
    let cg = match setup_cgroup(jobdir) {
        Ok(cg) => cg,
        Err(reason) => {
            // The node's fault, not the job's: the controller drains the
            // node with this reason and requeues the job.
            drop(listener);
            let mut st = JobStatus::launch_failure(&reason, sys::now_secs());
            st.node_failed = true;
            return finish_failed(jobdir, &notify, st);
        }
    };
    if !hooks.prolog.is_empty() {
        let env = hooks::hook_env(&req, &hooks, "prolog_slurmd", None);
        if let Err(e) = hooks::run_root(&hooks.prolog, &env, hooks.timeout) {
            drop(listener);
            if let Some(cg) = &cg {
                cg.kill_all();
                let _ = cg.remove();
            }
            let mut st = JobStatus::launch_failure(&format!("Prolog failed: {e}"), sys::now_secs());
            st.prolog_failed = true;
            return finish_failed(jobdir, &notify, st);
        }
    }
    let extras = run_script::Extras {
        join: cg.as_ref().map(JobCgroup::join_files).unwrap_or_default(),
        task_prolog: (!hooks.task_prolog.is_empty())
            .then(|| std::ffi::CString::new(hooks.task_prolog.clone()).ok())
            .flatten(),
        local_gpu_index: cg.as_ref().is_some_and(|c| !c.plan.deny.is_empty()),
    };
    let script_pid = match run_script::spawn_script(&req, &jobdir.join(SCRIPT_FILE), &conf, &extras)
    {
        Ok(pid) => pid,
        Err(reason) => {
            drop(listener);
            if let Some(cg) = &cg {
                cg.kill_all();
                let _ = cg.remove();
            }
            return launch_failed(jobdir, &notify, &reason);
        }
    };
    debug(&format!(
        "job {}: script started, pid {script_pid}",
        req.job_id
    ));
    notify.send(&format!("started {script_pid}\n"));

    let mut sup = Supervisor {
        script_pid,
        sigfd,
        listener: Some(listener),
        clients: Vec::new(),
        kill_deadline: None,
        timeout: false,
        cg,
    };
    let wstatus = sup.run_loop();
    let end_time = sys::now_secs();
    let (exit_code, signal) = if libc::WIFEXITED(wstatus) {
        (libc::WEXITSTATUS(wstatus), 0)
    } else if libc::WIFSIGNALED(wstatus) {
        (0, libc::WTERMSIG(wstatus))
    } else {
        (1, 0)
    };
    if let Some(cg) = &sup.cg {
        cg.kill_all();
    }
    kill::kill_all_and_reap(sigfd);
    let (mut cpu_time_usec, mut max_rss_kb) = children_usage();
    let mut oom = false;
    if let Some(cg) = &sup.cg {
        let u = cg.usage();
        if let Some(c) = u.cpu_usec {
            cpu_time_usec = c;
        }
        if let Some(m) = u.mem_peak_kb {
            max_rss_kb = m;
        }
        let kills = cg.oom_kills();
        if kills > 0 {
            oom = true;
            report_oom(&req, kills, &cg.plan);
        }
    }
    let mut epilog_failed = false;
    if !hooks.epilog.is_empty() {
        let env = hooks::hook_env(&req, &hooks, "epilog_slurmd", Some((exit_code, signal)));
        if let Err(e) = hooks::run_root(&hooks.epilog, &env, hooks.timeout) {
            log(&format!("job {}: Epilog failed: {e}", req.job_id));
            epilog_failed = true;
        }
    }
    let st = JobStatus {
        exit_code,
        signal,
        timeout: sup.timeout,
        launch_failed: false,
        failure: String::new(),
        cpu_time_usec,
        max_rss_kb,
        end_time,
        oom,
        prolog_failed: false,
        epilog_failed,
        node_failed: false,
    };
    if let Err(e) = st.write_atomic(jobdir) {
        log(&format!("cannot write status file: {e}"));
    }
    debug(&format!(
        "job {}: ended, exit code {exit_code}, signal {signal}, timeout {}",
        req.job_id, sup.timeout
    ));
    // No new clients from here on: late ones find the status file instead.
    sup.listener = None;
    let line = st.done_line();
    notify.send(&line);
    sup.answer_waiters(&line);
    // The groups go after the report: their removal (the kernel frees each
    // group's state under its global cgroup lock, and waits for the last
    // exiting processes) does not delay the job's end or the next launch.
    // The agent keeps a relaunch of this job waiting until this process
    // has exited (its end of the notify pipe closes then).
    if let Some(cg) = &sup.cg {
        if let Err(e) = cg.release() {
            log(&e);
        }
    }
    drop(sup);
    0
}

/// Build the job's cgroups from the agent's plan (none without a plan).
fn setup_cgroup(jobdir: &Path) -> Result<Option<JobCgroup>, String> {
    let text = match std::fs::read_to_string(jobdir.join(CGROUP_PLAN_FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read the cgroup plan: {e}")),
    };
    let plan = Plan::parse(&text)?;
    let mut cg = JobCgroup::open(plan);
    match cg.create_or_reuse() {
        Ok(warnings) => {
            for w in warnings {
                log(&w);
            }
            // For sstat (`usage.rs`), which reads the groups too. Written
            // for every job, zero included: a recycled directory's file is
            // written over, never removed and made again.
            let path = jobdir.join(BASE_FILE);
            if let Err(e) = drover_proto::private::rewrite(&path, cg.base.to_text().as_bytes()) {
                log(&format!("cannot write {}: {e}", path.display()));
            }
            Ok(Some(cg))
        }
        Err(e) => {
            let _ = cg.remove();
            Err(format!("cgroup setup failed: {}", crate::cgroup::plain(&e)))
        }
    }
}

/// Tell the user, in the job's error file, that the memory limit killed
/// something (Slurm's wording, plus what the job asked for).
fn report_oom(req: &drover_proto::LaunchRequest, kills: u64, plan: &Plan) {
    let io = run_script::io_paths(req);
    let path = io.stderr.unwrap_or(io.stdout);
    let limit = plan
        .mem_bytes
        .map(|b| drover_conf::units::format_mem_mb(b / (1024 * 1024)))
        .unwrap_or_else(|| "unlimited".into());
    let asked = drover_conf::units::format_mem_mb(plan.mem_request_mb);
    let line = format!(
        "drover-stepd: error: Detected {kills} oom_kill event{} in StepId={}.batch. Some of the step tasks have been OOM Killed. \
The job asked for {asked} of memory on this node (memory limit {limit}); resubmit with a larger --mem (or --mem-per-cpu).\n",
        if kills == 1 { "" } else { "s" },
        req.job_id,
    );
    if let Err(e) = append_as_owner(&path, req.uid, line.as_bytes()) {
        log(&format!("cannot report OOM in {path}: {e}"));
    }
}

/// Append to a file the job's user owns, without following symlinks (the
/// supervisor is root; the user controls the path).
fn append_as_owner(path: &str, uid: u32, data: &[u8]) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let md = f.metadata().map_err(|e| e.to_string())?;
    if !md.is_file() || md.uid() != uid {
        return Err("not a regular file owned by the job's user".into());
    }
    (&f).write_all(data).map_err(|e| e.to_string())
}

/// The script could not start: record it, tell the agent, exit.
fn launch_failed(jobdir: &Path, notify: &Notify, reason: &str) -> i32 {
    finish_failed(
        jobdir,
        notify,
        JobStatus::launch_failure(reason, sys::now_secs()),
    )
}

fn finish_failed(jobdir: &Path, notify: &Notify, st: JobStatus) -> i32 {
    let reason = st.failure.clone();
    log(&format!("launch failed: {reason}"));
    if let Err(e) = st.write_atomic(jobdir) {
        log(&format!("cannot write status file: {e}"));
    }
    notify.send(&format!("failed {}\n", st.failure));
    notify.send(&st.done_line());
    0
}

fn children_usage() -> (u64, u64) {
    let ru = sys::children_rusage();
    let usec = |t: libc::timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
    (
        usec(ru.ru_utime) + usec(ru.ru_stime),
        ru.ru_maxrss.max(0) as u64,
    )
}

impl Supervisor {
    /// Serve requests until the script has exited; returns its wait status.
    fn run_loop(&mut self) -> i32 {
        loop {
            // Reap first: orphans re-parented to us, and the script itself.
            let (reaped, _) = kill::reap_nohang();
            if let Some(&(_, st)) = reaped.iter().find(|(pid, _)| *pid == self.script_pid) {
                return st;
            }

            let mut pfds: Vec<libc::pollfd> = vec![
                libc::pollfd {
                    fd: self.sigfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    // poll skips a negative descriptor.
                    fd: self.listener.as_ref().map_or(-1, |l| l.as_raw_fd()),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let polled: Vec<usize> = (0..self.clients.len())
                .filter(|&i| !self.clients[i].eof)
                .collect();
            for &i in &polled {
                pfds.push(libc::pollfd {
                    fd: self.clients[i].stream.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
            let timeout_ms = match self.kill_deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    left.as_millis().min(60_000) as i32
                }
            };
            sys::poll(&mut pfds, timeout_ms);

            if let Some(d) = self.kill_deadline {
                if Instant::now() >= d {
                    log("kill wait expired: SIGKILL");
                    self.signal_job(libc::SIGKILL);
                    self.kill_deadline = None;
                }
            }
            if pfds[0].revents != 0 {
                sys::drain_signalfd(self.sigfd);
            }
            if pfds[1].revents != 0 {
                self.accept_clients();
            }
            for (k, &i) in polled.iter().enumerate() {
                if pfds[2 + k].revents != 0 {
                    self.serve_client(i);
                }
            }
            self.clients.retain(|c| !c.dead);
        }
    }

    fn accept_clients(&mut self) {
        let Some(listener) = &self.listener else {
            return;
        };
        loop {
            match listener.accept() {
                // Anyone may connect to an abstract name: only the agent's
                // user (root) is served; others are hung up on.
                Ok((stream, _)) if !stepd_socket::trusted(&stream) => {}
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(true);
                    self.clients.push(Client {
                        stream,
                        buf: Vec::new(),
                        waiting: false,
                        eof: false,
                        dead: false,
                    });
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
        }
    }

    fn serve_client(&mut self, i: usize) {
        let mut chunk = [0u8; 1024];
        loop {
            let n = match self.clients[i].stream.read(&mut chunk) {
                Ok(0) => {
                    let c = &mut self.clients[i];
                    c.eof = true;
                    if !c.waiting {
                        c.dead = true;
                    }
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.clients[i].dead = true;
                    return;
                }
            };
            self.clients[i].buf.extend_from_slice(&chunk[..n]);
            if self.clients[i].buf.len() > MAX_LINE && !self.clients[i].buf.contains(&b'\n') {
                self.clients[i].dead = true;
                return;
            }
        }
        while let Some(pos) = self.clients[i].buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.clients[i].buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line).into_owned();
            let reply = match Request::parse(&line) {
                Ok(req) => self.handle(i, req),
                Err(e) => Some(format!("error {e}\n")),
            };
            if let Some(r) = reply {
                if self.clients[i].stream.write_all(r.as_bytes()).is_err() {
                    self.clients[i].dead = true;
                    return;
                }
            }
        }
        let c = &mut self.clients[i];
        if c.eof && !c.waiting {
            c.dead = true;
        }
    }

    fn handle(&mut self, client: usize, req: Request) -> Option<String> {
        match req {
            Request::Signal { signal, batch_only } => {
                debug(&format!("signal {signal} (batch only: {batch_only})"));
                if batch_only {
                    // The script is not reaped yet: its pid is still its own.
                    let _ = drover_proto::sys::kill(self.script_pid, signal);
                } else {
                    self.signal_job(signal);
                }
                Some("ok\n".into())
            }
            Request::Terminate { kill_wait, timeout } => {
                debug(&format!(
                    "terminate (kill wait {kill_wait}s, timeout: {timeout})"
                ));
                if timeout {
                    self.timeout = true;
                }
                // A suspended (frozen) job must run to see SIGTERM.
                if let Some(cg) = &self.cg {
                    cg.thaw();
                }
                self.signal_job(libc::SIGCONT);
                self.signal_job(libc::SIGTERM);
                if kill_wait == 0 {
                    self.signal_job(libc::SIGKILL);
                } else {
                    let d = Instant::now() + Duration::from_secs(u64::from(kill_wait));
                    self.kill_deadline = Some(match self.kill_deadline {
                        Some(old) if old < d => old,
                        _ => d,
                    });
                }
                Some("ok\n".into())
            }
            Request::Wait => {
                self.clients[client].waiting = true;
                None
            }
            Request::Status => Some(format!("running {}\n", self.script_pid)),
        }
    }

    /// Signal every process of the job: the script's group, the
    /// supervisor's descendants and whatever is in the job's cgroup.
    fn signal_job(&self, sig: i32) {
        kill::signal_all(sig, Some(self.script_pid));
        if let Some(cg) = &self.cg {
            if sig == libc::SIGKILL {
                cg.kill_all();
                return;
            }
            let me = std::process::id() as i32;
            for pid in cg.pids().into_iter().filter(|p| *p != me) {
                let _ = drover_proto::sys::kill(pid, sig);
            }
        }
    }

    fn answer_waiters(&mut self, line: &str) {
        for c in self.clients.iter_mut().filter(|c| c.waiting && !c.dead) {
            let _ = c.stream.set_nonblocking(false);
            let _ = c.stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = c.stream.write_all(line.as_bytes());
        }
    }
}
