//! The scheduling pass: decide which pending jobs are eligible, hand the top
//! of the queue to the pure scheduler, start what it says, launch on agents.

use std::time::Duration;

use drover_proto::{GresAlloc, JobState, LaunchRequest, NodeAlloc, INFINITE};

use crate::ctld::Effect;
use crate::ctld::{Ctld, Op};
use crate::deps::{self, Seen, Verdict};
use crate::job::{env_from_blob, Job};
use crate::refusal::{Kind, Refusal};
use crate::sched::{self, Decision, JobSnap};

/// Passes of at most this many jobs × nodes run in the owner task; bigger
/// ones on a worker thread.
const INLINE_PASS_WORK: usize = 200_000;

/// Why a pending job may not be considered now (None: it may).
enum Gate {
    Open,
    Closed(&'static str),
    Never,
}

/// A gate, and the dependency outcomes newly decided on the way (to keep
/// with the job: `JobRuntime.dep_state`).
struct Gated {
    gate: Gate,
    dep_state: Option<Vec<u8>>,
}

impl Ctld {
    /// Where job record `j` stands, as a dependency sees it.
    pub(crate) fn seen_of(&self, j: &Job) -> Seen {
        let rt = j.rt();
        match j.state() {
            JobState::Pending => Seen::Pending,
            JobState::Running
            | JobState::Suspended
            | JobState::Completing
            | JobState::Configuring => Seen::Running {
                since: rt.start_time,
            },
            s => Seen::Ended {
                ok: s == JobState::Completed && rt.exit_code == 0,
                at: rt.end_time,
            },
        }
    }

    pub(crate) fn seen(&self, id: u32, task: Option<u32>) -> Vec<Seen> {
        let of = |j: &Job| self.seen_of(j);
        let mut out = Vec::new();
        let tasks = self.array_tasks.get(&id);
        let meta = self.jobs.get(&id).filter(|j| j.rt().array_job_id == id);
        if tasks.is_some() || meta.is_some() {
            // A job array: all tasks, or the one named.
            if let Some(m) = meta {
                if m.is_meta() {
                    for &t in &m.pending_tasks {
                        if task.is_none_or(|x| x == t) {
                            out.push(Seen::Pending);
                        }
                    }
                } else if task.is_none_or(|x| x == m.rt().array_task_id) {
                    out.push(of(m));
                }
            }
            for tid in tasks.into_iter().flatten() {
                if let Some(j) = self.jobs.get(tid) {
                    if task.is_none_or(|x| x == j.rt().array_task_id) {
                        out.push(of(j));
                    }
                }
            }
            if out.is_empty() && task.is_some() {
                out.push(Seen::Unknown);
            }
            return out;
        }
        match self.jobs.get(&id) {
            Some(j) => vec![of(j)],
            None => vec![Seen::Unknown],
        }
    }

    /// The job's dependency now (Satisfied without one), and its newly
    /// decided outcomes. Evaluated for held jobs too, as Slurm does, so an
    /// outcome is kept before the job it names can be purged.
    fn dependency(&self, job: &Job, t: i64) -> (Verdict, Option<Vec<u8>>) {
        let Some(dep) = &job.dep else {
            return (Verdict::Satisfied, None);
        };
        let rt = job.rt();
        let name = &job.spec().name;
        let verdicts: Vec<Verdict> =
            dep.conds
                .iter()
                .enumerate()
                .map(|(i, c)| match c.kind {
                    deps::Kind::Singleton => {
                        let busy = self.jobs.values().any(|o| {
                            o.id() < job.id()
                                && o.rec.uid == job.rec.uid
                                && &o.spec().name == name
                                && !o.state().is_final()
                        });
                        if busy {
                            Verdict::Wait
                        } else {
                            Verdict::Satisfied
                        }
                    }
                    deps::Kind::AfterCorr => deps::decided(&rt.dep_state, i)
                        .unwrap_or_else(|| self.corr_verdict(job, c, t)),
                    _ => deps::decided(&rt.dep_state, i).unwrap_or_else(|| {
                        let (id, task) = c.job.unwrap_or((0, None));
                        deps::eval_cond(c, &self.seen(id, task), t)
                    }),
                })
                .collect();
        let keep: Vec<bool> = dep
            .conds
            .iter()
            .map(|c| c.kind != deps::Kind::Singleton)
            .collect();
        let state = deps::settle(&rt.dep_state, &verdicts, &keep);
        (deps::combine(dep, &verdicts), state)
    }

    fn gate(&self, job: &Job, t: i64) -> Gated {
        let rt = job.rt();
        let (dep, dep_state) = self.dependency(job, t);
        let gate = if rt.hold == 2 {
            Gate::Closed("JobHeldAdmin")
        } else if rt.hold == 1 || rt.hold == crate::job::HOLD_SPECIAL_EXIT {
            Gate::Closed("JobHeldUser")
        } else if rt.hold == crate::job::HOLD_LAUNCH_FAILED {
            Gate::Closed(crate::job::REASON_LAUNCH_FAILED_HELD)
        } else if job.spec().begin_time > t {
            Gate::Closed("BeginTime")
        } else if dep == Verdict::Wait {
            Gate::Closed("Dependency")
        } else if dep == Verdict::Never {
            Gate::Never
        } else if self.partitions_inactive(job) {
            Gate::Closed("PartitionInactive")
        } else if self.array_throttled(job) {
            Gate::Closed("JobArrayTaskLimit")
        } else {
            Gate::Open
        };
        Gated { gate, dep_state }
    }

    /// One pass: eligibility for every pending job, then the scheduler over
    /// the top of the queue (everything on a full pass).
    pub fn schedule_pass(&mut self) {
        if self.sched.in_flight {
            // A pass is running on the worker: go again when it is done.
            self.sched.again = true;
            return;
        }
        let full = self.full_pass_needed;
        self.sched_needed = false;
        self.full_pass_needed = false;
        // Jobs suspended by preemption get their CPUs back first.
        self.resume_lenders();
        let t = self.now;
        if full {
            let jobs = &self.jobs;
            self.sched
                .expected
                .retain(|id, _| jobs.get(id).is_some_and(|j| j.state() == JobState::Pending));
            let pc = crate::dispatch::state::prio_conf(&self.cfg);
            self.charge_usage(t, &pc);
            self.recompute_priorities(t, &pc);
        }
        // The queue is ordered by priority: a quick (event-driven) pass looks
        // at the top of it only; held jobs sort last and cost nothing.
        // SchedulerParameters=default_queue_depth (the built-in default
        // is Ctld::queue_depth).
        let quick_depth = match self.cfg.scheduler_param("default_queue_depth") {
            Some(_) => self.cfg.sched_params().default_queue_depth as usize,
            None => self.queue_depth,
        };
        let depth = if full { usize::MAX } else { quick_depth };
        let examine = if full { usize::MAX } else { quick_depth * 10 };
        let mut pending: Vec<u32> = self.queue.iter().take(examine).map(|(_, id)| *id).collect();
        if pending.is_empty() {
            return;
        }
        // Arrays with an aftercorr dependency: tasks split out to be
        // judged one by one (they join this pass's candidates).
        let metas: Vec<u32> = pending
            .iter()
            .copied()
            .filter(|id| {
                self.jobs
                    .get(id)
                    .is_some_and(|j| j.is_meta() && j.dep.is_some())
            })
            .collect();
        let mut split = false;
        for id in metas {
            split |= self.split_for_aftercorr(id);
        }
        if split {
            pending = self.queue.iter().take(examine).map(|(_, id)| *id).collect();
        }
        let mut candidates: Vec<(u32, u32)> = Vec::new();
        let mut never: Vec<u32> = Vec::new();
        let mut invalid: Vec<u32> = Vec::new();
        let mut decided: Vec<u32> = Vec::new();
        for id in pending {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let Gated { gate, dep_state } = self.gate(job, t);
            let job = self.jobs.get_mut(&id).expect("job present");
            if let Some(s) = dep_state {
                // A dependency outcome decided: kept (and logged) with the
                // job, so a purge of the job it names cannot undo it.
                job.rt_mut().dep_state = s;
                decided.push(id);
            }
            match gate {
                Gate::Open => {
                    if job.rt().eligible_time == 0 {
                        job.rt_mut().eligible_time = t;
                    }
                    candidates.push((job.rt().priority, id));
                    if candidates.len() >= depth {
                        break;
                    }
                }
                Gate::Closed(r) => set_reason(job, r, t, &mut self.change_seq),
                Gate::Never => {
                    set_reason(job, "DependencyNeverSatisfied", t, &mut self.change_seq);
                    if !job.spec().mail_type.is_empty() {
                        invalid.push(id);
                    }
                    if job.spec().kill_on_invalid_dep {
                        never.push(id);
                    }
                }
            }
        }
        for id in decided {
            self.log_runtime(id);
        }
        for id in invalid {
            self.mail_invalid_dependency(id);
        }
        for id in never {
            self.cancel_pending(id, 0, "DependencyNeverSatisfied");
        }
        if candidates.is_empty() {
            return;
        }
        if candidates.len() > depth {
            candidates.select_nth_unstable_by(depth, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            candidates.truncate(depth);
        }
        let queue_len = self.queue.len();
        let (mut nodes, parts) = self.cluster.snapshot();
        self.power_ready(&mut nodes);
        let mut params = crate::dispatch::state::params(&self.cfg);
        params.quick = !full;
        let running = self.running_snaps(&nodes);
        self.share_untils(&mut nodes, t);
        let resvs = self.resv_snaps(t);
        let mut snaps = Vec::with_capacity(candidates.len());
        for &(prio, id) in &candidates {
            let job = &self.jobs[&id];
            let spec = job.spec();
            let pnames: Vec<&str> = spec.partition.split(',').map(str::trim).collect();
            let pidx: Vec<usize> = pnames
                .iter()
                .filter_map(|n| self.cluster.part_idx(n))
                .collect();
            let Some(mut req) = job.sched_req.as_deref().cloned() else {
                continue;
            };
            // OverSubscribe=EXCLUSIVE: every job gets whole nodes.
            if pidx.first().is_some_and(|&p| {
                self.cluster.parts[p]
                    .conf
                    .over_subscribe
                    .eq_ignore_ascii_case("EXCLUSIVE")
            }) {
                req.exclusive = true;
            }
            let instances = if job.is_meta() {
                let limit = if job.rt().array_max_running > 0 {
                    let running = self.array_running(id);
                    job.rt().array_max_running.saturating_sub(running)
                } else {
                    u32::MAX
                };
                (job.pending_tasks.len() as u32).min(limit)
            } else {
                1
            };
            let limit_min = self.effective_time_limit(job, pidx.first().copied());
            let reservation = (!spec.reservation.is_empty()).then(|| {
                resvs
                    .iter()
                    .position(|r| r.name == spec.reservation)
                    .unwrap_or(usize::MAX)
            });
            snaps.push(JobSnap {
                id,
                priority: prio,
                partitions: pidx,
                req,
                instances,
                time_limit: if limit_min == INFINITE {
                    i64::MAX
                } else {
                    i64::from(limit_min.max(1)) * 60
                },
                owner: self.owner(job),
                reservation,
            });
        }
        // CPUs/GPUs lent by preempted (suspended) jobs are free only for
        // the preemptor they were suspended for.
        self.hide_lent(&mut nodes, &snaps);
        // Small passes run here; big ones on a worker thread over the
        // snapshot, so that squeue and submissions are served meanwhile.
        let work = snaps.len().saturating_mul(nodes.len());
        if work <= INLINE_PASS_WORK {
            let decisions = sched::plan(&sched::Input {
                now: t,
                params: &params,
                nodes: &nodes,
                parts: &parts,
                running: &running,
                jobs: &snaps,
                resvs: &resvs,
                assoc: &self.assoc,
            });
            self.apply_plan(decisions, &nodes);
            self.sched.cycle_done = Some((snaps.len(), queue_len));
            return;
        }
        self.sched.in_flight = true;
        let assoc = self.assoc.clone();
        let depth = snaps.len();
        let work = move || -> Op {
            let decisions = sched::plan(&sched::Input {
                now: t,
                params: &params,
                nodes: &nodes,
                parts: &parts,
                running: &running,
                jobs: &snaps,
                resvs: &resvs,
                assoc: &assoc,
            });
            Box::new(move |c: &mut Ctld| {
                c.sched.in_flight = false;
                c.apply_plan(decisions, &nodes);
                if std::mem::take(&mut c.sched.again) {
                    c.sched_needed = true;
                }
            })
        };
        self.effects.push(Effect::Plan {
            work: Box::new(work),
            depth,
            queue_len,
        });
    }

    /// Carry out a pass's decisions. The world may have moved on since the
    /// snapshot (a worker-thread pass): a start is made only if the job is
    /// still pending and unheld and its resources are still free.
    fn apply_plan(&mut self, decisions: Vec<Decision>, nodes: &[sched::NodeSnap]) {
        for d in decisions {
            match d {
                Decision::Start {
                    job,
                    partition,
                    allocs,
                } => {
                    self.sched.expected.remove(&job);
                    let ok = self.jobs.get(&job).is_some_and(|j| {
                        j.state() == JobState::Pending
                            && j.rt().hold == 0
                            && (!j.is_meta() || !j.pending_tasks.is_empty())
                            && !self.array_throttled(j)
                    }) && self.jobs.get(&job).is_some_and(|j| {
                        let share = self.cluster.share_limit(partition, j.spec());
                        self.cluster.still_free(&allocs, nodes, share)
                    });
                    if ok {
                        self.start_job(job, partition, &allocs, nodes);
                    } else {
                        self.sched_needed = true;
                    }
                }
                Decision::Wait { job, reason, start } => {
                    let Some(j) = self.jobs.get_mut(&job) else {
                        continue;
                    };
                    if j.state() != JobState::Pending {
                        continue;
                    }
                    match start {
                        Some(s) => self.sched.expected.insert(job, s),
                        None => self.sched.expected.remove(&job),
                    };
                    set_reason(j, reason, self.now, &mut self.change_seq);
                }
                Decision::Preempt { job, by, mode } => self.preempt(job, by, mode),
            }
        }
    }

    /// The time limit a job runs with (minutes; INFINITE for none).
    pub fn effective_time_limit(&self, job: &Job, part: Option<usize>) -> u32 {
        let spec_limit = job.spec().time_limit;
        if spec_limit != 0 {
            return spec_limit;
        }
        part.and_then(|p| self.cluster.parts.get(p))
            .and_then(|p| p.conf.default_time_min.or(p.conf.max_time_min))
            .unwrap_or(INFINITE)
    }

    /// Who a job runs as (account defaulted from accounting).
    pub fn owner(&self, job: &Job) -> sched::Owner {
        let spec = job.spec();
        let account = if spec.account.is_empty() {
            self.assoc
                .default_account(&job.rec.user_name)
                .unwrap_or("")
                .to_string()
        } else {
            spec.account.clone()
        };
        sched::Owner {
            user: job.rec.user_name.clone(),
            account,
            qos: spec.qos.clone(),
        }
    }

    /// Jobs that may hold resources (running, completing, suspended,
    /// configuring), by id, from the state index.
    fn holding_jobs(&self) -> impl Iterator<Item = &Job> + '_ {
        let ids = self.index.ids_in(&[
            JobState::Running,
            JobState::Completing,
            JobState::Suspended,
            JobState::Configuring,
        ]);
        ids.into_iter()
            .filter_map(move |id| self.jobs.get(&id).map(|j| &**j))
    }

    /// Running jobs with their expected ends, for the scheduler.
    /// When each shared CPU of the snapshot is expected free: the latest
    /// expected end of the sharing jobs on it (now for jobs being stopped,
    /// never for suspended ones or jobs without a limit), as the core sees
    /// running jobs end.
    fn share_untils(&self, nodes: &mut [sched::NodeSnap], now: i64) {
        if nodes.iter().all(|n| n.shared.is_empty()) {
            return;
        }
        for n in nodes.iter_mut() {
            for x in &mut n.shared {
                x.until = i64::MIN;
            }
        }
        for job in self.holding_jobs() {
            let st = job.state();
            let rt = job.rt();
            if rt.share <= 1
                || !matches!(
                    st,
                    JobState::Running
                        | JobState::Completing
                        | JobState::Suspended
                        | JobState::Configuring
                )
            {
                continue;
            }
            let end = if rt.terminating || rt.preempted || st == JobState::Completing {
                now
            } else {
                match crate::suspend::limit_end(rt) {
                    Some(e) if st != JobState::Suspended => e.max(now + 1),
                    _ => i64::MAX,
                }
            };
            for a in crate::suspend::held_allocs(rt) {
                let Some(n) = self
                    .cluster
                    .node_idx(&a.node)
                    .and_then(|i| nodes.get_mut(i))
                else {
                    continue;
                };
                for c in &a.cpu_ids {
                    if let Ok(k) = n.shared.binary_search_by_key(c, |x| x.id) {
                        n.shared[k].until = n.shared[k].until.max(end);
                    }
                }
            }
        }
        for n in nodes.iter_mut() {
            for x in &mut n.shared {
                if x.until == i64::MIN {
                    x.until = i64::MAX;
                }
            }
        }
    }

    fn running_snaps(&self, nodes: &[sched::NodeSnap]) -> Vec<sched::RunSnap> {
        let mut out = Vec::new();
        for job in self.holding_jobs() {
            let st = job.state();
            if !matches!(
                st,
                JobState::Running
                    | JobState::Completing
                    | JobState::Suspended
                    | JobState::Configuring
            ) {
                continue;
            }
            let rt = job.rt();
            let part = self.cluster.part_idx(&rt.partition).unwrap_or(usize::MAX);
            let owner = self.owner(job);
            let qos_mode = if self.cfg.preempt_type == "preempt/qos" {
                let q = if owner.qos.is_empty() {
                    "normal"
                } else {
                    &owner.qos
                };
                self.assoc
                    .qos
                    .get(q)
                    .map_or(crate::assoc::PreemptMode::Off, |q| q.preempt_mode)
            } else {
                crate::assoc::PreemptMode::Off
            };
            let preempt_mode = if st == JobState::Suspended {
                // Already stopped: not a victim again.
                crate::assoc::PreemptMode::Off
            } else {
                crate::dispatch::state::preempt_mode(&self.cfg, Some(&rt.partition), qos_mode)
            };
            // Suspending a job frees its CPUs and GPUs but not its memory:
            // the core must not count on that memory when it picks victims.
            let mem_stays = preempt_mode == crate::assoc::PreemptMode::Suspend;
            let allocs: Vec<sched::RunAlloc> = crate::suspend::held_allocs(rt)
                .iter()
                .filter_map(|a| {
                    let node = self.cluster.node_idx(&a.node)?;
                    let snap = nodes.get(node)?;
                    let gres = a
                        .gres
                        .iter()
                        .flat_map(|g| {
                            g.indices.iter().filter_map(|&ix| {
                                snap.gres
                                    .iter()
                                    .position(|d| d.name == g.name && d.index == ix)
                            })
                        })
                        .collect();
                    Some(sched::RunAlloc {
                        node,
                        cpus: a.cpu_ids.len() as u32,
                        mem: if mem_stays { 0 } else { a.mem_mb },
                        gres,
                    })
                })
                .collect();
            // A suspended job's end is unknown (it may stay suspended).
            let mut end = match crate::suspend::limit_end(rt) {
                Some(e) if st != JobState::Suspended => e,
                _ => i64::MAX,
            };
            // Waiting for its nodes to power up: it runs (and its limit
            // counts) from when they are up.
            if st == JobState::Configuring && end != i64::MAX {
                let ready = allocs
                    .iter()
                    .map(|a| nodes[a.node].ready)
                    .fold(rt.start_time, i64::max);
                end = end.saturating_add(ready - rt.start_time);
            }
            out.push(sched::RunSnap {
                id: job.id(),
                partition: part,
                allocs,
                end,
                priority: rt.priority,
                owner,
                preempt_mode,
                ending: rt.terminating || rt.preempted || st == JobState::Completing,
                share: rt.share > 1,
            });
        }
        out
    }

    /// Every partition `job` may run in is INACTIVE (Slurm's
    /// WAIT_PART_INACTIVE; DOWN ones are the planner's PartitionDown).
    fn partitions_inactive(&self, job: &Job) -> bool {
        let inactive =
            |p: &crate::cluster::Partition| p.conf.state.eq_ignore_ascii_case("INACTIVE");
        if !self.cluster.parts.iter().any(inactive) {
            return false;
        }
        job.spec().partition.split(',').all(|n| {
            self.cluster
                .part_idx(n.trim())
                .is_some_and(|i| inactive(&self.cluster.parts[i]))
        })
    }

    /// The array `job` belongs to (its meta record, or a task split off
    /// it while pending) runs as many tasks as its throttle allows.
    fn array_throttled(&self, job: &Job) -> bool {
        let rt = job.rt();
        if rt.array_job_id == 0 || job.state() != JobState::Pending {
            return false;
        }
        let max = self
            .jobs
            .get(&rt.array_job_id)
            .filter(|m| m.is_meta())
            .map_or(rt.array_max_running, |m| m.rt().array_max_running);
        max > 0 && self.array_running(rt.array_job_id) >= max
    }

    fn array_running(&self, array_id: u32) -> u32 {
        self.array_tasks
            .get(&array_id)
            .map(|v| {
                v.iter()
                    .filter(|id| {
                        self.jobs.get(id).is_some_and(|j| {
                            !j.state().is_final() && j.state() != JobState::Pending
                        })
                    })
                    .count() as u32
            })
            .unwrap_or(0)
    }

    /// Take task `task` out of array meta record `meta_id` as its own job.
    /// The last task takes over the meta record's id, as in Slurm.
    pub fn split_task(&mut self, meta_id: u32, task: u32) -> Option<u32> {
        let meta = self.jobs.get_mut(&meta_id)?;
        let pos = meta.pending_tasks.iter().position(|&t| t == task)?;
        if meta.pending_tasks.len() == 1 {
            meta.pending_tasks.clear();
            let rt = meta.rt_mut();
            rt.is_array_meta = false;
            rt.array_task_id = task;
            rt.array_pending.clear();
            self.array_tasks.entry(meta_id).or_default().push(meta_id);
            return Some(meta_id);
        }
        meta.pending_tasks.remove(pos);
        // The task is the meta record less its pending tasks (spec and
        // request shared with it).
        let tasks = std::mem::take(&mut meta.pending_tasks);
        let mut task_job: Job = (**meta).clone();
        meta.pending_tasks = tasks;
        let new_id = self.alloc_job_id().ok()?;
        task_job.rec.job_id = new_id;
        if let Some(rt) = task_job.rec.runtime.as_mut() {
            rt.is_array_meta = false;
            rt.array_task_id = task;
            rt.array_pending.clear();
        }
        self.blobs.retain_ref(task_job.rec.script_blob);
        self.blobs.retain_ref(task_job.rec.env_blob);
        self.jobs.insert(new_id, Box::new(task_job));
        self.array_tasks.entry(meta_id).or_default().push(new_id);
        self.log_runtime(meta_id);
        self.log_job(new_id);
        Some(new_id)
    }

    fn start_job(
        &mut self,
        id: u32,
        part: usize,
        allocs: &[sched::Alloc],
        nodes: &[sched::NodeSnap],
    ) {
        let id = match self.jobs.get(&id) {
            Some(j) if j.is_meta() => {
                let Some(&task) = j.pending_tasks.first() else {
                    return;
                };
                match self.split_task(id, task) {
                    Some(n) => n,
                    None => return,
                }
            }
            Some(_) => id,
            None => return,
        };
        let t = self.now;
        // In the nodes' configured order, as Slurm's node bitmap: the batch
        // script and rank 0 run on the first node of NodeList (launchers
        // take MASTER_ADDR from it), whatever order placement chose.
        let mut in_order: Vec<_> = allocs.iter().collect();
        in_order.sort_by_key(|a| a.node);
        let node_allocs: Vec<NodeAlloc> = in_order
            .into_iter()
            .map(|a| {
                let n = &self.cluster.nodes[a.node];
                let mut gres: Vec<GresAlloc> = Vec::new();
                for &g in &a.gres {
                    let Some(d) = nodes.get(a.node).and_then(|s| s.gres.get(g)) else {
                        continue;
                    };
                    match gres
                        .iter_mut()
                        .find(|x| x.name == d.name && x.r#type == d.r#type)
                    {
                        Some(x) => x.indices.push(d.index),
                        None => gres.push(GresAlloc {
                            name: d.name.clone(),
                            r#type: d.r#type.clone(),
                            indices: vec![d.index],
                            count: 0,
                        }),
                    }
                }
                NodeAlloc {
                    node: n.name().to_string(),
                    cpus: a.cpu_ids.len() as u32,
                    cpu_ids: a.cpu_ids.clone(),
                    mem_mb: a.mem,
                    gres,
                    tasks: a.tasks,
                }
            })
            .collect();
        let part_conf = self.cluster.parts[part].conf.clone();
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let limit = self.effective_time_limit(job, Some(part));
        let share = self.cluster.share_limit(part, job.spec());
        let job = self.jobs.get_mut(&id).expect("job present");
        let rt = job.rt_mut();
        rt.state = JobState::Running as i32;
        rt.reason = "None".into();
        rt.start_time = t;
        self.diag.started += 1;
        rt.end_time = 0;
        if rt.eligible_time == 0 {
            rt.eligible_time = t;
        }
        rt.partition = part_conf.name.clone();
        rt.time_limit = limit;
        rt.batch_host = node_allocs
            .first()
            .map(|a| a.node.clone())
            .unwrap_or_default();
        rt.alloc = node_allocs.clone();
        rt.share = share;
        rt.launched = false;
        rt.terminating = false;
        rt.exit_code = 0;
        rt.exit_signal = 0;
        self.cluster.allocate(id, &node_allocs, share);
        // Powered-down nodes: the job waits (CONFIGURING) while they come up.
        if self.power_wait(id) {
            return;
        }
        if let Some(j) = self.jobs.get_mut(&id).filter(|j| j.spec().interactive) {
            // salloc/srun allocation: nothing to launch; steps come by srun.
            let rt = j.rt_mut();
            rt.batch_host.clear();
            rt.launched = true;
            self.log_runtime(id);
            self.mail_started(id);
            return;
        }
        self.log_runtime(id);
        self.mail_started(id);
        self.send_launch(id);
    }

    /// Send (or re-send: the agent makes it idempotent) the batch launch.
    pub fn send_launch(&mut self, id: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let job = job.clone();
        let rt = job.rt();
        let node = rt.batch_host.clone();
        let mut spec = job.spec().clone();
        spec.script = self
            .blobs
            .get(job.rec.script_blob)
            .map(|b| b.to_vec())
            .unwrap_or_default();
        spec.environment = self
            .blobs
            .get(job.rec.env_blob)
            .map(|b| env_from_blob(&b))
            .unwrap_or_default();
        let allocation = crate::request::allocation(
            &job.request().cloned().unwrap_or_default(),
            &job.rt().alloc,
        );
        let info = self.job_info(&job);
        let req = LaunchRequest {
            job_id: id,
            spec: Some(spec),
            info: Some(info),
            uid: job.rec.uid,
            gid: job.rec.gid,
            user_name: job.rec.user_name.clone(),
            groups: job.rec.groups.clone(),
            node: node.clone(),
            expires: self.now + 300,
            kill_wait: self.cfg.kill_wait as u32,
            cluster_name: self.cfg.cluster_name.clone(),
            node_id: 0,
            allocation: Some(allocation),
        };
        let start = rt.start_time;
        self.effects.push(Effect::Launch {
            node,
            req: Box::new(req),
            start,
        });
    }

    /// The agent's answer to a launch of the job started at `start`.
    pub fn launch_done(&mut self, id: u32, start: i64, res: Result<(), Refusal>) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        if !matches!(job.state(), JobState::Running | JobState::Suspended)
            || job.rt().start_time != start
        {
            return;
        }
        match res {
            Ok(()) => {
                if !job.rt().launched {
                    job.rt_mut().launched = true;
                    self.log_runtime(id);
                }
                // Suspended while it was being launched: the stop may have
                // come before the script existed.
                if self.jobs[&id].state() == JobState::Suspended {
                    self.send_suspend(id, true);
                }
            }
            Err(e)
                if !matches!(
                    e.kind(),
                    Kind::PermissionDenied
                        | Kind::Unauthenticated
                        | Kind::InvalidArgument
                        | Kind::FailedPrecondition
                        | Kind::NotFound
                        | Kind::Aborted
                ) =>
            {
                // Unreachable, or the connection broke mid-call (the agent may
                // have started the job and died before answering): try again.
                // Launch is idempotent per job and run on the agent, and
                // SlurmdTimeout takes the node down if it stays away.
                tracing::debug!("launch of job {id} failed ({}), retrying", e.words());
                self.later(
                    Duration::from_secs(1),
                    Box::new(move |c: &mut Ctld| {
                        if c.jobs.get(&id).is_some_and(|j| {
                            matches!(j.state(), JobState::Running | JobState::Suspended)
                                && !j.rt().launched
                                && j.rt().start_time == start
                        }) {
                            c.send_launch(id);
                        }
                    }),
                );
            }
            Err(e) => {
                tracing::warn!("launch of job {id} refused by its node: {}", e.words());
                // ABORTED: the node cannot run jobs as configured (it says
                // why): drain it with that and requeue the job.
                let drain_reason = if e.kind() == Kind::Aborted {
                    e.words().to_string()
                } else {
                    String::new()
                };
                let node = job.rt().batch_host.clone();
                self.job_ended(
                    id,
                    &node,
                    crate::end::EndReport {
                        exit_code: 1,
                        failure: format!("launch failed: {}", e.words()),
                        launch_failed: true,
                        drain_reason,
                        ..Default::default()
                    },
                );
            }
        }
    }
}

/// A pending job's reason (squeue shows it, so a change counts as one for
/// `last_changed` and the change number `seq`; not logged: the next pass
/// finds it again).
fn set_reason(job: &mut Job, reason: &str, now: i64, seq: &mut u64) {
    if job.rt().reason != reason {
        job.rt_mut().reason = reason.to_string();
        job.rt_mut().last_changed = now;
        *seq += 1;
        job.seq = *seq;
    }
}
