//! srun job steps on this node (issue 6): start the tasks of a step, stream
//! their output to srun and their exit statuses, forward srun's stdin and
//! signals, report the end to the controller.
//!
//! Each task is its own process (its own session, so a signal reaches what
//! it started too), run as the job's user with the job's environment, srun's
//! environment over it, and the step/task variables ([`env`]). When the job
//! has cgroups on this node, the tasks join `step_<id>` under the job's group.
//! If srun's connection closes before the tasks end, srun is gone: the tasks
//! are killed.

mod cpubind;
mod gpubind;
pub mod here;
mod start_tasks;
pub mod task_env;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use drover_proto::stepio::{read_frame, write_frame, Frame, Kind};
use drover_proto::{StepEndedRequest, StepLaunchRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tonic::{Request, Status};
use tracing::{debug, info, warn};

use crate::agent::Shared;
use crate::cgroup::step::StepStats;
use start_tasks::Task;

/// Running step tasks, by (job, step, node): one agent may serve several
/// nodes of a step.
type Running = HashMap<(u32, u32, String), StepTasks>;

/// One node's part of a running step.
struct StepTasks {
    /// Which run of the job (its restart count) the step belongs to.
    run: u32,
    /// The tasks' process groups.
    pgids: Vec<i32>,
}
static RUNNING: LazyLock<Mutex<Running>> = LazyLock::new(Default::default);

fn running() -> std::sync::MutexGuard<'static, Running> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

fn kill_groups(pgids: &[i32], sig: i32) {
    for &p in pgids {
        let _ = drover_proto::sys::kill(-p, sig);
    }
}

/// Signal every step task of a job on `node` (None: on every node this
/// agent serves) (signal 0: terminate, i.e. SIGCONT+SIGTERM now and SIGKILL
/// after `kill_wait` seconds).
pub fn signal_job(job_id: u32, node: Option<&str>, signal: i32, kill_wait: u32) {
    let pgids: Vec<i32> = running()
        .iter()
        .filter(|((j, _, n), _)| *j == job_id && node.is_none_or(|x| x == n))
        .flat_map(|(_, v)| v.pgids.iter().copied())
        .collect();
    signal_groups(pgids, signal, kill_wait);
}

/// Does the job have step tasks running on `node`?
pub fn has_tasks(job_id: u32, node: &str) -> bool {
    running().keys().any(|(j, _, n)| *j == job_id && n == node)
}

/// The jobs with step tasks running here: (job, node, run), each once.
/// The agent reports them with its jobs, so the controller can name those
/// it no longer runs here (an allocation that ended while this node was cut
/// off) and the agent kill their tasks.
pub fn running_jobs() -> Vec<(u32, String, u32)> {
    let mut v: Vec<(u32, String, u32)> = running()
        .iter()
        .map(|((j, _, n), t)| (*j, n.clone(), t.run))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Signals for steps whose tasks are not started yet (the controller's
/// signal overtook its launch request): applied when they start.
type Early = HashMap<(u32, u32), (i32, u32)>;
static EARLY: LazyLock<Mutex<Early>> = LazyLock::new(Default::default);

/// The same for one step (`scancel JOB.STEP`).
pub fn signal_step(job_id: u32, step_id: u32, signal: i32, kill_wait: u32) {
    let pgids: Vec<i32> = running()
        .iter()
        .filter(|((j, s, _), _)| *j == job_id && *s == step_id)
        .flat_map(|(_, v)| v.pgids.iter().copied())
        .collect();
    if pgids.is_empty() {
        let mut early = EARLY.lock().unwrap_or_else(|p| p.into_inner());
        if early.len() > 1024 {
            early.clear(); // steps that never came: do not grow
        }
        early.insert((job_id, step_id), (signal, kill_wait));
        return;
    }
    signal_groups(pgids, signal, kill_wait);
}

fn signal_groups(pgids: Vec<i32>, signal: i32, kill_wait: u32) {
    if pgids.is_empty() {
        return;
    }
    if signal != 0 {
        kill_groups(&pgids, signal);
        return;
    }
    kill_groups(&pgids, libc::SIGCONT);
    kill_groups(&pgids, libc::SIGTERM);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(u64::from(kill_wait.max(1)))).await;
        kill_groups(&pgids, libc::SIGKILL);
    });
}

/// Steps whose launch this agent has taken (started, starting or ended):
/// the controller repeats a launch when srun retries a step creation that it
/// could not answer (it died mid-call), and a repeat must not start the
/// tasks twice.
type Launched = HashSet<(u32, u32, String)>;
static LAUNCHED: LazyLock<Mutex<Launched>> = LazyLock::new(Default::default);

fn launched() -> std::sync::MutexGuard<'static, Launched> {
    LAUNCHED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start this node's tasks of a step; returns once they run (or failed to
/// start: the failure goes to srun as the task's output and exit status).
/// A repeated launch of the same step answers OK and does nothing. The work
/// runs in a task of its own, so a caller that goes away mid-call (the
/// controller killed) cannot leave tasks started but untracked.
pub async fn launch(shared: Arc<Shared>, req: StepLaunchRequest) -> Result<(), Status> {
    // By node too: one agent may serve several (emulated) nodes.
    let key = req.job.as_ref().map_or((0, 0, String::new()), |j| {
        (j.job_id, req.step_id, j.node.clone())
    });
    {
        let mut seen = launched();
        if seen.contains(&key) {
            debug!(
                "step {}.{} on {}: repeated launch ignored",
                key.0, key.1, key.2
            );
            return Ok(());
        }
        if seen.len() >= 100_000 {
            seen.clear(); // a repeat this much later cannot happen: do not grow
        }
        seen.insert(key.clone());
    }
    tokio::spawn(async move {
        let res = launch_once(shared, req).await;
        if res.is_err() {
            launched().remove(&key); // nothing started: a retry may try again
        }
        res
    })
    .await
    .unwrap_or_else(|e| Err(Status::internal(e.to_string())))
}

async fn launch_once(shared: Arc<Shared>, req: StepLaunchRequest) -> Result<(), Status> {
    let job = req.job.clone().unwrap_or_default();
    let step = req.step.clone().unwrap_or_default();
    let this = req
        .nodes
        .iter()
        .find(|n| n.node == job.node)
        .cloned()
        .ok_or_else(|| Status::invalid_argument("node is not part of the step"))?;
    let addr = format!("{}:{}", step.io_host, step.io_port);
    let sock = tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(&addr))
        .await
        .map_err(|_| Status::unavailable(format!("cannot reach srun at {addr}: timed out")))?
        .map_err(|e| Status::unavailable(format!("cannot reach srun at {addr}: {e}")))?;
    let _ = sock.set_nodelay(true);
    // Over TLS beyond loopback, this agent serving its certificate (srun
    // holds none): the tasks' input and output never cross in clear.
    let sock = tokio::time::timeout(
        Duration::from_secs(10),
        drover_proto::tls::secure_as_server(sock),
    )
    .await
    .map_err(|_| Status::unavailable(format!("srun at {addr}: TLS handshake timed out")))?
    .map_err(|e| Status::unavailable(format!("srun at {addr}: {e}")))?;
    let (rd, mut wr) = tokio::io::split(sock);
    write_frame(
        &mut wr,
        &Frame::new(Kind::Hello, this.node_id, step.io_key.clone()),
    )
    .await
    .map_err(|e| Status::unavailable(format!("srun at {addr}: {e}")))?;
    let s = shared.clone();
    let r = req.clone();
    let t = this.clone();
    let started = tokio::task::spawn_blocking(move || start_tasks::start_tasks(&s, &r, &t))
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
    let key = (job.job_id, req.step_id);
    let pgids: Vec<i32> = started.tasks.iter().filter_map(|t| t.pgid).collect();
    let run = job.info.as_ref().map_or(0, |i| i.restart_count);
    running().insert(
        (key.0, key.1, this.node.clone()),
        StepTasks {
            run,
            pgids: pgids.clone(),
        },
    );
    let early = EARLY.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
    if let Some((signal, kill_wait)) = early {
        signal_groups(pgids, signal, kill_wait);
    }
    info!(
        "step {}.{}: {} task(s) started on {}",
        job.job_id,
        req.step_id,
        started.tasks.len(),
        job.node
    );
    tokio::spawn(run_step(shared, req, this, started, rd, wr));
    Ok(())
}

async fn run_step(
    shared: Arc<Shared>,
    req: StepLaunchRequest,
    this: drover_proto::StepNode,
    started: start_tasks::Started,
    mut rd: tokio::io::ReadHalf<drover_proto::tls::Conn>,
    mut wr: tokio::io::WriteHalf<drover_proto::tls::Conn>,
) {
    let node = this.node.clone();
    let job_id = req.job.as_ref().map_or(0, |j| j.job_id);
    let step_id = req.step_id;
    let (tx, mut rx) = mpsc::channel::<Frame>(256);
    // Output also goes to whoever attached (sattach); none listening is fine.
    let (out_tx, _) = tokio::sync::broadcast::channel::<Frame>(1024);
    let attached = out_tx.clone();
    let writer = tokio::spawn(async move {
        let mut ok = true;
        while let Some(f) = rx.recv().await {
            if matches!(f.kind, Kind::Stdout | Kind::Stderr) {
                let _ = attached.send(f.clone());
            }
            if ok && write_frame(&mut wr, &f).await.is_err() {
                ok = false; // srun gone: drain, the reader side kills the tasks
            }
        }
        let _ = wr.shutdown().await;
    });
    // srun's frames, and stdin from attached clients, into one queue (a
    // frame read is not cancel-safe, so it has a task of its own).
    let (ctl_tx, mut ctl_rx) = mpsc::channel::<Option<Frame>>(64);
    let srun_tx = ctl_tx.clone();
    let reader = tokio::spawn(async move {
        loop {
            match read_frame(&mut rd).await {
                Ok(Some(f)) => {
                    if srun_tx.send(Some(f)).await.is_err() {
                        return;
                    }
                }
                Ok(None) | Err(_) => {
                    let _ = srun_tx.send(None).await;
                    return;
                }
            }
        }
    });
    let ranks: Vec<(u32, Option<i32>)> =
        started.tasks.iter().map(|t| (t.task_id, t.pgid)).collect();
    here::insert(
        job_id,
        step_id,
        &node,
        here::StepHere {
            uid: req.job.as_ref().map_or(0, |j| j.uid),
            tasks: here::task_pids(&ranks, &this.task_ids),
            cgroup: started.cgroup.clone(),
            output: out_tx,
            control: ctl_tx,
        },
    );
    let pgids: Vec<i32> = started.tasks.iter().filter_map(|t| t.pgid).collect();
    type Writer = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;
    let mut stdins: HashMap<u32, Writer> = HashMap::new();
    let mut terminal: Option<std::fs::File> = None;
    let mut waits = Vec::new();
    for mut task in started.tasks {
        if let Some(i) = task.stdin.take() {
            stdins.insert(task.task_id, Box::new(i));
        }
        if let Some(m) = &task.pty {
            if let (Ok(w), Ok(c)) = (m.try_clone(), m.try_clone()) {
                stdins.insert(task.task_id, Box::new(tokio::fs::File::from_std(w)));
                terminal = Some(c);
            }
        }
        waits.push(tokio::spawn(run_task(task, tx.clone())));
    }
    // Kept for the OOM message after the tasks end (srun reads until every
    // sender is gone).
    let notes = tx;
    // srun -> tasks: stdin and signals; srun gone -> kill.
    let control_pgids = pgids.clone();
    let control = tokio::spawn(async move {
        loop {
            match ctl_rx.recv().await {
                Some(Some(f)) => match f.kind {
                    Kind::Stdin => {
                        if f.data.is_empty() {
                            // End of input; a terminal stays open (closing
                            // the master would hang up the session).
                            if terminal.is_none() || f.task != 0 {
                                stdins.remove(&f.task);
                            }
                        } else if let Some(i) = stdins.get_mut(&f.task) {
                            if i.write_all(&f.data).await.is_err() || i.flush().await.is_err() {
                                stdins.remove(&f.task);
                            }
                        }
                    }
                    Kind::Winsize => {
                        if let Some(t) = &terminal {
                            let (rows, cols) = f.winsize_value();
                            set_winsize(t, rows, cols);
                        }
                    }
                    Kind::Signal => {
                        let (sig, _) = f.exit_status();
                        if (1..=64).contains(&sig) {
                            kill_groups(&control_pgids, sig);
                        }
                    }
                    _ => {}
                },
                Some(None) | None => {
                    debug!("step {job_id}.{step_id}: srun disconnected; killing the tasks");
                    kill_groups(&control_pgids, libc::SIGKILL);
                    return;
                }
            }
        }
    });
    let mut code = 0;
    let mut signal = 0;
    for w in waits {
        if let Ok((c, s)) = w.await {
            code = code.max(c);
            if s != 0 {
                signal = s;
            }
        }
    }
    control.abort();
    reader.abort();
    here::remove(job_id, step_id, &node);
    let name = format!("step_{step_id}");
    let stats = match &started.cgroup {
        Some(cg) => {
            let (cg, name) = (cg.clone(), name.clone());
            tokio::task::spawn_blocking(move || cg.step_stats(&name))
                .await
                .unwrap_or_default()
        }
        None => StepStats::default(),
    };
    if stats.oom_kills > 0 {
        // Slurm's slurmstepd line; srun prints it as an error from the node.
        let n = stats.oom_kills;
        let text = format!(
            "Detected {n} oom_kill event{} in StepId={job_id}.{step_id}. Some of the step tasks have been OOM Killed.",
            if n == 1 { "" } else { "s" }
        );
        let _ = notes
            .send(Frame::new(Kind::Error, 0, text.into_bytes()))
            .await;
    }
    running().remove(&(job_id, step_id, node.clone()));
    kill_groups(&pgids, libc::SIGKILL); // leftovers in the tasks' sessions
    if let Some(cg) = started.cgroup {
        let last =
            started.owns_job_group && !running().keys().any(|(j, _, n)| *j == job_id && *n == node);
        let _ = tokio::task::spawn_blocking(move || {
            cg.remove_step(&name);
            if last {
                cg.kill_all();
                let _ = cg.remove();
            }
        })
        .await;
    }
    info!("step {job_id}.{step_id}: ended on {node}, exit code {code}, signal {signal}");
    let end = StepEndedRequest {
        job_id,
        step_id,
        node,
        exit_code: code,
        exit_signal: signal,
        cpu_time_usec: stats.cpu_usec.unwrap_or(0),
        max_rss_kb: stats.mem_peak_kb.unwrap_or(0),
        oom: stats.oom_kills > 0,
    };
    // The controller hears of the end before srun does (srun returns when
    // the nodes close their connections): a batch script that goes on after
    // srun cannot end the job before the step's end is recorded (it would be
    // recorded CANCELLED). A controller that does not answer holds srun for
    // a few seconds at most; the report goes on trying after that.
    let report = tokio::spawn(async move { report_end(&shared, end).await });
    let _ = tokio::time::timeout(Duration::from_secs(5), report).await;
    drop(notes);
    let _ = writer.await;
}

/// Tell the terminal (and the job in it: SIGWINCH) its new size.
fn set_winsize(t: &std::fs::File, rows: u16, cols: u16) {
    crate::sys::set_winsize(t, rows, cols);
}

/// Stream one task's output, wait for it, send its exit status.
async fn run_task(mut task: Task, tx: mpsc::Sender<Frame>) -> (i32, i32) {
    let id = task.task_id;
    let mut readers = Vec::new();
    let terminal = task.pty.take().map(|m| {
        Box::new(tokio::fs::File::from_std(m)) as Box<dyn tokio::io::AsyncRead + Send + Unpin>
    });
    for (kind, pipe) in [
        (Kind::Stdout, terminal),
        (
            Kind::Stdout,
            task.stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ),
        (
            Kind::Stderr,
            task.stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Send + Unpin>),
        ),
    ] {
        let Some(mut pipe) = pipe else { continue };
        let tx = tx.clone();
        readers.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx
                            .send(Frame::new(kind, id, buf[..n].to_vec()))
                            .await
                            .is_err()
                        {
                            break;
                        }
                    }
                }
            }
        }));
    }
    let (code, signal) = match task.child.take() {
        Some(mut c) => match c.wait().await {
            Ok(st) => {
                use std::os::unix::process::ExitStatusExt;
                (st.code().unwrap_or(0), st.signal().unwrap_or(0))
            }
            Err(_) => (1, 0),
        },
        None => {
            if !task.failed_msg.is_empty() {
                let msg = std::mem::take(&mut task.failed_msg);
                let _ = tx.send(Frame::new(Kind::Stderr, id, msg)).await;
            }
            (task.failed_code, 0)
        }
    };
    for r in readers {
        let _ = r.await;
    }
    let _ = tx.send(Frame::exit(id, code, signal)).await;
    (code, signal)
}

async fn report_end(shared: &Shared, req: StepEndedRequest) {
    for attempt in 0..60 {
        let mut r = Request::new(req.clone());
        r.set_timeout(Duration::from_secs(10));
        match shared.ctl.clone().step_ended(r).await {
            Ok(_) => return,
            Err(s) if attempt == 59 => {
                warn!(
                    "step {}.{}: cannot report the end: {}",
                    req.job_id,
                    req.step_id,
                    s.message()
                );
            }
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}
