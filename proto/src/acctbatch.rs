//! `RecordJobs` from records already encoded.
//!
//! The controller's accounting outbox keeps each `JobRecord` as prost
//! encoded it. A `RecordJobsRequest` on the wire is those records, each as
//! its field 1 (`repeated JobRecord jobs = 1`): [`record_jobs_encoded`]
//! writes them so, instead of decoding a batch (up to 2 MiB) into records
//! and encoding it again. The accounting daemon decodes the same bytes as
//! from any other client.

use bytes::{Buf, BufMut};
use prost::encoding::{decode_key, encode_key, encode_varint, skip_field, DecodeContext, WireType};
use tonic::codec::EncodeBuf;
use tonic::Status;

use crate::acct::RecordJobsResponse;
use crate::signing::Signed;
use crate::wirecodec::{unary, Prost, ToWire};

/// `RecordJobs` with `records` (each an encoded `JobRecord`) as its jobs;
/// the number the daemon stored.
pub async fn record_jobs_encoded(svc: Signed, records: Vec<Vec<u8>>) -> Result<u32, Status> {
    let answer: Prost<RecordJobsResponse> = unary(
        svc,
        "drover.acct.Accounting",
        "RecordJobs",
        Records(records),
    )
    .await?;
    Ok(answer.0.stored)
}

/// Does `b` read as a protobuf message: every field's key, length and
/// value within the bytes? (What the daemon's decoder would trip over,
/// checked without building the record.)
pub fn well_formed(mut b: &[u8]) -> bool {
    while b.has_remaining() {
        let Ok((tag, wire)) = decode_key(&mut b) else {
            return false;
        };
        if skip_field(wire, tag, &mut b, DecodeContext::default()).is_err() {
            return false;
        }
    }
    true
}

/// Encoded `JobRecord`s as `RecordJobsRequest`'s field 1.
struct Records(Vec<Vec<u8>>);

impl ToWire for Records {
    fn to_wire(self, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // Key (1 byte) and length (at most 10) before each record.
        dst.reserve(self.0.iter().map(|r| r.len() + 11).sum());
        for r in &self.0 {
            encode_key(1, WireType::LengthDelimited, dst);
            encode_varint(r.len() as u64, dst);
            dst.put_slice(r);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acct::{JobRecord, RecordJobsRequest};
    use prost::Message;

    #[test]
    fn the_request_is_the_bytes_prost_writes() {
        let jobs: Vec<JobRecord> = (1..=3)
            .map(|i| JobRecord {
                job_id: i,
                name: format!("job {i}").repeat(i as usize * 50),
                ..Default::default()
            })
            .collect();
        let records: Vec<Vec<u8>> = jobs.iter().map(|j| j.encode_to_vec()).collect();
        let mut buf = bytes::BytesMut::new();
        for r in &records {
            encode_key(1, WireType::LengthDelimited, &mut buf);
            encode_varint(r.len() as u64, &mut buf);
            buf.put_slice(r);
        }
        let want = RecordJobsRequest { jobs: jobs.clone() }.encode_to_vec();
        assert_eq!(&buf[..], &want[..]);
        assert_eq!(RecordJobsRequest::decode(&buf[..]).unwrap().jobs, jobs);
    }

    #[test]
    fn well_formed_records_and_broken_ones() {
        let r = JobRecord {
            job_id: 7,
            name: "x".into(),
            ..Default::default()
        }
        .encode_to_vec();
        assert!(well_formed(&r));
        assert!(well_formed(&[]));
        // Cut short inside a field; a length running past the end; a
        // reserved wire type.
        assert!(!well_formed(&r[..r.len() - 1]));
        assert!(!well_formed(&[0x12, 0x05, b'a']));
        assert!(!well_formed(&[0x0f]));
    }
}
