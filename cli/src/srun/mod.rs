//! `srun`: run a job step inside an allocation (issue 6).
//!
//! srun listens on a TCP port, asks the controller for a step (CreateStep
//! with `SLURM_JOB_ID` or `--jobid`), and the agents of the step's nodes
//! connect back (framing: `drover_proto::stepio`). Output is written as it
//! arrives (with `-l`, per complete line with a `task: ` prefix), stdin goes
//! to task 0 (`--input`), signals are forwarded; srun exits with the highest
//! task exit code (128+signal for a killed task).

mod allocspec;
pub mod args;
mod nodefail;
pub mod table;

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use drover_conf::Config;
use drover_proto::auth::random_bytes;
use drover_proto::stepio::{read_frame, write_frame, Frame, Kind};
use drover_proto::tls::Conn;
use drover_proto::CreateStepResponse;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::conn::{self, RpcError};
use crate::opts;
use args::Srun;

/// The controller's answer while other steps hold the CPUs.
const BUSY: &str = "Requested nodes are busy";
/// The job is suspended: srun waits for its resume, as in Slurm.
const DISABLED: &str = "Requested operation is presently disabled";

const USAGE: &str = "Usage: srun [-N nnodes] [-n ntasks] [-c ncpus] [-w hosts] [-l] [-u] [-K]\n\
\x20           [--ntasks-per-node=n] [--exclusive|--overlap] [--mem=MB] [--gpus=n]\n\
\x20           [-o out] [-e err] [-i in] [-J name] [-D dir] [--jobid=id] [--pty]\n\
\x20           executable [args...]\n";

pub fn run(argv: &[String]) -> i32 {
    let p = match opts::parse(args::TABLE, argv, true) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("srun: {e}");
            eprintln!("Try \"srun --help\" for more information");
            return crate::support::error_exit();
        }
    };
    if p.has("help") || p.has("usage") {
        print!("{USAGE}");
        return 0;
    }
    if p.has("version") {
        crate::print_version();
        return 0;
    }
    if opts::het_separator(&p.positional, true) {
        eprintln!("srun: error: {}", opts::hetjob_refused());
        return crate::support::error_exit();
    }
    let env: Vec<(String, String)> = std::env::vars().collect();
    let mut s = match args::build(&p, &env) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("srun: error: {e}");
            return crate::support::error_exit();
        }
    };
    if !s.quiet {
        for w in &s.warnings {
            eprintln!("srun: warning: {w}");
        }
    }
    // -v: Slurm's dump of the options set (environment, then command line).
    let (merged, _) = args::with_env(&p, &env);
    let verbose = merged.count("verbose") as u32;
    if verbose > 0 {
        let set: Vec<(&str, Option<String>)> = merged
            .opts
            .iter()
            .map(|f| (f.key, f.value.clone()))
            .collect();
        for l in crate::optdump::defined_options(args::TABLE, &set, verbose) {
            eprintln!("srun: {l}");
        }
    }
    // Outside an allocation srun gets one first (the allocation options
    // are sbatch's).
    let alloc_spec = if s.job_id.is_none() {
        match allocspec::alloc_spec(&merged) {
            Ok(spec) => Some(spec),
            Err(e) => {
                eprintln!("srun: error: {e}");
                return crate::support::error_exit();
            }
        }
    } else {
        None
    };
    let (cfg, rt) = match conn::setup("srun") {
        Ok(x) => x,
        Err(c) => return c,
    };
    if let Some(spec) = alloc_spec.as_ref().filter(|j| !j.cluster.is_empty()) {
        let from_env = !p.has("clusters");
        if let Some(e) = crate::support::cluster_refusal(&spec.cluster, &cfg.cluster_name, from_env)
        {
            eprintln!("srun: error: {e}");
            return crate::support::error_exit();
        }
    }
    let code = rt.block_on(async move {
        let Some(spec) = alloc_spec else {
            return step_main(cfg, s).await;
        };
        let mut ctl = match conn::client_for("srun", &cfg) {
            Ok(c) => c,
            Err(c) => return c,
        };
        let how = crate::salloc::alloc::Waiting {
            immediate: s.immediate,
            quiet: s.quiet,
        };
        let job = match crate::salloc::alloc::allocate("srun", &mut ctl, &cfg, spec, how).await {
            Ok(j) => j,
            Err(c) => return c,
        };
        s.job_id = Some(job.job_id);
        // Its own allocation lives as long as srun says so (InactiveLimit).
        let beat = tokio::spawn(crate::salloc::alloc::keep_alive(cfg.clone(), job.job_id));
        let code = step_main(cfg, s).await;
        beat.abort();
        if let Err(st) = crate::salloc::alloc::release(&mut ctl, job.job_id, code).await {
            conn::report("srun", "srun: error: ", &st);
        }
        code
    });
    rt.shutdown_timeout(Duration::from_millis(10));
    code
}

/// The address of this host that reaches `addr` (the controller): the
/// agents connect back to it.
fn local_ip_toward(addr: &str) -> std::net::IpAddr {
    use std::net::UdpSocket;
    let first = drover_proto::sys::nss::socket_addrs(addr)
        .ok()
        .and_then(|a| a.first().copied());
    if let Some(sa) = first {
        let bind = if sa.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        if let Ok(u) = UdpSocket::bind(bind) {
            if u.connect(sa).is_ok() {
                if let Ok(l) = u.local_addr() {
                    return l.ip();
                }
            }
        }
    }
    std::net::IpAddr::from([127, 0, 0, 1])
}

async fn step_main(cfg: Config, mut s: Srun) -> i32 {
    let Some(job_id) = s.job_id else {
        eprintln!(
            "srun: error: no job allocation: run srun inside one (salloc, sbatch) or give --jobid"
        );
        return 1;
    };
    // Signals are srun's from the start: a Ctrl-C while the step starts is
    // forwarded once the tasks run.
    let mut sigs = Vec::new();
    for k in [
        SignalKind::interrupt(),
        SignalKind::terminate(),
        SignalKind::hangup(),
        SignalKind::quit(),
        SignalKind::user_defined1(),
        SignalKind::user_defined2(),
    ] {
        if let Ok(sg) = signal(k) {
            sigs.push((k.as_raw_value(), sg));
        }
    }
    let (sig_tx, sig_rx) = mpsc::unbounded_channel::<i32>();
    for (num, mut sg) in sigs {
        let tx = sig_tx.clone();
        tokio::spawn(async move {
            while sg.recv().await.is_some() {
                if tx.send(num).is_err() {
                    return;
                }
            }
        });
    }
    // The controller may be restarting (or die mid-call after making the
    // step): keep asking, with the same token, for as long as Slurm's
    // clients wait for a controller (MessageTimeout), then give up.
    let patience = Duration::from_secs(cfg.message_timeout.max(1));
    let mut ctl = match conn::client_waiting("srun", &cfg, patience).await {
        Ok(c) => c,
        Err(c) => return c,
    };
    let ctl_addr = cfg.controller_addr();
    let ip = tokio::task::spawn_blocking(move || local_ip_toward(&ctl_addr))
        .await
        .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1]));
    let listener = match TcpListener::bind((ip, 0)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("srun: error: cannot listen for I/O connections: {e}");
            return 1;
        }
    };
    // The I/O connections' key and the step's creation token: a zero key
    // would let anyone on the network attach, so no randomness, no step.
    let (key, token) = match (random_bytes(16), random_bytes(16)) {
        (Ok(k), Ok(t)) => (k, t),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("srun: error: {e}");
            return 1;
        }
    };
    let r = &mut s.req;
    r.job_id = job_id;
    r.io_host = ip.to_string();
    r.io_port = listener.local_addr().map(|a| a.port() as u32).unwrap_or(0);
    r.io_key = key.clone();
    r.create_token = token;
    let env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k != "SLURM_SRUN_COMM_PORT")
        .collect();
    r.env = crate::sbatch::spec::exported(s.export.as_deref(), &env);
    r.env.push(format!("SLURM_SRUN_COMM_PORT={}", r.io_port));
    if r.cwd.is_empty() {
        r.cwd = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    // Agents connect while CreateStep is still running: accept meanwhile.
    let (conn_tx, mut conn_rx) = mpsc::unbounded_channel::<(u32, Conn)>();
    let accept = tokio::spawn(async move {
        loop {
            let Ok((sock, peer)) = listener.accept().await else {
                return;
            };
            let _ = sock.set_nodelay(true);
            let tx = conn_tx.clone();
            let key = key.clone();
            tokio::spawn(async move {
                // Over TLS beyond loopback: the agent serves its host
                // certificate, checked against the cluster CA.
                let host = peer.ip().to_string();
                let secured = tokio::time::timeout(
                    Duration::from_secs(10),
                    drover_proto::tls::secure_as_client(sock, &host),
                )
                .await;
                let mut sock = match secured {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        eprintln!("srun: error: step I/O connection refused: {e}");
                        return;
                    }
                    Err(_) => {
                        eprintln!(
                            "srun: error: step I/O connection from {peer}: TLS handshake timed out"
                        );
                        return;
                    }
                };
                let hello =
                    tokio::time::timeout(Duration::from_secs(10), read_frame(&mut sock)).await;
                if let Ok(Ok(Some(f))) = hello {
                    if f.kind == Kind::Hello && f.data == key {
                        let _ = tx.send((f.task, sock));
                    }
                }
            });
        }
    });
    let mut announced = false;
    let mut unreachable_since: Option<tokio::time::Instant> = None;
    let begun = Instant::now();
    let resp = loop {
        match ctl.create_step(s.req.clone()).await {
            Ok(r) => break r.into_inner(),
            Err(st)
                if st.code() == tonic::Code::Unavailable
                    && (st.message() == BUSY || st.message() == DISABLED) =>
            {
                // --immediate: no waiting (or no longer than asked).
                if s.immediate
                    .is_some_and(|secs| secs <= 1 || begun.elapsed().as_secs() >= secs)
                {
                    eprintln!(
                        "srun: error: Unable to create step for job {job_id}: {}",
                        st.message()
                    );
                    return 1;
                }
                if !announced && !s.quiet {
                    eprintln!(
                        "srun: Job {job_id} step creation temporarily disabled, retrying ({})",
                        st.message()
                    );
                    announced = true;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            // The controller restarting: unreachable, or (on its host) its
            // authentication socket gone for a moment.
            Err(st)
                if (conn::classify(&st) == RpcError::Connect
                    || st
                        .message()
                        .starts_with("cannot reach the authentication socket"))
                    && !st.message().contains("launch of step")
                    && unreachable_since
                        .get_or_insert_with(tokio::time::Instant::now)
                        .elapsed()
                        < patience =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(st) => {
                match conn::classify(&st) {
                    RpcError::Connect if !st.message().contains("launch of step") => {
                        eprintln!("srun: error: {}", conn::CONNECT_FAILURE)
                    }
                    _ => eprintln!(
                        "srun: error: Unable to create step for job {job_id}: {}",
                        st.message()
                    ),
                }
                return 1;
            }
        }
    };
    if announced {
        eprintln!("srun: Step created for StepId={job_id}.{}", resp.step_id);
    }
    let mut conns = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while conns.len() < resp.nodes.len() {
        match tokio::time::timeout_at(deadline, conn_rx.recv()).await {
            Ok(Some(c)) => conns.push(c),
            _ => break,
        }
    }
    accept.abort();
    let kill_wait = cfg.kill_wait;
    let step_nodes: Vec<String> = resp.nodes.iter().map(|n| n.node.clone()).collect();
    let mut failed = tokio::spawn(nodefail::failed_nodes(cfg, job_id, step_nodes));
    let code = run_io(&s, job_id, &resp, conns, sig_rx, &mut failed, kill_wait).await;
    failed.abort();
    code
}

struct Io<'a> {
    s: &'a Srun,
    width: usize,
    bufs: HashMap<(u32, bool), Vec<u8>>,
}

impl Io<'_> {
    fn output(&mut self, task: u32, err: bool, data: &[u8]) {
        let out = if self.s.label {
            let b = self.bufs.entry((task, err)).or_default();
            b.extend_from_slice(data);
            args::label_lines(b, task, self.width, false)
        } else {
            data.to_vec()
        };
        write_out(err, &out);
    }

    fn flush(&mut self) {
        let mut keys: Vec<(u32, bool)> = self.bufs.keys().copied().collect();
        keys.sort_unstable();
        for k in keys {
            if let Some(b) = self.bufs.get_mut(&k) {
                let out = args::label_lines(b, k.0, self.width, true);
                write_out(k.1, &out);
            }
        }
    }
}

/// Task output to our stdout or stderr, flushed (srun, sattach).
pub(crate) fn write_out(err: bool, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    if err {
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(data);
        let _ = e.flush();
    } else {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(data);
        let _ = o.flush();
    }
}

fn signal_frame(sig: i32) -> Frame {
    Frame::new(Kind::Signal, u32::MAX, sig.to_be_bytes().to_vec())
}

async fn run_io(
    s: &Srun,
    job_id: u32,
    resp: &CreateStepResponse,
    conns: Vec<(u32, Conn)>,
    mut sig_rx: mpsc::UnboundedReceiver<i32>,
    failed: &mut tokio::task::JoinHandle<Vec<String>>,
    kill_wait: u64,
) -> i32 {
    let step = format!("{job_id}.{}", resp.step_id);
    let node_name: HashMap<u32, String> = resp
        .nodes
        .iter()
        .map(|n| (n.node_id, n.node.clone()))
        .collect();
    let task_node: HashMap<u32, u32> = resp
        .nodes
        .iter()
        .flat_map(|n| n.task_ids.iter().map(move |t| (*t, n.node_id)))
        .collect();
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<(u32, Option<Frame>)>();
    let mut writers: BTreeMap<u32, mpsc::UnboundedSender<Frame>> = BTreeMap::new();
    for (nid, sock) in conns {
        let (mut rd, mut wr) = tokio::io::split(sock);
        let tx = ev_tx.clone();
        tokio::spawn(async move {
            while let Ok(Some(f)) = read_frame(&mut rd).await {
                if tx.send((nid, Some(f))).is_err() {
                    return;
                }
            }
            let _ = tx.send((nid, None));
        });
        let (wtx, mut wrx) = mpsc::unbounded_channel::<Frame>();
        tokio::spawn(async move {
            while let Some(f) = wrx.recv().await {
                if write_frame(&mut wr, &f).await.is_err() {
                    return;
                }
            }
        });
        writers.insert(nid, wtx);
    }
    drop(ev_tx);
    let mut missing: Vec<u32> = node_name
        .keys()
        .filter(|n| !writers.contains_key(n))
        .copied()
        .collect();
    missing.sort_unstable();
    for n in &missing {
        eprintln!(
            "srun: error: {}: the node did not connect back",
            node_name.get(n).map_or("?", |s| s.as_str())
        );
    }
    // --pty: srun's terminal goes raw (keys, Ctrl-C and Ctrl-Z included, go
    // to the remote terminal) and its size follows ours; the first size goes
    // before any input, so the remote shell never reads a command first.
    let _raw = if s.pty { RawMode::enter() } else { None };
    let mut winch = if s.pty {
        signal(SignalKind::window_change()).ok()
    } else {
        None
    };
    let task0 = task_node.get(&0).and_then(|n| writers.get(n)).cloned();
    if s.pty {
        if let (Some(w), Some((rows, cols))) = (&task0, term_size()) {
            let _ = w.send(Frame::winsize(rows, cols));
        }
    }
    // stdin -> the input task(s); a thread, so a blocked read never holds srun.
    let targets: Vec<u32> = match s.req.input.as_str() {
        "" => vec![0],
        "all" => (0..resp.ntasks).collect(),
        "none" => vec![],
        t => t.parse::<u32>().map(|t| vec![t]).unwrap_or_default(),
    };
    if !targets.is_empty() {
        let dests: Vec<(u32, mpsc::UnboundedSender<Frame>)> = targets
            .iter()
            .filter_map(|t| {
                let nid = task_node.get(t)?;
                Some((*t, writers.get(nid)?.clone()))
            })
            .collect();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let n = match stdin.read(&mut buf) {
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => 0,
                };
                for (t, w) in &dests {
                    let _ = w.send(Frame::new(Kind::Stdin, *t, buf[..n].to_vec()));
                }
                if n == 0 {
                    return;
                }
            }
        });
    }
    let broadcast = |f: Frame| {
        for w in writers.values() {
            let _ = w.send(f.clone());
        }
    };
    let width = if s.label {
        resp.ntasks.saturating_sub(1).to_string().len()
    } else {
        0
    };
    let mut io = Io {
        s,
        width,
        bufs: HashMap::new(),
    };
    let mut results: BTreeMap<u32, (i32, i32)> = BTreeMap::new();
    let mut open = writers.len();
    let mut last_int: Option<Instant> = None;
    let mut killed = false;
    let mut lost: Vec<u32> = Vec::new();
    // Nodes the controller declared failed: srun no longer waits for them.
    let mut failed_nodes: Vec<u32> = Vec::new();
    let mut closed: Vec<u32> = Vec::new();
    let mut watching = true;
    // The step's own time limit (`-t` inside an allocation): SIGTERM at
    // the limit, SIGKILL KillWait seconds later; the job goes on.
    let far = tokio::time::Instant::now() + Duration::from_secs(100 * 365 * 86400);
    let mut limit_at = s.step_limit.map_or(far, |l| {
        tokio::time::Instant::now() + Duration::from_secs(l)
    });
    let mut timed_out = false;
    while open > 0 {
        tokio::select! {
            _ = tokio::time::sleep_until(limit_at) => {
                if timed_out {
                    broadcast(signal_frame(libc::SIGKILL));
                    limit_at = far;
                    continue;
                }
                timed_out = true;
                let node = node_name.get(&0).map_or("?", |n| n.as_str());
                eprintln!(
                    "slurmstepd: error: *** STEP {step} ON {node} CANCELLED AT {} DUE TO TIME LIMIT ***",
                    crate::timefmt::make_time_str(crate::timefmt::now())
                );
                broadcast(signal_frame(libc::SIGCONT));
                broadcast(signal_frame(libc::SIGTERM));
                limit_at = tokio::time::Instant::now() + Duration::from_secs(kill_wait.max(1));
            }
            names = &mut *failed, if watching => {
                watching = false;
                let Ok(names) = names else { continue };
                // None down any more (back already): those still silent.
                let names: Vec<String> = if names.is_empty() {
                    node_name
                        .iter()
                        .filter(|(n, _)| writers.contains_key(n) && !closed.contains(n))
                        .map(|(_, name)| name.clone())
                        .collect()
                } else {
                    names
                };
                if names.is_empty() {
                    continue;
                }
                eprintln!("srun: error: Node failure on {}", drover_conf::hostlist::compress(&names));
                for (nid, name) in &node_name {
                    if !names.contains(name) {
                        continue;
                    }
                    failed_nodes.push(*nid);
                    if writers.contains_key(nid) && !closed.contains(nid) {
                        closed.push(*nid);
                        open -= 1;
                    }
                }
            }
            ev = ev_rx.recv() => {
                let Some((nid, f)) = ev else { break };
                if failed_nodes.contains(&nid) {
                    continue; // given up on: what it still says is late
                }
                let Some(f) = f else {
                    open -= 1;
                    closed.push(nid);
                    let node = node_name.get(&nid).cloned().unwrap_or_default();
                    let unreported: Vec<u32> = task_node
                        .iter()
                        .filter(|(t, n)| **n == nid && !results.contains_key(t))
                        .map(|(t, _)| *t)
                        .collect();
                    if !unreported.is_empty() {
                        eprintln!("srun: error: {node}: connection to the node lost (node failure?)");
                        for t in unreported {
                            results.insert(t, (0, libc::SIGKILL));
                        }
                        lost.push(nid);
                    }
                    continue;
                };
                match f.kind {
                    Kind::Stdout => io.output(f.task, false, &f.data),
                    Kind::Stderr => io.output(f.task, true, &f.data),
                    Kind::Exit => {
                        let st = f.exit_status();
                        results.insert(f.task, st);
                        if s.kill_on_bad_exit && (st.0 != 0 || st.1 != 0) && !killed {
                            killed = true;
                            eprintln!("srun: error: task {} failed: terminating StepId={step} (--kill-on-bad-exit)", f.task);
                            broadcast(signal_frame(libc::SIGKILL));
                        }
                    }
                    Kind::Error => {
                        let node = node_name.get(&nid).cloned().unwrap_or_default();
                        eprintln!("srun: error: {node}: {}", String::from_utf8_lossy(&f.data).trim_end());
                    }
                    _ => {}
                }
            }
            Some(()) = async {
                match winch.as_mut() {
                    Some(w) => w.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                if let (Some(w), Some((rows, cols))) = (&task0, term_size()) {
                    let _ = w.send(Frame::winsize(rows, cols));
                }
            }
            sig = sig_rx.recv() => {
                let Some(sig) = sig else { continue };
                if sig == libc::SIGINT {
                    let now = Instant::now();
                    if last_int.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
                        eprintln!("srun: forcing job termination");
                        eprintln!("srun: Job step aborted");
                        killed = true;
                        broadcast(signal_frame(libc::SIGKILL));
                    } else {
                        if !s.quiet {
                            eprintln!("srun: interrupt (one more within 1 sec to abort)");
                        }
                        broadcast(signal_frame(libc::SIGINT));
                    }
                    last_int = Some(now);
                } else {
                    broadcast(signal_frame(sig));
                }
            }
        }
    }
    io.flush();
    report_tasks(&node_name, &task_node, &results, &lost);
    let code = args::exit_status(&results.values().copied().collect::<Vec<_>>());
    // The tasks of a failed node have no exit status (Slurm marks them
    // done): the step did not succeed though.
    if failed_nodes.is_empty() {
        code
    } else {
        code.max(1)
    }
}

/// The size of srun's terminal (rows, columns), if stdin is one.
fn term_size() -> Option<(u16, u16)> {
    crate::sys::term_size()
}

use crate::sys::RawMode;

/// Slurm's `srun: error: node: task(s) N: Exited with exit code C` lines.
fn report_tasks(
    node_name: &HashMap<u32, String>,
    task_node: &HashMap<u32, u32>,
    results: &BTreeMap<u32, (i32, i32)>,
    lost: &[u32],
) {
    let mut groups: BTreeMap<(u32, i32, i32), Vec<u32>> = BTreeMap::new();
    for (t, &(code, sig)) in results {
        let nid = task_node.get(t).copied().unwrap_or(0);
        if (code == 0 && sig == 0) || lost.contains(&nid) {
            continue;
        }
        groups.entry((nid, code, sig)).or_default().push(*t);
    }
    for ((nid, code, sig), tasks) in groups {
        let node = node_name.get(&nid).map_or("?", |s| s.as_str());
        let which = if tasks.len() == 1 {
            format!("task {}", tasks[0])
        } else {
            format!("tasks {}", drover_conf::hostlist::ranges(&tasks))
        };
        if sig != 0 {
            eprintln!("srun: error: {node}: {which}: {}", args::signal_text(sig));
        } else {
            eprintln!("srun: error: {node}: {which}: Exited with exit code {code}");
        }
    }
}
