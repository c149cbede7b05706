//! Rebuilding the core's state after a restart from what the log held.

use drover_proto::state::{wal_record::Kind, NodeStateRecord, Snapshot, WalRecord};
use drover_proto::{JobState, PartitionEdit};

use crate::ctld::Ctld;
use crate::job::Job;

/// A restore in progress: the snapshot, then the log's records one by one
/// (each applied as it is decoded: `wal::recover`), then [`Restore::finish`].
pub struct Restore<'a> {
    c: &'a mut Ctld,
    node_records: Vec<NodeStateRecord>,
    part_edits: Vec<PartitionEdit>,
}

impl Ctld {
    /// Rebuild the state from a snapshot and the log records written after
    /// it.
    pub fn restore(&mut self, snapshot: Option<Snapshot>, records: Vec<WalRecord>) {
        let mut r = self.restoring();
        if let Some(s) = snapshot {
            r.snapshot(s);
        }
        for rec in records {
            r.record(rec);
        }
        r.finish();
    }

    /// Start a restore (the state is empty: a fresh core).
    pub fn restoring(&mut self) -> Restore<'_> {
        Restore {
            c: self,
            node_records: Vec::new(),
            part_edits: Vec::new(),
        }
    }
}

impl Restore<'_> {
    pub fn snapshot(&mut self, s: Snapshot) {
        let c = &mut *self.c;
        c.next_job_id = c.next_job_id.max(s.next_job_id);
        for b in s.blobs {
            c.blobs.insert_raw(b.id, b.data);
        }
        for j in s.jobs {
            let mut job = Job::from_record(j);
            c.shared.share_spec(&mut job);
            c.jobs.insert(job.id(), Box::new(job));
        }
        self.node_records.extend(s.nodes);
        c.recover_sched(s.usage, s.resvs);
        c.mail.load(s.mails, s.next_mail_id);
        self.part_edits = s.part_edits.map(|e| e.edits).unwrap_or_default();
    }

    pub fn record(&mut self, r: WalRecord) {
        let c = &mut *self.c;
        match r.kind {
            Some(Kind::Job(j)) => {
                c.next_job_id = c.next_job_id.max(j.job_id.saturating_add(1));
                // Shared at once: the job's own copy of an equal spec is
                // freed before the next record is decoded.
                let mut job = Job::from_record(j);
                c.shared.share_spec(&mut job);
                c.jobs.insert(job.id(), Box::new(job));
            }
            Some(Kind::Runtime(u)) => {
                if let (Some(job), Some(rt)) = (c.jobs.get_mut(&u.job_id), u.runtime) {
                    if rt.is_array_meta {
                        job.pending_tasks = crate::array::parse_ranges(&rt.array_pending);
                    }
                    job.rec.runtime = Some(rt);
                }
            }
            Some(Kind::Purge(id)) => {
                c.jobs.remove(&id);
            }
            Some(Kind::Blob(b)) => c.blobs.insert_raw(b.id, b.data),
            Some(Kind::Node(n)) => self.node_records.push(n),
            Some(Kind::NextJobId(n)) => c.next_job_id = c.next_job_id.max(n),
            Some(k @ (Kind::Usage(_) | Kind::Resv(_) | Kind::ResvDelete(_))) => c.replay_sched(k),
            Some(k @ (Kind::MailDue(_) | Kind::MailSent(_))) => c.mail.replay(k),
            Some(Kind::PartEdits(e)) => self.part_edits = e.edits,
            Some(Kind::Epoch(_)) | None => {}
        }
    }

    /// Derived state: partition edits, node states, blob references,
    /// allocations, the array index, requests, the queue and its indexes.
    pub fn finish(self) {
        let Restore {
            c,
            node_records,
            part_edits,
        } = self;
        c.replay_partition_edits(part_edits);
        for n in node_records {
            if let Some(i) = c.cluster.node_idx(&n.name) {
                let node = &mut c.cluster.nodes[i];
                node.drain = n.drain;
                node.down = n.down;
                node.down_not_responding = n.down && n.not_responding;
                node.reason = n.reason;
                node.reason_uid = n.reason_uid;
                node.reason_time = n.reason_time;
                node.power = crate::nodepower::Power::from_record(n.power);
                node.power_since = n.power_since;
                node.power_down_asap = n.power_down_asap;
                node.learned_addr = (!n.addr.is_empty()).then_some(n.addr);
            }
        }
        // Rebuild derived state: blob references, allocations, array index.
        let ids: Vec<u32> = c.jobs.keys().copied().collect();
        for id in ids {
            let job = &c.jobs[&id];
            c.next_job_id = c.next_job_id.max(id.saturating_add(1));
            c.blobs.retain_ref(job.rec.script_blob);
            c.blobs.retain_ref(job.rec.env_blob);
            let rt = job.rt();
            if rt.array_job_id != 0 && !rt.is_array_meta {
                c.array_tasks.entry(rt.array_job_id).or_default().push(id);
            }
            if matches!(
                job.state(),
                JobState::Running
                    | JobState::Completing
                    | JobState::Suspended
                    | JobState::Configuring
            ) {
                let lender = job.state() == JobState::Suspended && rt.preempt_suspended;
                let (allocs, share) = (crate::suspend::held_allocs(rt), rt.share);
                c.cluster.allocate(id, &allocs, share);
                if lender {
                    c.lenders.insert(id);
                }
            }
        }
        c.blobs.drop_unreferenced();
        c.refresh_requests();
        let all: Vec<u32> = c.jobs.keys().copied().collect();
        for id in all {
            c.sync_queue(id);
        }
        c.resend_due_mails();
    }
}
