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

use crate::refusal::Refusal;
use drover_proto::auth::Identity;
use drover_proto::jobmask::JobMask;
use drover_proto::{GetJobsRequest, JobInfo};
use prost::Message;

use crate::ctld::Ctld;
use crate::jobstamp::SharesBySpec;

impl Ctld {
    /// The kept encodings of listings with or without details.
    fn kept_listings(&mut self, details: bool) -> &mut crate::wirecache::WireCache {
        if details {
            &mut self.detailed_wire_cache
        } else {
            &mut self.wire_cache
        }
    }

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
        let mut cache = std::mem::take(self.kept_listings(details));
        cache.for_listing(mask, details, &self.cfg);
        let mut scratch = JobInfo::default();
        // As large as the last listing (growing by doubling copies it).
        let mut buf = Vec::with_capacity(cache.last_answer.max(64 * 1024));
        let mut shares = SharesBySpec::default();
        self.each_listed(who, &f, |c, j| {
            let stamp = c.stamp(j, now, &mut shares);
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
        cache.tidy(self.jobs.len(), |id| self.jobs.contains_key(&id));
        cache.last_answer = buf.len();
        *self.kept_listings(details) = cache;
        self.names = names;
        if now != 0 {
            prost::encoding::int64::encode(2, &now, &mut buf);
        }
        Ok(buf)
    }
}
