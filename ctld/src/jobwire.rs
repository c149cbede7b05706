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
#[derive(Default)]
pub struct WireCache {
    made_for: Option<(JobMask, bool, Arc<Config>)>,
    jobs: FxHashMap<u32, Encoded>,
}

/// One job's bytes, and what they were written from.
struct Encoded {
    seq: u64,
    stamp: JobStamp,
    bytes: Box<[u8]>,
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

    fn put(&mut self, id: u32, seq: u64, stamp: JobStamp, bytes: &[u8]) {
        let bytes = bytes.into();
        self.jobs.insert(id, Encoded { seq, stamp, bytes });
    }

    /// Drop the bytes of jobs no longer known (of `total`), once the cache
    /// holds an eighth more than there are jobs.
    fn forget_gone(&mut self, total: usize, known: impl Fn(u32) -> bool) {
        if self.jobs.len() > total + total / 8 + 64 {
            self.jobs.retain(|&id, _| known(id));
        }
    }
}
