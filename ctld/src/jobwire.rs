//! squeue's listing encoded straight into the bytes of its answer.
//!
//! On the wire a `GetJobsResponse` is its jobs, each a length-delimited
//! field 1, then `now` (field 2). [`Ctld::get_jobs_wire`] fills one scratch
//! `JobInfo` per job, reusing its strings' buffers
//! ([`crate::jobinfo::fill_job_info`]), and appends its encoding to one
//! buffer: no record per job is built, moved or freed, and the RPC layer
//! (`rpc/jobs.rs`) sends the bytes as they are. They are the bytes prost
//! writes for [`Ctld::get_jobs`]'s answer (the tests compare them), so every
//! client decodes the `GetJobsResponse` it always did.

use std::sync::Arc;

use crate::refusal::Refusal;
use drover_conf::Config;
use drover_proto::auth::Identity;
use drover_proto::jobmask::JobMask;
use drover_proto::{GetJobsRequest, JobInfo, JobStamp};
use prost::Message;
use rustc_hash::FxHashMap;

use crate::ctld::Ctld;

impl Ctld {
    /// [`Ctld::get_jobs`]'s answer, encoded.
    pub fn get_jobs_wire(
        &mut self,
        who: &Identity,
        req: GetJobsRequest,
    ) -> Result<Vec<u8>, Refusal> {
        let f = req.filter.clone().unwrap_or_default();
        if !f.job_ids.is_empty() {
            // Named jobs (a few records, with their own errors).
            return self.get_jobs(who, req).map(|r| r.encode_to_vec());
        }
        let (details, now) = (req.details, self.now);
        // Fields the caller does not read are reset before encoding: off
        // the wire (`GetJobsRequest.fields`).
        let mask = JobMask::of(&req.fields);
        let mut names = std::mem::take(&mut self.names);
        let mut cache = std::mem::take(&mut self.wire_cache);
        cache.for_listing(mask, details, &self.cfg);
        let mut scratch = JobInfo::default();
        let mut buf = Vec::with_capacity(64 * 1024);
        self.each_listed(who, &f, |c, j| {
            let stamp = c.stamp(j, now);
            if let Some(bytes) = cache.get(j.id(), j.seq, &stamp) {
                buf.extend_from_slice(bytes);
                return;
            }
            let start = buf.len();
            crate::jobinfo::fill_job_info(&c.cfg, &mut names, j, details, now, &mut scratch);
            c.add_expected_start(&mut scratch);
            mask.apply(&mut scratch);
            prost::encoding::message::encode(1, &scratch, &mut buf);
            cache.put(j.id(), j.seq, stamp, &buf[start..]);
        });
        cache.forget_gone(self.jobs.len(), |id| self.jobs.contains_key(&id));
        self.wire_cache = cache;
        self.names = names;
        if now != 0 {
            prost::encoding::int64::encode(2, &now, &mut buf);
        }
        Ok(buf)
    }
}

/// Each listed job's encoding (field 1 of the answer, key and length
/// included) as the last listing wrote it, for the fields, `details` and
/// configuration that listing had.
/// At most this much memory (about: entries and bytes) is kept. A
/// 110,000-job listing of squeue's default fields takes about 22 MiB; one
/// with `details` (`--json`) would take twice this, so only its first jobs
/// are kept.
const BUDGET: usize = 32 << 20;

pub struct WireCache {
    made_for: Option<(JobMask, bool, Arc<Config>)>,
    jobs: FxHashMap<u32, Encoded>,
    /// What `jobs` holds, about ([`Encoded::cost`]), and at most.
    held: usize,
    budget: usize,
}

impl Default for WireCache {
    fn default() -> WireCache {
        WireCache {
            made_for: None,
            jobs: FxHashMap::default(),
            held: 0,
            budget: BUDGET,
        }
    }
}

/// One job's bytes, and what they were written from.
struct Encoded {
    seq: u64,
    stamp: JobStamp,
    bytes: Box<[u8]>,
}

impl Encoded {
    /// Its memory, about: the map's slot and the bytes' heap block.
    fn cost(&self) -> usize {
        std::mem::size_of::<(u32, Encoded)>() + self.bytes.len() + 16
    }
}

impl WireCache {
    /// Ready for a listing of these fields: what was written for others,
    /// or under another configuration, is dropped. (Holding the
    /// configuration, the cache makes an in-place edit of it a new one.)
    fn for_listing(&mut self, mask: JobMask, details: bool, cfg: &Arc<Config>) {
        let same = self
            .made_for
            .as_ref()
            .is_some_and(|(m, d, c)| *m == mask && *d == details && Arc::ptr_eq(c, cfg));
        if !same {
            self.jobs.clear();
            self.held = 0;
            self.made_for = Some((mask, details, cfg.clone()));
        }
    }

    /// The job's kept bytes, if written at this change number and stamp.
    fn get(&self, id: u32, seq: u64, stamp: &JobStamp) -> Option<&[u8]> {
        self.jobs
            .get(&id)
            .filter(|e| e.seq == seq && e.stamp == *stamp)
            .map(|e| &*e.bytes)
    }

    /// Keep the job's bytes, within the budget ([`BUDGET`]).
    fn put(&mut self, id: u32, seq: u64, stamp: JobStamp, bytes: &[u8]) {
        let bytes = bytes.into();
        let e = Encoded { seq, stamp, bytes };
        let old = self.jobs.get(&id).map_or(0, Encoded::cost);
        if self.held - old + e.cost() > self.budget {
            return;
        }
        self.held = self.held - old + e.cost();
        self.jobs.insert(id, e);
    }

    /// Drop the bytes of jobs no longer known (of `total`), once the cache
    /// holds an eighth more than there are jobs.
    fn forget_gone(&mut self, total: usize, known: impl Fn(u32) -> bool) {
        if self.jobs.len() > total + total / 8 + 64 {
            self.jobs.retain(|&id, _| known(id));
            self.held = self.jobs.values().map(Encoded::cost).sum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(id: u32) -> JobStamp {
        JobStamp {
            job_id: id,
            ..Default::default()
        }
    }

    #[test]
    fn kept_within_the_budget_and_dropped_for_other_fields() {
        let cfg = Arc::new(Config::default());
        let mask = JobMask::of(&[1, 2]);
        let one = Encoded {
            seq: 0,
            stamp: stamp(0),
            bytes: vec![0u8; 40].into(),
        }
        .cost();
        let mut c = WireCache {
            budget: 3 * one,
            ..Default::default()
        };
        c.for_listing(mask, false, &cfg);
        for id in 1..=5 {
            c.put(id, 1, stamp(id), &[id as u8; 40]);
        }
        // Three fit; the others are written afresh each time.
        assert_eq!(c.jobs.len(), 3);
        assert_eq!(c.get(1, 1, &stamp(1)), Some(&[1u8; 40][..]));
        assert_eq!(c.get(5, 1, &stamp(5)), None);
        // A kept job written again replaces its bytes within the budget.
        c.put(1, 2, stamp(1), &[9; 40]);
        assert_eq!(c.get(1, 1, &stamp(1)), None);
        assert_eq!(c.get(1, 2, &stamp(1)), Some(&[9u8; 40][..]));
        // Another stamp is another record.
        let mut moved = stamp(2);
        moved.priority = 7;
        assert_eq!(c.get(2, 1, &moved), None);
        // Jobs gone are forgotten once the cache outgrows the queue.
        c.forget_gone(0, |id| id == 2);
        assert_eq!(c.jobs.len(), 3, "within the slack");
        // Other fields, or another configuration: nothing kept.
        c.for_listing(JobMask::of(&[1]), false, &cfg);
        assert!(c.jobs.is_empty() && c.held == 0);
        c.put(3, 1, stamp(3), &[3; 40]);
        c.for_listing(JobMask::of(&[1]), false, &Arc::new(Config::default()));
        assert!(c.jobs.is_empty());
    }
}
