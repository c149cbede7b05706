//! `GetJobs`'s answer read job by job.
//!
//! Decoded as a `GetJobsResponse`, a listing of 10,000 jobs is 10,000
//! `JobInfo`s (about 1 KB each, a dozen strings) on a fresh heap, built to
//! be read once: page faults and allocations were most of `squeue`'s time.
//! [`get_jobs_encoded`] keeps the answer's bytes as they came, and
//! [`each_job`] decodes them one job at a time into one reused record, so a
//! command keeps only what it prints. The bytes are the same
//! `GetJobsResponse` every other client decodes.

use bytes::{Buf, Bytes};
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext, WireType};
use prost::{DecodeError, Message};
use tonic::Status;

use crate::signing::Signed;
use crate::wirecodec::{unary, Prost};
use crate::{GetJobsRequest, JobInfo};

/// `GetJobs`, its answer left encoded (read it with [`each_job`]).
pub async fn get_jobs_encoded(svc: Signed, req: GetJobsRequest) -> Result<Bytes, Status> {
    unary(svc, "drover.Controller", "GetJobs", Prost(req)).await
}

/// Walk an encoded `GetJobsResponse`: `f` sees each job in turn, decoded
/// into the same record (cleared in between, its buffers kept). Returns
/// the answer's `now`, or what is wrong with the bytes.
pub fn each_job(mut buf: &[u8], mut f: impl FnMut(&JobInfo)) -> Result<i64, String> {
    let bad = |e: DecodeError| e.to_string();
    let mut job = JobInfo::default();
    let mut now = 0i64;
    while buf.has_remaining() {
        let (tag, wire) = decode_key(&mut buf).map_err(bad)?;
        match (tag, wire) {
            (1, WireType::LengthDelimited) => {
                let len = decode_varint(&mut buf).map_err(bad)?;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&l| l <= buf.len())
                    .ok_or("a job's length runs past the answer")?;
                job.clear();
                job.merge(&buf[..len]).map_err(bad)?;
                buf.advance(len);
                f(&job);
            }
            (2, WireType::Varint) => now = decode_varint(&mut buf).map_err(bad)? as i64,
            (1 | 2, _) => return Err(format!("field {tag} has wire type {wire:?}")),
            _ => skip_field(wire, tag, &mut buf, DecodeContext::default()).map_err(bad)?,
        }
    }
    Ok(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GetJobsResponse, JobState};

    fn answer() -> GetJobsResponse {
        let mut a = JobInfo {
            job_id: 7,
            name: "first".into(),
            user_name: "alice".into(),
            nodes: "n[1-2]".into(),
            features: "gpu".into(),
            state: JobState::Running as i32,
            ..Default::default()
        };
        a.alloc.push(crate::NodeAlloc::default());
        // The second has fewer fields set: none of the first's may leak.
        let b = JobInfo {
            job_id: 8,
            name: "second".into(),
            ..Default::default()
        };
        GetJobsResponse {
            jobs: vec![a, b],
            now: 1_700_000_000,
        }
    }

    #[test]
    fn each_job_sees_what_decoding_the_answer_sees() {
        let want = answer();
        let bytes = want.encode_to_vec();
        let mut got = Vec::new();
        let now = each_job(&bytes, |j| got.push(j.clone())).unwrap();
        assert_eq!(now, want.now);
        assert_eq!(got, want.jobs);
    }

    #[test]
    fn a_cut_or_garbled_answer_is_an_error_not_a_panic() {
        let bytes = answer().encode_to_vec();
        for cut in 1..bytes.len() {
            let _ = each_job(&bytes[..cut], |_| {});
        }
        assert!(each_job(&bytes[..bytes.len() - 3], |_| {}).is_err());
        assert!(each_job(&[0x0a, 0xff, 0xff, 0xff, 0x0f], |_| {}).is_err());
        // A job as a number (field 1, varint) is garbled, as prost says.
        assert!(GetJobsResponse::decode(&[0x08, 0x01][..]).is_err());
        assert!(each_job(&[0x08, 0x01], |_| {}).is_err());
        // A field it does not know is skipped, as prost does.
        assert_eq!(each_job(&[0x18, 0x05, 0x10, 0x07], |_| {}).unwrap(), 7);
        assert_eq!(each_job(&[], |_| {}).unwrap(), 0);
    }
}
