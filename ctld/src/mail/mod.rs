//! Job mail (`--mail-type`, `--mail-user`): which mails are due, decided in
//! the core as Slurm 23.11 decides them (`node_scheduler.c` at a start,
//! `job_mgr.c`'s `job_completion_logger` at an end, `job_time_limit` for the
//! TIME_LIMIT_* mails, `handle_invalid_dependency`), and what they say
//! (`compose.rs`: subject and MailProg's environment; END and FAIL mails
//! carry seff's summary, `drover_proto::seff`, and why the job failed).
//!
//! A due mail is a [`MailRecord`] logged (`WalRecord.mail_due`) and then
//! handed to the runtime (`Effect::Mail`), which runs `MailProg` once the
//! record is durable (`runtime/mail.rs`) and reports back ([`Ctld::mail_sent`]
//! logs `WalRecord.mail_sent`). Mails due and not yet sent are in snapshots
//! and are sent again after a restart: at least once, and once unless the
//! controller dies between MailProg's end and that record reaching disk.

pub mod compose;
pub mod outbox;
pub mod types;

use drover_proto::state::{wal_record::Kind, MailRecord, WalRecord};
use drover_proto::JobState;

use crate::ctld::{Ctld, Effect};
use crate::job::Job;
use compose::{wait_status, ArrayStats, Facts, Form};
pub use outbox::Outbox;
use types::{
    ARRAY_TASKS, BEGIN, END, FAIL, INVALID_DEPEND, REQUEUE, TIME100, TIME50, TIME80, TIME90,
};

/// At most this many tasks are summarised in an array's END/FAIL mail.
const SUMMARY_TASKS: usize = 100;

/// `--mail-type` of a job as bits (0: no mail).
fn bits(job: &Job) -> u32 {
    let t = &job.spec().mail_type;
    if t.is_empty() {
        0
    } else {
        types::parse(t)
    }
}

/// A task of an array (not the pending meta record).
fn is_task(job: &Job) -> bool {
    job.rt().array_job_id != 0 && !job.is_meta()
}

/// Slurm's `base_state >= JOB_FAILED`: the states a FAIL mail is for.
fn failed(state: JobState) -> bool {
    matches!(
        state,
        JobState::Failed
            | JobState::Timeout
            | JobState::NodeFail
            | JobState::Preempted
            | JobState::BootFail
            | JobState::Deadline
            | JobState::OutOfMemory
    )
}

fn stats(job: &Job) -> ArrayStats {
    let rt = job.rt();
    ArrayStats {
        ended: rt.array_tasks_ended,
        exit_min: rt.array_exit_min,
        exit_max: rt.array_exit_max,
        requeued: rt.array_task_requeued,
    }
}

impl Ctld {
    /// The job a mail about `id` tells of, and how (`mail_job_info`: an
    /// array task without ARRAY_TASKS is told as its array's summary).
    fn mail_subject(&self, id: u32, bits: u32) -> Option<(u32, Form)> {
        let job = self.jobs.get(&id)?;
        let rt = job.rt();
        let own_record = |j: &Job| j.rt().array_job_id != 0 && j.id() == j.rt().array_job_id;
        let mut subject = id;
        if bits & ARRAY_TASKS == 0
            && is_task(job)
            && !own_record(job)
            && self.jobs.contains_key(&rt.array_job_id)
        {
            subject = rt.array_job_id;
        }
        let s = &self.jobs[&subject];
        let form = if own_record(s) && bits & ARRAY_TASKS == 0 {
            Form::Summary
        } else if is_task(s) {
            Form::Task
        } else {
            Form::Plain
        };
        Some((subject, form))
    }

    /// Who gets the mails of `job`: `--mail-user`, else the user
    /// (`@MailDomain` appended when set).
    fn mail_recipient(&mut self, job: &Job) -> String {
        let spec = job.spec();
        if !spec.mail_user.is_empty() {
            return spec.mail_user.clone();
        }
        let user = if job.rec.user_name.is_empty() {
            self.names.user(job.rec.uid).to_string()
        } else {
            job.rec.user_name.clone()
        };
        match self.cfg.get("MailDomain").map(str::trim) {
            Some(d) if !d.is_empty() => format!("{user}@{d}"),
            _ => user,
        }
    }

    /// `SLURM_JOB_OVERSUBSCRIBE` (Slurm's `get_job_share_value`).
    fn oversubscribe_text(&self, job: &Job) -> &'static str {
        let spec = job.spec();
        if spec.oversubscribe {
            return "YES";
        }
        if spec.exclusive {
            return "NO";
        }
        let part = if job.rt().partition.is_empty() {
            spec.partition.split(',').next().unwrap_or("")
        } else {
            &job.rt().partition
        };
        let Some(p) = self.cluster.part_idx(part.trim()) else {
            return "OK";
        };
        let os = self.cluster.parts[p]
            .conf
            .over_subscribe
            .to_ascii_uppercase();
        if os == "EXCLUSIVE" {
            return "NO";
        }
        if let Some(n) = os.strip_prefix("FORCE") {
            let n = n.trim_start_matches(':').parse::<u32>().unwrap_or(4);
            if n > 1 {
                return "YES";
            }
        }
        "OK"
    }

    /// The efficiency figures of a job (for END and FAIL mails).
    fn mail_usage(&mut self, job: &Job) -> drover_proto::seff::Usage {
        let rt = job.rt();
        let state = job.state();
        let steps_cpu: u64 = rt.steps.iter().map(|s| s.cpu_time_usec).sum();
        let steps_rss = rt.steps.iter().map(|s| s.max_rss_kb).max().unwrap_or(0);
        drover_proto::seff::Usage {
            job_id: job.id(),
            array_id: is_task(job).then(|| format!("{}_{}", rt.array_job_id, rt.array_task_id)),
            cluster: self.cfg.cluster_name.clone(),
            user: self.names.user(job.rec.uid).to_string(),
            group: self.names.group(job.rec.gid).to_string(),
            state: state.long_name().to_string(),
            finished: state.is_final(),
            exit_code: rt.exit_code,
            nodes: rt.alloc.len() as u32,
            cpus: rt.alloc.iter().map(|a| a.cpus).sum(),
            elapsed_secs: crate::suspend::run_secs(rt, state, self.now) as u64,
            cpu_secs: steps_cpu.max(rt.cpu_time_usec) / 1_000_000,
            max_rss_kb: steps_rss.max(rt.max_rss_kb),
            mem_mb: rt.alloc.iter().map(|a| a.mem_mb).sum(),
            gpus: rt
                .alloc
                .iter()
                .flat_map(|a| a.gres.iter())
                .filter(|g| g.name == "gpu")
                .map(|g| g.indices.len() as u32 + g.count as u32)
                .sum(),
            gpu_util_pct: rt.gpu_util_pct,
            gpu_mem_mb: rt.gpu_mem_max_mb,
        }
    }

    /// The body of an END/FAIL mail about `subject`: its summary, or for an
    /// array's summary every task still known (up to [`SUMMARY_TASKS`]).
    fn mail_body(&mut self, subject: &Job, form: Form) -> String {
        let mut jobs: Vec<Job> = Vec::new();
        if form == Form::Summary {
            let a = subject.rt().array_job_id;
            let mut ids: Vec<u32> = self.array_tasks.get(&a).cloned().unwrap_or_default();
            if !ids.contains(&a) && !subject.is_meta() {
                ids.push(a);
            }
            ids.sort_by_key(|i| self.jobs.get(i).map_or(0, |j| j.rt().array_task_id));
            ids.dedup();
            jobs.extend(
                ids.iter()
                    .filter_map(|i| self.jobs.get(i))
                    .map(|j| (**j).clone()),
            );
        }
        if jobs.is_empty() {
            jobs.push(subject.clone());
        }
        let more = jobs.len().saturating_sub(SUMMARY_TASKS);
        let mut parts: Vec<String> = jobs
            .iter()
            .take(SUMMARY_TASKS)
            .map(|j| {
                let u = self.mail_usage(j);
                let mut text = drover_proto::seff::efficiency_summary(&u);
                let why = &j.rt().system_comment;
                if !why.is_empty() {
                    // seff's `Failure:` line (the agent's GPU OOM finding).
                    text.push_str(&format!(
                        "Failure: {}\n",
                        drover_proto::text::printable(why)
                    ));
                }
                text
            })
            .collect();
        if more > 0 {
            parts.push(format!("... and {more} more tasks (seff shows them all)\n"));
        }
        parts.join("\n")
    }

    /// Queue mail `kind` about job `about` (the mail of `owner`, whose
    /// `--mail-user` it goes to): logged, then handed to the runtime.
    fn queue_mail(&mut self, owner: u32, about: u32, kind: u32, form: Form) {
        let (Some(owner), Some(subject)) = (self.jobs.get(&owner), self.jobs.get(&about)) else {
            return;
        };
        let (owner, subject) = ((**owner).clone(), (**subject).clone());
        let recipient = self.mail_recipient(&owner);
        let info = self.job_info(&subject);
        let oversubscribe = self.oversubscribe_text(&subject);
        let facts = Facts {
            job: &subject,
            info: &info,
            cluster: &self.cfg.cluster_name,
            oversubscribe,
            array: stats(&subject),
        };
        let (subject_line, env) = compose::compose(kind, form, &facts, self.now);
        let body = if matches!(kind, END | FAIL) {
            self.mail_body(&subject, form)
        } else {
            String::new()
        };
        let id = self.mail.next_id.max(1);
        self.mail.next_id = id + 1;
        let m = MailRecord {
            id,
            job_id: about,
            mail_type: types::words(kind).to_string(),
            recipient,
            subject: subject_line,
            env,
            body,
        };
        tracing::debug!("email msg to {}: {}", m.recipient, m.subject);
        self.log(WalRecord {
            kind: Some(Kind::MailDue(m.clone())),
        });
        self.mail.due.insert(id, m.clone());
        self.effects.push(Effect::Mail(Box::new(m)));
    }

    /// Queue `kind` about `id` as Slurm's `mail_job_info` would.
    fn mail_job(&mut self, id: u32, kind: u32) {
        let Some(b) = self.jobs.get(&id).map(|j| bits(j)) else {
            return;
        };
        if let Some((about, form)) = self.mail_subject(id, b) {
            self.queue_mail(id, about, kind, form);
        }
    }

    /// A job started: BEGIN (for an array without ARRAY_TASKS, only when
    /// its first task starts).
    pub fn mail_started(&mut self, id: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let b = bits(job);
        if b & BEGIN == 0 {
            return;
        }
        if b & ARRAY_TASKS == 0 && is_task(job) && !self.first_array_task(job) {
            return;
        }
        self.mail_job(id, BEGIN);
    }

    /// Slurm's `_first_array_task`: this task is the only one running and
    /// none has ended.
    fn first_array_task(&self, job: &Job) -> bool {
        let a = job.rt().array_job_id;
        let Some(master) = self.jobs.get(&a) else {
            return true;
        };
        if master.rt().array_tasks_ended > 0 {
            return false;
        }
        // The array's own record is in its task list once it runs.
        let mut ids = self.array_tasks.get(&a).cloned().unwrap_or_default();
        ids.push(a);
        ids.sort_unstable();
        ids.dedup();
        let mut running = 0;
        for t in ids {
            let Some(j) = self.jobs.get(&t) else { continue };
            match j.state() {
                _ if j.is_meta() => {}
                JobState::Pending => {}
                s if s.is_final() => return false,
                _ => running += 1,
            }
        }
        running <= 1
    }

    /// Fold an ended task into its array's own record (for the summary).
    fn note_array_task_end(&mut self, id: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let (a, s) = (
            job.rt().array_job_id,
            wait_status(job.rt().exit_code, job.rt().exit_signal),
        );
        let Some(master) = self.jobs.get_mut(&a) else {
            return;
        };
        let rt = master.rt_mut();
        if rt.array_tasks_ended == 0 {
            rt.array_exit_min = s;
            rt.array_exit_max = s;
        } else {
            rt.array_exit_min = rt.array_exit_min.min(s);
            rt.array_exit_max = rt.array_exit_max.max(s);
        }
        rt.array_tasks_ended += 1;
        self.log_runtime(a);
    }

    /// Every task of array `a` has ended and none is left to start.
    fn array_finished(&self, a: u32) -> bool {
        let Some(master) = self.jobs.get(&a) else {
            return false;
        };
        if !master.state().is_final() || !master.pending_tasks.is_empty() {
            return false;
        }
        self.array_tasks
            .get(&a)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .filter_map(|t| self.jobs.get(t))
            .all(|j| j.state().is_final())
    }

    /// A job reached its final state (already logged): END and FAIL
    /// mails (`job_completion_logger`). An array without ARRAY_TASKS gets
    /// one summary when its last task has ended.
    pub fn mail_ended(&mut self, id: u32) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let b = bits(job);
        if b == 0 {
            return;
        }
        let a = job.rt().array_job_id;
        let state = job.state();
        if a != 0 && b & ARRAY_TASKS == 0 {
            // The pending remainder of an array cancelled is not a task.
            if !job.is_meta() {
                self.note_array_task_end(id);
            }
            if !self.array_finished(a) {
                return;
            }
            let st = stats(&self.jobs[&a]);
            if st.requeued && b & REQUEUE != 0 {
                self.queue_mail(id, a, REQUEUE, Form::Summary);
            }
            let task_failed = st.exit_max & 0x7f == 0 && (st.exit_max >> 8) & 0xff != 0;
            if task_failed && b & FAIL != 0 {
                self.queue_mail(id, a, FAIL, Form::Summary);
            } else if b & END != 0 {
                self.queue_mail(id, a, END, Form::Summary);
            }
            return;
        }
        if b & FAIL != 0 && failed(state) {
            self.mail_job(id, FAIL);
        } else if b & END != 0 && state.is_final() {
            self.mail_job(id, END);
        }
    }

    /// A running job is being requeued; its run (start, `end`) is still
    /// in its record: REQUEUE. An array task without ARRAY_TASKS only marks
    /// its array ("with requeued tasks").
    pub fn mail_requeued(&mut self, id: u32, end: i64) {
        let Some(job) = self.jobs.get(&id) else {
            return;
        };
        let b = bits(job);
        if b == 0 {
            return;
        }
        if is_task(job) && b & ARRAY_TASKS == 0 {
            let a = job.rt().array_job_id;
            if let Some(m) = self.jobs.get_mut(&a) {
                if !m.rt().array_task_requeued {
                    m.rt_mut().array_task_requeued = true;
                    self.log_runtime(a);
                }
            }
            return;
        }
        if b & REQUEUE == 0 {
            return;
        }
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let before = job.rt().end_time;
        job.rt_mut().end_time = end;
        self.mail_job(id, REQUEUE);
        if let Some(job) = self.jobs.get_mut(&id) {
            job.rt_mut().end_time = before;
        }
    }

    /// The job's dependency can never be satisfied: INVALID_DEPEND, once.
    pub fn mail_invalid_dependency(&mut self, id: u32) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let b = bits(job);
        if b & INVALID_DEPEND == 0 || job.rt().mail_done & INVALID_DEPEND != 0 {
            return;
        }
        job.rt_mut().mail_done |= INVALID_DEPEND;
        self.log_runtime(id);
        self.mail_job(id, INVALID_DEPEND);
    }

    /// Running jobs (`ids`, those with a mail type) that reached 50, 80,
    /// 90 or 100% of their time limit at `t`: one mail each, once.
    pub fn mail_time_limits(&mut self, ids: &[u32], t: i64) {
        for &id in ids {
            let Some(job) = self.jobs.get(&id) else {
                continue;
            };
            let want = bits(job) & (TIME100 | TIME90 | TIME80 | TIME50) & !job.rt().mail_done;
            if want == 0 || job.state() != JobState::Running {
                continue;
            }
            let Some(end) = crate::suspend::limit_end(job.rt()) else {
                continue;
            };
            let limit = i64::from(job.rt().time_limit) * 60;
            // Slurm: now + limit * (1 - fraction) >= end, in whole numbers.
            let due = [
                (TIME100, t >= end),
                (TIME90, 10 * t + limit >= 10 * end),
                (TIME80, 5 * t + limit >= 5 * end),
                (TIME50, 2 * t + limit >= 2 * end),
            ];
            let now: Vec<u32> = due
                .iter()
                .filter(|(k, reached)| want & k != 0 && *reached)
                .map(|(k, _)| *k)
                .collect();
            if now.is_empty() {
                continue;
            }
            let job = self.jobs.get_mut(&id).expect("job present");
            for k in &now {
                job.rt_mut().mail_done |= k;
            }
            self.log_runtime(id);
            for k in now {
                self.mail_job(id, k);
            }
        }
    }

    /// The runtime is done with mail `id` (sent, failed or given up): it
    /// is not sent again.
    pub fn mail_sent(&mut self, id: u64) {
        if self.mail.due.remove(&id).is_some() {
            self.log(WalRecord {
                kind: Some(Kind::MailSent(id)),
            });
        }
    }

    /// After a restart: hand the runtime every mail still due, in order.
    pub fn resend_due_mails(&mut self) {
        let due: Vec<MailRecord> = self.mail.due.values().cloned().collect();
        if !due.is_empty() {
            tracing::info!(
                "{} job mails were due and not sent: sending them",
                due.len()
            );
        }
        for m in due {
            self.effects.push(Effect::Mail(Box::new(m)));
        }
    }
}
