//! The event loop: the real controller core ([`Ctld`]) on simulated time.
//!
//! The core is driven exactly as the runtime drives it (`ctld/src/runtime`),
//! with the world replaced by a perfect one: submissions arrive at their
//! trace times; a `Launch` is accepted at once and the job runs for its
//! trace run time, then its agent reports the end (exit code from the
//! trace); a kill (`Signal` 0: cancel, preemption, time limit) ends the job
//! at once; `Suspend` stops and continues its clock; `Later` timers fire on
//! simulated time; a big pass's `Plan` is run where it is asked for. After
//! every instant with events the core runs its scheduling pass (the quick,
//! event-driven one); every `tick` seconds it gets its periodic checks
//! (`Ctld::tick`: time limits, purges) and a full pass (backfill; usage
//! and priorities each PriorityCalcPeriod), as the runtime's timer gives
//! them. Time limits are checked
//! at the instant they run out as well. Nothing reads a clock: the same
//! input gives the same output.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use drover_conf::slurmconf::Config;
use drover_ctld::ctld::{Ctld, Effect, Op};
use drover_proto::state::wal_record::Kind;
use drover_proto::{
    CancelRequest, JobEndedRequest, JobFilter, JobState, NodeRegistration, RegisterRequest,
};

mod submit;

pub use crate::outcome::{JobOut, Options, Outcomes, Sample, ShareSample};
use crate::trace::{Outcome, TraceJob};

/// First uid given to the trace's users (in order of first appearance).
const FIRST_UID: u32 = 100_000;
/// Task key of a job that is not an array task.
const NO_TASK: u32 = u32::MAX;

/// What the trace submits at one time: a job, or an array of tasks.
struct Submission {
    /// Trace indexes; several for an array (one per task).
    jobs: Vec<usize>,
}

enum Event {
    /// The job's run time is over (if `gen` is still its generation).
    End {
        job: u32,
        gen: u64,
    },
    /// Its time limit runs out now: the periodic checks.
    Limit {
        job: u32,
        gen: u64,
    },
    /// An agent killed the job's run `restart` (asked by a Signal 0).
    Killed {
        job: u32,
        restart: u32,
        timeout: bool,
    },
    /// The owner cancels it (it never ran in the trace).
    Cancel {
        trace: usize,
    },
    Later(Op),
    /// Nodes a ResumeProgram started register (power saving).
    Resumed(Vec<String>),
}

/// What a node's agent says when it registers: the node as configured.
fn registration(n: &drover_conf::slurmconf::NodeConf) -> NodeRegistration {
    NodeRegistration {
        name: n.name.clone(),
        cpus: n.cpus,
        real_memory: n.real_memory,
        ..Default::default()
    }
}

/// How long a node takes to boot and register after its ResumeProgram
/// runs, in the simulation (within Slurm's default ResumeTimeout of 60 s).
pub const RESUME_SECS: i64 = 30;

struct Run {
    trace: usize,
    restart: u32,
    /// Seconds still to run (at `since`); i64::MAX: until killed.
    left: i64,
    since: i64,
    suspended: bool,
    gen: u64,
    cpus: u64,
    gpus: u64,
}

pub struct Sim {
    pub core: Ctld,
    opts: Options,
    trace: Vec<TraceJob>,
    subs: Vec<Submission>,
    next_sub: usize,
    heap: BinaryHeap<Reverse<(i64, u64)>>,
    events: HashMap<u64, Event>,
    seq: u64,
    running: HashMap<u32, Run>,
    /// (core job id or array id, task) -> trace index.
    trace_of: HashMap<(u32, u32), usize>,
    /// Trace job id (`12`, array id `20`) -> core job id.
    core_id: HashMap<String, u32>,
    uids: BTreeMap<String, u32>,
    part_shapes: HashMap<String, (u32, u32)>,
    /// Generations of runs' end events, never reused: an event of an
    /// earlier run (before a requeue or a suspension) matches nothing.
    gens: u64,
    out: Outcomes,
    done: BTreeMap<u32, JobOut>,
    /// Rows of pending array tasks cancelled inside their meta record.
    dropped: Vec<JobOut>,
    busy_cpus: u64,
    busy_gpus: u64,
    last_t: i64,
    next_sample: i64,
    sample_every: i64,
    share_points: Vec<i64>,
    next_tick: i64,
}

impl Sim {
    /// A cluster of `cfg` with every node registered, ready for `trace`
    /// (sorted by submit time).
    pub fn new(cfg: Config, trace: Vec<TraceJob>, opts: Options) -> Sim {
        let t0 = trace.first().map_or(0, |j| j.submit);
        let last_submit = trace.last().map_or(t0, |j| j.submit);
        let mut core = Ctld::new(cfg, "slurm.conf".into(), t0, 0, "sim".into());
        let nodes = core.cfg.nodes.iter().map(registration).collect();
        core.register(RegisterRequest {
            nodes,
            ..Default::default()
        });
        let total_cpus = core.cfg.nodes.iter().map(|n| u64::from(n.cpus)).sum();
        let total_gpus = core.cfg.nodes.iter().map(|n| n.gres_count("gpu")).sum();
        let span = (last_submit - t0).max(1);
        let mut sim = Sim {
            core,
            subs: Vec::new(),
            next_sub: 0,
            heap: BinaryHeap::new(),
            events: HashMap::new(),
            seq: 0,
            running: HashMap::new(),
            trace_of: HashMap::new(),
            core_id: HashMap::new(),
            uids: BTreeMap::new(),
            part_shapes: HashMap::new(),
            gens: 0,
            out: Outcomes {
                total_cpus,
                total_gpus,
                t0,
                t_end: t0,
                ..Default::default()
            },
            done: BTreeMap::new(),
            dropped: Vec::new(),
            busy_cpus: 0,
            busy_gpus: 0,
            last_t: t0,
            next_sample: t0,
            sample_every: (span / opts.samples.max(1) as i64).max(1),
            share_points: (1..=4).map(|k| t0 + span * k / 4).collect(),
            next_tick: t0,
            opts,
            trace,
        };
        sim.group();
        sim.perform();
        sim
    }

    /// One submission per job, one per array (its tasks together).
    fn group(&mut self) {
        let mut arrays: HashMap<String, usize> = HashMap::new();
        for (i, j) in self.trace.iter().enumerate() {
            match &j.array {
                Some((a, _)) => match arrays.get(a) {
                    Some(&s) => self.subs[s].jobs.push(i),
                    None => {
                        arrays.insert(a.clone(), self.subs.len());
                        self.subs.push(Submission { jobs: vec![i] });
                    }
                },
                None => self.subs.push(Submission { jobs: vec![i] }),
            }
        }
        for j in &self.trace {
            let n = self.uids.len() as u32;
            self.uids.entry(j.user.clone()).or_insert(FIRST_UID + n);
        }
        for (name, uid) in &self.uids {
            self.core.names.set_user(*uid, name);
        }
    }

    /// Run to the end: every job ended, or nothing left that could start.
    pub fn run(mut self) -> Outcomes {
        let mut stalled = false;
        loop {
            let next_event = self.heap.peek().map(|Reverse((t, _))| *t);
            let next_submit = self
                .subs
                .get(self.next_sub)
                .map(|s| self.trace[s.jobs[0]].submit);
            let busy = !self.running.is_empty() || !self.core.queue.is_empty();
            let next_tick = busy.then_some(self.next_tick);
            let Some(t) = [next_event, next_submit, next_tick]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            if next_event.is_none() && next_submit.is_none() && self.running.is_empty() {
                // Only pending jobs remain: one more full pass; if that
                // starts nothing, nothing ever will (dependencies never
                // satisfied, requests the cluster cannot meet).
                if stalled {
                    break;
                }
                stalled = true;
            } else {
                stalled = false;
            }
            self.advance(t);
            while let Some(&Reverse((et, seq))) = self.heap.peek() {
                if et > t {
                    break;
                }
                self.heap.pop();
                if let Some(e) = self.events.remove(&seq) {
                    self.out.events += 1;
                    self.handle(e);
                    self.perform();
                }
            }
            while self
                .subs
                .get(self.next_sub)
                .is_some_and(|s| self.trace[s.jobs[0]].submit <= t)
            {
                let s = self.next_sub;
                self.next_sub += 1;
                self.out.events += 1;
                self.submit(s);
                self.perform();
            }
            if t >= self.next_tick {
                self.periodic(t);
                self.next_tick = t + self.opts.tick;
            }
            if self.core.sched_needed || self.core.full_pass_needed {
                self.out.passes += 1;
                self.core.schedule_pass();
                self.perform();
            }
            if !self.running.is_empty() {
                stalled = false;
            }
            self.observe(t);
        }
        self.finish()
    }

    /// Move the clock to `t`, counting busy CPU/GPU-seconds.
    fn advance(&mut self, t: i64) {
        let dt = (t - self.last_t).max(0) as f64;
        self.out.busy_cpu_secs += self.busy_cpus as f64 * dt;
        self.out.busy_gpu_secs += self.busy_gpus as f64 * dt;
        self.last_t = t;
        self.core.now = t;
    }

    /// The runtime's timer: every node's agent is alive, the periodic
    /// checks, and a full pass.
    fn periodic(&mut self, t: i64) {
        self.heartbeats(t);
        self.core.tick(t);
        self.core.full_pass_needed = true;
        self.perform();
    }

    fn heartbeats(&mut self, t: i64) {
        for n in &mut self.core.cluster.nodes {
            n.last_seen = t;
        }
    }

    fn push(&mut self, t: i64, e: Event) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq)));
        self.events.insert(self.seq, e);
    }

    fn handle(&mut self, e: Event) {
        match e {
            Event::End { job, gen } => {
                let Some(r) = self
                    .running
                    .get(&job)
                    .filter(|r| r.gen == gen && !r.suspended)
                else {
                    return;
                };
                let (outcome, user) = {
                    let tj = &self.trace[r.trace];
                    (tj.outcome, tj.user.clone())
                };
                match outcome {
                    Outcome::Cancelled => {
                        let id = self.core.jobs.get(&job).map(|j| j.id_text());
                        if let Some(id) = id {
                            self.cancel(&user, id);
                        }
                    }
                    Outcome::Failed(code) => self.report_end(job, code, 0, false),
                    Outcome::Completed | Outcome::Timeout => self.report_end(job, 0, 0, false),
                }
            }
            Event::Limit { job, gen } => {
                if self
                    .running
                    .get(&job)
                    .is_some_and(|r| r.gen == gen && !r.suspended)
                {
                    let t = self.core.now;
                    self.heartbeats(t);
                    self.core.tick(t);
                }
            }
            Event::Killed {
                job,
                restart,
                timeout,
            } => {
                if self.running.get(&job).is_some_and(|r| r.restart == restart) {
                    self.report_end(job, 0, libc_sigkill(), timeout);
                }
            }
            Event::Cancel { trace } => {
                let tj = &self.trace[trace];
                let user = tj.user.clone();
                let id = match &tj.array {
                    Some((a, t)) => self.core_id.get(a).map(|c| format!("{c}_{t}")),
                    None => self.core_id.get(&tj.id).map(|c| c.to_string()),
                };
                let in_meta = self.pending_in_meta(trace);
                if let Some(id) = id {
                    self.cancel(&user, id);
                }
                if let Some(meta) = in_meta {
                    self.dropped_task(meta, trace);
                }
            }
            Event::Later(op) => op(&mut self.core),
            Event::Resumed(names) => {
                let nodes = names
                    .iter()
                    .filter_map(|name| self.core.cfg.node(name))
                    .map(registration)
                    .collect();
                self.core.register(RegisterRequest {
                    nodes,
                    ..Default::default()
                });
            }
        }
    }

    /// `scancel` as the job's owner.
    fn cancel(&mut self, user: &str, id: String) {
        let who = self.uid(user);
        let _ = self.core.cancel(
            who,
            CancelRequest {
                filter: Some(JobFilter {
                    job_ids: vec![id],
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
    }

    /// The job's agent reports its end.
    fn report_end(&mut self, job: u32, exit_code: i32, exit_signal: i32, timeout: bool) {
        let Some(r) = self.running.remove(&job) else {
            return;
        };
        if !r.suspended {
            self.busy_cpus -= r.cpus;
            self.busy_gpus -= r.gpus;
        }
        let node = self
            .core
            .jobs
            .get(&job)
            .map(|j| j.rt().batch_host.clone())
            .unwrap_or_default();
        self.core.agent_job_ended(JobEndedRequest {
            job_id: job,
            node,
            exit_code,
            exit_signal,
            timeout,
            end_time: self.core.now,
            restart_count: r.restart,
            ..Default::default()
        });
    }

    /// Perform what the core asked for, until it asks nothing more.
    fn perform(&mut self) {
        loop {
            let batch = self.core.take_effects();
            if batch.is_empty() {
                return;
            }
            for e in batch {
                self.effect(e);
            }
        }
    }

    fn effect(&mut self, e: Effect) {
        let now = self.core.now;
        match e {
            Effect::Log(rec) => {
                if let Some(Kind::Runtime(u)) = &rec.kind {
                    let final_state = u
                        .runtime
                        .as_ref()
                        .and_then(|rt| JobState::try_from(rt.state).ok())
                        .is_some_and(|s| s.is_final());
                    if final_state {
                        self.record(u.job_id);
                    }
                }
            }
            Effect::AfterDurable(f) => f(),
            Effect::Launch { req, start, .. } => self.launched(req.job_id, start),
            Effect::Signal { req, .. } => {
                if req.signal == 0 {
                    if let Some(r) = self.running.get(&req.job_id) {
                        let restart = r.restart;
                        self.push(
                            now,
                            Event::Killed {
                                job: req.job_id,
                                restart,
                                timeout: req.timeout,
                            },
                        );
                    }
                }
            }
            Effect::Suspend { req, .. } => self.suspend(req.job_id, req.suspend),
            Effect::Later { delay, op } => {
                let secs = delay.as_secs() as i64 + i64::from(delay.subsec_nanos() > 0);
                self.push(now + secs, Event::Later(op));
            }
            Effect::Plan { work, .. } => work()(&mut self.core),
            // Power saving: a resumed node registers RESUME_SECS later; a
            // suspended one just stays down.
            Effect::RunProgram { kind, nodes, .. } => {
                if kind == "ResumeProgram" {
                    self.push(now + RESUME_SECS, Event::Resumed(nodes));
                }
            }
            // Job mail: nothing to send in a simulation.
            Effect::Account { .. }
            | Effect::Mail(_)
            | Effect::ForgetAgents
            | Effect::ReconfigureAgents { .. }
            | Effect::StartAccounting => {}
        }
    }

    /// The agent accepted the launch: the job runs for its trace run time.
    fn launched(&mut self, id: u32, start: i64) {
        self.core.launch_done(id, start, Ok(()));
        let Some(job) = self.core.jobs.get(&id) else {
            return;
        };
        let rt = job.rt();
        let key = if rt.array_job_id != 0 {
            (rt.array_job_id, rt.array_task_id)
        } else {
            (id, NO_TASK)
        };
        let Some(&trace) = self.trace_of.get(&key) else {
            return;
        };
        let cpus: u64 = rt.alloc.iter().map(|a| u64::from(a.cpus)).sum();
        let gpus: u64 = rt
            .alloc
            .iter()
            .flat_map(|a| a.gres.iter())
            .filter(|g| g.name == "gpu")
            .map(|g| g.indices.len() as u64)
            .sum();
        let restart = rt.restart_count;
        let left = self.trace[trace].run.unwrap_or(i64::MAX);
        self.busy_cpus += cpus;
        self.busy_gpus += gpus;
        self.running.insert(
            id,
            Run {
                trace,
                restart,
                left,
                since: self.core.now,
                suspended: false,
                gen: 0,
                cpus,
                gpus,
            },
        );
        self.schedule_end(id);
    }

    /// The events that end the job's current stretch of running: its run
    /// time over, or its time limit.
    fn schedule_end(&mut self, id: u32) {
        let now = self.core.now;
        self.gens += 1;
        let gen = self.gens;
        let Some(r) = self.running.get_mut(&id) else {
            return;
        };
        r.gen = gen;
        let (gen, left, trace) = (r.gen, r.left, r.trace);
        let over = self.core.cfg.over_time_limit_min;
        let limit = self
            .core
            .jobs
            .get(&id)
            .and_then(|j| drover_ctld::suspend::limit_end(j.rt()))
            .filter(|_| over != u32::MAX)
            .map(|e| e + i64::from(over) * 60);
        // A job that ran into its limit in the trace runs into it here too
        // (when it has one); others end when their run time is over, unless
        // their limit comes first.
        let mut end = (left != i64::MAX).then(|| now.saturating_add(left));
        if self.trace[trace].outcome == Outcome::Timeout && limit.is_some() {
            end = None;
        }
        if let Some(end) = end {
            self.push(end, Event::End { job: id, gen });
        }
        if let Some(l) = limit.filter(|l| end.is_none_or(|e| *l < e)) {
            self.push(l.max(now), Event::Limit { job: id, gen });
        }
    }

    fn suspend(&mut self, id: u32, stop: bool) {
        let now = self.core.now;
        let Some(r) = self.running.get_mut(&id) else {
            return;
        };
        if stop && !r.suspended {
            if r.left != i64::MAX {
                r.left = (r.left - (now - r.since)).max(0);
            }
            r.suspended = true;
            r.gen = 0;
            self.busy_cpus -= r.cpus;
            self.busy_gpus -= r.gpus;
        } else if !stop && r.suspended {
            r.suspended = false;
            r.since = now;
            self.busy_cpus += r.cpus;
            self.busy_gpus += r.gpus;
            self.schedule_end(id);
        }
    }

    /// The array meta record holding trace job `trace` as one of its
    /// pending tasks, if it does.
    fn pending_in_meta(&self, trace: usize) -> Option<u32> {
        let (array, task) = self.trace[trace].array.as_ref()?;
        let meta = *self.core_id.get(array)?;
        let job = self.core.jobs.get(&meta)?;
        (job.is_meta() && job.pending_tasks.contains(task)).then_some(meta)
    }

    /// A pending task cancelled inside its meta record: the core keeps no
    /// record of it (as Slurm), but the trace job gets its row.
    fn dropped_task(&mut self, meta: u32, trace: usize) {
        let Some(job) = self.core.jobs.get(&meta) else {
            return;
        };
        let task = self.trace[trace].array.as_ref().map_or(0, |a| a.1);
        if job.pending_tasks.contains(&task) {
            return;
        }
        if job.state().is_final() {
            // It was the last: the meta record itself ends cancelled, and
            // its row is this trace job's.
            self.trace_of.insert((meta, NO_TASK), trace);
            return;
        }
        let rt = job.rt();
        let now = self.core.now;
        self.dropped.push(JobOut {
            id: format!("{meta}_{task}"),
            trace_id: self.trace[trace].id.clone(),
            user: job.rec.user_name.clone(),
            account: job.spec().account.clone(),
            partition: if rt.partition.is_empty() {
                job.spec().partition.clone()
            } else {
                rt.partition.clone()
            },
            submit: rt.submit_time,
            start: None,
            end: Some(now),
            run: 0,
            cpus: 0,
            state: JobState::Cancelled,
            reason: String::new(),
        });
        self.out.t_end = self.out.t_end.max(now);
    }

    /// A job reached a final state: its row.
    fn record(&mut self, id: u32) {
        let Some(job) = self.core.jobs.get(&id) else {
            return;
        };
        let rt = job.rt();
        let key = if rt.array_job_id != 0 && !rt.is_array_meta {
            (rt.array_job_id, rt.array_task_id)
        } else {
            (id, NO_TASK)
        };
        let trace_id = self
            .trace_of
            .get(&key)
            .or_else(|| self.trace_of.get(&(id, NO_TASK)))
            .map(|&i| self.trace[i].id.clone())
            .unwrap_or_default();
        let ran = rt.launched;
        let start = ran.then_some(rt.start_time);
        let end = (rt.end_time != 0).then_some(rt.end_time);
        let cpus: u64 = rt.alloc.iter().map(|a| u64::from(a.cpus)).sum();
        let row = JobOut {
            id: job.id_text(),
            trace_id,
            user: job.rec.user_name.clone(),
            account: job.spec().account.clone(),
            partition: if rt.partition.is_empty() {
                job.spec().partition.clone()
            } else {
                rt.partition.clone()
            },
            submit: rt.submit_time,
            start,
            end,
            run: match (start, end) {
                (Some(s), Some(e)) => (e - s - rt.tot_sus_time).max(0),
                _ => 0,
            },
            cpus: if ran { cpus } else { 0 },
            state: job.state(),
            reason: String::new(),
        };
        if let Some(e) = end {
            self.out.t_end = self.out.t_end.max(e);
        }
        self.done.insert(id, row);
    }

    /// The time series and fair-share points due at `t`.
    fn observe(&mut self, t: i64) {
        if t >= self.next_sample {
            let pending: u64 = self
                .core
                .queue
                .iter()
                .map(|(_, id)| {
                    self.core
                        .jobs
                        .get(id)
                        .map_or(0, |j| (j.pending_tasks.len() as u64).max(1))
                })
                .sum();
            self.out.series.push(Sample {
                t,
                pending,
                cpus: self.busy_cpus,
                gpus: self.busy_gpus,
            });
            self.next_sample = t + self.sample_every;
        }
        while self.share_points.first().is_some_and(|&p| t >= p) {
            self.share_points.remove(0);
            let pc = drover_ctld::dispatch::state::prio_conf(&self.core.cfg);
            let users = self
                .core
                .share_rows(&pc)
                .into_iter()
                .filter(|r| !r.user.is_empty())
                .map(|r| (r.user, r.fairshare))
                .collect();
            self.out.shares.push(ShareSample { t, users });
        }
    }

    fn finish(mut self) -> Outcomes {
        // Jobs that never ended: pending for good (their reason says why).
        let left: Vec<u32> = self
            .core
            .jobs
            .iter()
            .filter(|(id, j)| !j.state().is_final() && !self.done.contains_key(id))
            .map(|(id, _)| *id)
            .collect();
        for id in left {
            self.record(id);
            if let (Some(row), Some(j)) = (self.done.get_mut(&id), self.core.jobs.get(&id)) {
                row.reason = j.rt().reason.clone();
                row.end = None;
            }
        }
        let t = self.last_t;
        self.out.series.push(Sample {
            t,
            pending: 0,
            cpus: self.busy_cpus,
            gpus: self.busy_gpus,
        });
        self.out.jobs = std::mem::take(&mut self.done).into_values().collect();
        self.out.jobs.append(&mut self.dropped);
        self.out
    }
}

fn libc_sigkill() -> i32 {
    9
}

/// The periodic interval: `SchedulerParameters=bf_interval`, else 30 s.
pub fn default_tick(cfg: &Config) -> i64 {
    cfg.scheduler_param("bf_interval")
        .flatten()
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|v| *v > 0)
        .unwrap_or(30)
}
