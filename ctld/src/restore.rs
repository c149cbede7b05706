//! Rebuilding the core's state after a restart from what the log held.

use drover_proto::state::{wal_record::Kind, Snapshot, WalRecord};
use drover_proto::JobState;

use crate::ctld::Ctld;
use crate::job::Job;

impl Ctld {
    /// Rebuild the state from a snapshot and the log records written after
    /// it (what `wal::recover` read).
    pub fn restore(&mut self, snapshot: Option<Snapshot>, records: Vec<WalRecord>) {
        let c = self;
        let mut node_records = Vec::new();
        let mut part_edits = Vec::new();
        if let Some(s) = snapshot {
            c.next_job_id = c.next_job_id.max(s.next_job_id);
            for b in s.blobs {
                c.blobs.insert_raw(b.id, b.data);
            }
            for j in s.jobs {
                c.jobs.insert(j.job_id, Box::new(Job::from_record(j)));
            }
            node_records.extend(s.nodes);
            c.recover_sched(s.usage, s.resvs);
            c.mail.load(s.mails, s.next_mail_id);
            part_edits = s.part_edits.map(|e| e.edits).unwrap_or_default();
        }
        for r in records {
            match r.kind {
                Some(Kind::Job(j)) => {
                    c.next_job_id = c.next_job_id.max(j.job_id.saturating_add(1));
                    c.jobs.insert(j.job_id, Box::new(Job::from_record(j)));
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
                Some(Kind::Node(n)) => node_records.push(n),
                Some(Kind::NextJobId(n)) => c.next_job_id = c.next_job_id.max(n),
                Some(k @ (Kind::Usage(_) | Kind::Resv(_) | Kind::ResvDelete(_))) => {
                    c.replay_sched(k)
                }
                Some(k @ (Kind::MailDue(_) | Kind::MailSent(_))) => c.mail.replay(k),
                Some(Kind::PartEdits(e)) => part_edits = e.edits,
                Some(Kind::Epoch(_)) | None => {}
            }
        }
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
            if let Some(job) = c.jobs.get_mut(&id) {
                c.shared.share_spec(job);
            }
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
