//! The scheduling pass: decide which pending jobs are eligible ([`gate`]),
//! hand the top of the queue to the pure scheduler with the kept snapshot
//! of the nodes and the jobs holding them ([`inputs`]), and carry out what
//! it decides (starts in [`start`]).
//!
//! [`gate`]: super::gate
//! [`inputs`]: super::inputs
//! [`start`]: super::start

use std::borrow::Cow;

use drover_proto::{JobState, INFINITE};

use crate::ctld::{Ctld, Effect, Op};
use crate::job::Job;
use crate::sched::{self, Decision, JobSnap, PreemptKind};

use super::gate::{Gate, Gated};
use super::inputs::PartLookup;

/// Passes of at most this many jobs × nodes run in the owner task; bigger
/// ones on a worker thread.
const INLINE_PASS_WORK: usize = 200_000;

impl Ctld {
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
            // Usage and every priority each PriorityCalcPeriod (Slurm's
            // decay thread); in between, only jobs without a priority yet.
            let pc = crate::dispatch::state::prio_conf(&self.cfg);
            if self.priorities_due(t, &pc) {
                self.sched.prio_calc_at = t;
                self.charge_usage(t, &pc);
                self.recompute_priorities(t, &pc);
            } else {
                self.prioritize_new(t, &pc);
            }
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
        let mut pending = self.pass_order(examine);
        if pending.is_empty() {
            return;
        }
        // Arrays with an aftercorr dependency: tasks split out to be
        // judged one by one (they join this pass's candidates).
        let metas: Vec<u32> = if self.corr_metas.is_empty() {
            Vec::new()
        } else {
            pending
                .iter()
                .copied()
                .filter(|id| self.corr_metas.contains(id))
                .collect()
        };
        let mut split = false;
        for id in metas {
            split |= self.split_for_aftercorr(id);
        }
        if split {
            pending = self.pass_order(examine);
        }
        let mut candidates: Vec<(u32, u32)> = Vec::new();
        let mut never: Vec<u32> = Vec::new();
        let mut invalid: Vec<u32> = Vec::new();
        let mut decided: Vec<u32> = Vec::new();
        let mut settled: Vec<u32> = Vec::new();
        for id in pending {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            if job.never_at.is_some_and(|s| s == job.seq) {
                // Never to be satisfied, and unchanged since that was found:
                // its reason is set, its mail sent, nothing else to do.
                continue;
            }
            let Gated { gate, dep_state } = self.gate(job, t);
            let open = matches!(gate, Gate::Open);
            let prio = job.rt().priority;
            // Most jobs of most passes: open, eligible before, nothing
            // decided: nothing to write, no second look-up.
            if dep_state.is_some() || !open || job.rt().eligible_time == 0 {
                let job = self.jobs.get_mut(&id).expect("job present");
                if let Some(s) = dep_state {
                    // A dependency outcome decided: kept (and logged) with
                    // the job, so a purge of the job it names cannot undo it.
                    job.rt_mut().dep_state = s;
                    decided.push(id);
                }
                match gate {
                    Gate::Open => {
                        if job.rt().eligible_time == 0 {
                            job.rt_mut().eligible_time = t;
                        }
                    }
                    Gate::Closed(r) => {
                        set_reason(job, r, t, &mut self.change_seq);
                        // Held with no dependency: the same gate until the
                        // job changes (which puts it back in `held_to_gate`).
                        if job.rt().hold != 0 && job.dep.is_none() {
                            settled.push(id);
                        }
                    }
                    Gate::Never => {
                        set_reason(job, "DependencyNeverSatisfied", t, &mut self.change_seq);
                        // (Whatever this pass still does to the job, logging
                        // a decided outcome, a mail, changes its number.)
                        job.never_at = Some(job.seq);
                        if !job.spec().mail_type.is_empty() {
                            invalid.push(id);
                        }
                        if job.spec().kill_on_invalid_dep {
                            never.push(id);
                        }
                    }
                }
            }
            if open {
                candidates.push((prio, id));
                if candidates.len() >= depth {
                    break;
                }
            }
        }
        for id in settled {
            self.held_to_gate.remove(&id);
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
        // The kept snapshot of the nodes, read in place; copied only where
        // this pass must see it changed (nodes powering up, shared CPUs'
        // expected ends, CPUs lent by suspended jobs).
        let base = self.cluster.take_snaps();
        let parts = self.cluster.part_snaps();
        let mut nodes: Cow<[sched::NodeSnap]> = Cow::Borrowed(&base);
        if self.power_waits() {
            self.power_ready(nodes.to_mut());
        }
        let mut params = crate::dispatch::state::params(&self.cfg);
        params.quick = !full;
        // A quick pass plans nothing: the running jobs matter to it only
        // for preemption and for association/QOS limits.
        let owners = params.preempt != PreemptKind::Off || self.assoc.has_limits();
        let running = if full || owners {
            self.running_snaps(&nodes, owners)
        } else {
            Vec::new()
        };
        if nodes.iter().any(|n| !n.shared.is_empty()) {
            self.share_untils(nodes.to_mut(), t);
        }
        let resvs = self.resv_snaps(t);
        let mut snaps = Vec::with_capacity(candidates.len());
        let mut part_lookup = PartLookup::default();
        for &(prio, id) in &candidates {
            let job = &self.jobs[&id];
            let spec = job.spec();
            let (pidx, exclusive) = part_lookup.of(&self.cluster, &spec.partition);
            let Some(mut req) = job.sched_req.clone() else {
                continue;
            };
            // OverSubscribe=EXCLUSIVE: every job gets whole nodes.
            if exclusive && !req.exclusive {
                std::sync::Arc::make_mut(&mut req).exclusive = true;
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
        if !self.lenders.is_empty() {
            self.hide_lent(nodes.to_mut(), &snaps);
        }
        // The kept best-fit index, where the pass reads the kept snapshot
        // unchanged.
        let index = matches!(nodes, Cow::Borrowed(_))
            .then(|| std::cell::RefCell::new(self.cluster.take_index(&base)));
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
                index: index.as_ref(),
            });
            if let Some(ix) = index {
                self.cluster.put_index(ix.into_inner());
            }
            self.apply_plan(decisions, &nodes, full);
            drop(nodes);
            self.cluster.put_snaps(base);
            self.sched.cycle_done = Some((snaps.len(), queue_len));
            return;
        }
        // The kept snapshot and its index, read unchanged, go with the pass
        // (no copy) and come back with its decisions; a changed copy goes
        // alone.
        let (nodes, lent) = match nodes {
            Cow::Owned(changed) => {
                self.cluster.put_snaps(base);
                (changed, None)
            }
            Cow::Borrowed(_) => (base, Some(self.cluster.kept_gen())),
        };
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
                index: index.as_ref(),
            });
            Box::new(move |c: &mut Ctld| {
                c.sched.in_flight = false;
                c.apply_plan(decisions, &nodes, full);
                if let Some(gen) = lent {
                    let index = index.map(std::cell::RefCell::into_inner);
                    c.cluster.give_back(gen, nodes, index);
                }
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

    /// The pending jobs a pass gates, in queue order, at most `examine`:
    /// the unheld ones by priority, then the held ones still to gate
    /// (`Ctld::held_to_gate`); a held job whose reason is set and that has
    /// no dependency is not looked at again until it changes.
    fn pass_order(&self, examine: usize) -> Vec<u32> {
        let unheld = self.unheld().map(|(_, id)| *id);
        let held = self.held_to_gate.iter().copied();
        unheld.chain(held).take(examine).collect()
    }

    /// Carry out a pass's decisions. The world may have moved on since the
    /// snapshot (a worker-thread pass): a start is made only if the job is
    /// still pending and unheld and its resources are still free. A quick
    /// pass plans no starts: the last full pass's expected starts stay.
    fn apply_plan(&mut self, decisions: Vec<Decision>, nodes: &[sched::NodeSnap], full: bool) {
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
                        Some(s) => {
                            self.sched.expected.insert(job, s);
                        }
                        None if full => {
                            self.sched.expected.remove(&job);
                        }
                        None => {}
                    }
                    set_reason(j, reason, self.now, &mut self.change_seq);
                }
                Decision::Preempt { job, by, mode } => self.preempt(job, by, mode),
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
