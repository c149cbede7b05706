//! The runtime under the core: the one owner task takes operations from the
//! RPC handlers in order, reads the clock once per batch, applies them to
//! the core ([`Ctld`]), runs the scheduler, and then performs what the batch
//! asked for ([`Effect`]): log records to the write-ahead log (one fsync for
//! the batch; by the owner itself for a lone command), replies once
//! durable, agent calls, accounting records, timers.

mod accounting;
pub mod agent_pool;
pub mod config_files;
pub mod disk;
pub mod fence;
pub mod ha;
pub mod mail;
mod programs;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use drover_conf::slurmconf::Config;
use drover_proto::JobState;
use tokio::sync::mpsc;

use crate::ctld::Effect;
use crate::ctld::{Ctld, Op};
use crate::job::Job;
use crate::refusal::Refusal;
use crate::wal::{self, Wal};
pub use agent_pool::AgentPool;

/// Snapshot the state once the log has grown this much.
const SNAPSHOT_BYTES: u64 = 64 * 1024 * 1024;
/// Jobs whose accounting record a restart sends again per owner-loop turn
/// (a few milliseconds of work: a call waits at most that long).
const ACCT_RESEND_CHUNK: usize = 2000;

/// The wall clock, read by the runtime only (unix seconds).
pub fn clock() -> i64 {
    drover_proto::auth::now_secs()
}

pub struct Runtime {
    pub core: Ctld,
    wal: Wal,
    agents: AgentPool,
    tx: mpsc::Sender<Op>,
    /// To the accounting record builder (None without accounting).
    acct: Option<std::sync::mpsc::Sender<(Arc<Config>, Job, i64)>>,
    /// Accounting records of this batch, handed to the builder once the
    /// batch is committed: waking the builder (after a quiet spell it waits
    /// on its channel) is then not on a lone command's way to its answer.
    acct_batch: Vec<(Job, i64)>,
    /// To the thread that runs MailProg.
    mail: mail::MailSender,
    /// The state directory and the epoch this controller holds (fencing).
    epoch: Option<(PathBuf, u64)>,
}

impl Runtime {
    /// Rebuild state from disk and start the log writer.
    pub fn recover(
        cfg: Config,
        config_path: PathBuf,
        agents: AgentPool,
        tx: mpsc::Sender<Op>,
        fence: Option<fence::Fence>,
    ) -> Result<Runtime, String> {
        let dir = PathBuf::from(&cfg.state_save_location);
        let host = drover_proto::auth::hostname();
        let slurm_user_uid = crate::users::user_uid(&cfg.slurm_user).unwrap_or(0);
        let mut core = Ctld::new(cfg, config_path, clock(), slurm_user_uid, host);
        // Each record is applied as it is decoded.
        let mut restore = core.restoring();
        let rec = wal::recover(&dir, &mut |found| match found {
            wal::Found::Snapshot(s) => restore.snapshot(*s),
            wal::Found::Record(r) => restore.record(r),
        })?;
        restore.finish();
        if rec.torn_tail {
            tracing::warn!("state log ended in a torn record (crash mid-write); it was dropped");
        }
        if rec.stale > 0 {
            tracing::warn!(
                "{} state log records of a deposed controller were skipped",
                rec.stale
            );
        }
        let epoch = fence.as_ref().map(|f| (dir.clone(), f.epoch));
        let wal = Wal::start(&dir, rec.generation, fence)?;
        let mail = mail::MailSender::start(tx.clone())?;
        let replayed = rec.records;
        let pending = core
            .jobs
            .values()
            .filter(|j| j.state() == JobState::Pending)
            .count();
        let running = core
            .jobs
            .values()
            .filter(|j| !j.state().is_final() && j.state() != JobState::Pending)
            .count();
        tracing::info!(
            "recovered {} jobs ({} pending, {} running) from {} ({} log records); next job id {}",
            core.jobs.len(),
            pending,
            running,
            dir.display(),
            replayed,
            core.next_job_id
        );
        let mut rt = Runtime {
            core,
            wal,
            agents,
            tx,
            acct: None,
            acct_batch: Vec::new(),
            mail,
            epoch,
        };
        rt.perform();
        rt.send_accounting();
        // Start from a compact state: the snapshot replaces the replayed log.
        if replayed > 0 {
            rt.write_snapshot();
        }
        Ok(rt)
    }

    /// The event loop of the owner task.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Op>) {
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_full = clock();
        loop {
            let idle_since = Instant::now();
            // Does this batch hold a lone command, one that found the owner
            // idle for longer than a sync of the log takes? Then it is
            // committed in place: nothing is likely to queue behind it.
            let mut lone = true;
            tokio::select! {
                op = rx.recv() => {
                    let Some(op) = op else { break };
                    lone = idle_since.elapsed() > 2 * self.wal.last_sync();
                    self.core.now = clock();
                    op(&mut self.core);
                    // Take everything already queued: one scheduling pass and one
                    // fsync for the whole batch.
                    for _ in 0..4096 {
                        match rx.try_recv() {
                            Ok(op) => op(&mut self.core),
                            Err(_) => break,
                        }
                    }
                }
                // A restart's accounting resend, between other work.
                _ = std::future::ready(()), if !self.core.acct_resend.is_empty() => {
                    self.core.resend_accounting(ACCT_RESEND_CHUNK);
                }
                _ = tick.tick() => {
                    let t = clock();
                    self.core.now = t;
                    self.core.tick(t);
                    if t - last_full >= 1 {
                        self.core.full_pass_needed = true;
                        last_full = t;
                        // An idle controller learns it was deposed too.
                        if let Some((dir, epoch)) = &self.epoch {
                            if let Err(e) = fence::Fence::check(dir, *epoch) {
                                tracing::error!("{e}; exiting");
                                std::process::exit(1);
                            }
                            fence::beat(dir, *epoch, t);
                        }
                        // Give memory freed after a burst (big replies, many
                        // requests in flight) back to the system.
                        drover_proto::sys::malloc_trim();
                    }
                }
            }
            if self.core.sched_needed || self.core.full_pass_needed {
                let started = Instant::now();
                self.core.schedule_pass();
                if let Some((depth, queue_len)) = self.core.sched.cycle_done.take() {
                    self.core
                        .diag
                        .record_cycle(started.elapsed(), depth, queue_len);
                }
            }
            self.perform();
            // A lone command is made durable and answered from here; under
            // load the log's thread syncs while the owner goes on.
            self.wal.commit(lone && rx.is_empty());
            self.send_accounting();
            if self.wal.bytes_in_generation > SNAPSHOT_BYTES {
                self.write_snapshot();
            }
            if self.core.shutdown {
                self.wal.sync_blocking();
                break;
            }
        }
    }

    /// Wait until everything logged so far is on disk.
    pub fn sync(&mut self) {
        self.wal.sync_blocking();
    }

    /// Write a snapshot: a new log generation.
    fn write_snapshot(&mut self) {
        self.perform();
        let core = &mut self.core;
        self.wal
            .snapshot_encoded(|generation| core.encode_snapshot(generation));
        self.send_accounting();
    }

    /// Hand this batch's accounting records to the record builder.
    fn send_accounting(&mut self) {
        let Some(tx) = &self.acct else {
            self.acct_batch.clear();
            return;
        };
        for (job, now) in self.acct_batch.drain(..) {
            let id = job.rec.job_id;
            if tx.send((self.core.cfg.clone(), job, now)).is_err() {
                tracing::error!("accounting record builder is gone; job {id} not recorded");
            } else {
                drover_proto::metrics::ACCT_QUEUED
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// Carry out what the core asked for, in order.
    fn perform(&mut self) {
        for e in self.core.take_effects() {
            match e {
                Effect::Log(rec) => self.wal.append(&rec),
                Effect::AfterDurable(f) => self.wal.after_durable(f),
                Effect::Account { job, now } => {
                    if self.acct.is_some() {
                        self.acct_batch.push((*job, now));
                    }
                }
                Effect::Launch { node, req, start } => {
                    let Some(mut agent) = self.agent(&node) else {
                        continue;
                    };
                    let tx = self.tx.clone();
                    let id = req.job_id;
                    tokio::spawn(async move {
                        let res = agent.launch(*req).await.map(|_| ()).map_err(Refusal::from);
                        let _ = tx
                            .send(Box::new(move |c: &mut Ctld| c.launch_done(id, start, res)))
                            .await;
                    });
                }
                Effect::Signal { node, req } => {
                    let Some(mut agent) = self.agent(&node) else {
                        continue;
                    };
                    tokio::spawn(async move {
                        let (id, step) = (req.job_id, req.step_id);
                        if let Err(e) = agent.signal_job(req).await {
                            tracing::debug!("signal to job {id} (step {step}): {}", e.message());
                        }
                    });
                }
                Effect::Suspend {
                    node,
                    req,
                    start,
                    attempt,
                } => {
                    let Some(mut agent) = self.agent(&node) else {
                        continue;
                    };
                    let tx = self.tx.clone();
                    tokio::spawn(async move {
                        let (id, suspend) = (req.job_id, req.suspend);
                        let Err(e) = agent.suspend_job(req).await else {
                            return;
                        };
                        let e = Refusal::from(e);
                        let _ = tx
                            .send(Box::new(move |c: &mut Ctld| {
                                c.suspend_failed(id, &node, suspend, start, attempt, &e)
                            }))
                            .await;
                    });
                }
                Effect::Later { delay, op } => {
                    let tx = self.tx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = tx.send(op).await;
                    });
                }
                Effect::Plan {
                    work,
                    depth,
                    queue_len,
                } => {
                    let tx = self.tx.clone();
                    tokio::task::spawn_blocking(move || {
                        let started = Instant::now();
                        let apply = work();
                        let planned = started.elapsed();
                        let _ = tx.blocking_send(Box::new(move |c: &mut Ctld| {
                            let applying = Instant::now();
                            apply(c);
                            // Plan, then the decisions carried out (the wait
                            // in the owner's queue in between is not counted).
                            c.diag
                                .record_cycle(planned + applying.elapsed(), depth, queue_len);
                        }));
                    });
                }
                Effect::ForgetAgents => self.agents.clear(),
                Effect::ReconfigureAgents { agents } => {
                    for (node, addr) in agents {
                        let Some(mut agent) = self.agents.get(&addr) else {
                            continue;
                        };
                        tokio::spawn(async move {
                            let mut req =
                                tonic::Request::new(drover_proto::AgentReconfigureRequest {});
                            req.set_timeout(Duration::from_secs(10));
                            if let Err(s) = agent.reconfigure(req).await {
                                tracing::warn!(
                                    "reconfigure: the agent of {node} ({addr}) refused: {}",
                                    s.message()
                                );
                            }
                        });
                    }
                }
                Effect::Mail(m) => {
                    // Sent once its record is durable: a mail is never sent
                    // that a restart would not know was due.
                    let prog = self.core.cfg.mail_prog.clone();
                    let sender = self.mail.clone();
                    self.wal
                        .after_durable(Box::new(move || sender.enqueue(prog, *m)));
                }
                Effect::RunProgram {
                    kind,
                    path,
                    nodes,
                    timeout,
                } => {
                    let tx = self.tx.clone();
                    tokio::spawn(async move {
                        let Err(why) = programs::run(kind, &path, &nodes, timeout).await else {
                            return;
                        };
                        let _ = tx
                            .send(Box::new(move |c: &mut Ctld| {
                                c.program_failed(kind, &nodes, &why)
                            }))
                            .await;
                    });
                }
                Effect::StartAccounting => {
                    if let Err(e) = self.start_accounting(self.agents.cred()) {
                        tracing::error!("reconfigure: accounting not started: {e}");
                    }
                }
            }
        }
    }

    /// Client for the agent serving `node`.
    fn agent(&self, node: &str) -> Option<drover_proto::client::Agent> {
        self.agents.get(&self.core.agent_addr(node)?)
    }
}
