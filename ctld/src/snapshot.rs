//! The snapshot's bytes, written from the job table directly: each job's
//! record is encoded in place (its shared spec and request appended as
//! fields 6 and 10), not cloned into a `Snapshot` first — at 100,000 jobs
//! the clones were ~15 allocations each. Protobuf decoders accept fields in
//! any order, so `Snapshot::decode` reads the same state back.

use drover_proto::state::JobRecord;
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, message, WireType};
use prost::Message;

use crate::ctld::Ctld;
use crate::job::Job;

/// `Snapshot.jobs`.
const JOBS_FIELD: u32 = 3;
/// `JobRecord.spec` and `JobRecord.request`.
const SPEC_FIELD: u32 = 6;
const REQUEST_FIELD: u32 = 10;

impl Ctld {
    /// The whole durable state as `Snapshot` bytes, for log generation
    /// `wal_generation` (the blobs in it count as logged).
    pub fn encode_snapshot(&mut self, wal_generation: u64) -> Vec<u8> {
        let mut snap = self.snapshot_but_jobs();
        snap.wal_generation = wal_generation;
        let mut buf = snap.encode_to_vec();
        let mut meta_rec = JobRecord::default();
        for j in self.jobs.values() {
            // An array's meta record logs its pending tasks as text.
            let rec = if j.is_meta() {
                meta_rec.clone_from(&j.rec);
                if let Some(rt) = meta_rec.runtime.as_mut() {
                    rt.array_pending = crate::array::ranges(&j.pending_tasks);
                }
                &meta_rec
            } else {
                &j.rec
            };
            encode_job(JOBS_FIELD, j, rec, &mut buf);
        }
        buf
    }
}

/// `rec` (the job's record, spec and request left out) with `job`'s spec
/// and request, as field `tag`.
fn encode_job(tag: u32, job: &Job, rec: &JobRecord, buf: &mut Vec<u8>) {
    debug_assert!(rec.spec.is_none() && rec.request.is_none());
    let spec = job.spec();
    let len = rec.encoded_len()
        + message::encoded_len(SPEC_FIELD, spec)
        + job
            .request()
            .map_or(0, |r| message::encoded_len(REQUEST_FIELD, r));
    buf.reserve(len + encoded_len_varint(len as u64) + 2);
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
    rec.encode_raw(buf);
    message::encode(SPEC_FIELD, spec, buf);
    if let Some(r) = job.request() {
        message::encode(REQUEST_FIELD, r, buf);
    }
}

// Tested in scenario/shared.rs (the snapshot against `Ctld::snapshot`).
