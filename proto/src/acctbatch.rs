//! `RecordJobs` from records already encoded.
//!
//! The controller's accounting outbox keeps each `JobRecord` as prost
//! encoded it. A `RecordJobsRequest` on the wire is those records, each as
//! its field 1 (`repeated JobRecord jobs = 1`): [`record_jobs_encoded`]
//! writes them so, instead of decoding a batch (up to 2 MiB) into records
//! and encoding it again. The accounting daemon decodes the same bytes as
//! from any other client.

use bytes::BufMut;
use prost::encoding::{encode_key, encode_varint, WireType};
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

/// Encoded `JobRecord`s as `RecordJobsRequest`'s field 1.
struct Records(Vec<Vec<u8>>);

impl ToWire for Records {
    fn to_wire(self, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // Key (1 byte) and length (at most 10) before each record.
        dst.reserve(self.0.iter().map(|r| r.len() + 11).sum());
        put_records(&self.0, dst);
        Ok(())
    }
}

/// Each record as field 1, length-delimited.
fn put_records(records: &[Vec<u8>], dst: &mut impl BufMut) {
    for r in records {
        encode_key(1, WireType::LengthDelimited, dst);
        encode_varint(r.len() as u64, dst);
        dst.put_slice(r);
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
        put_records(&records, &mut buf);
        let want = RecordJobsRequest { jobs: jobs.clone() }.encode_to_vec();
        assert_eq!(&buf[..], &want[..]);
        assert_eq!(RecordJobsRequest::decode(&buf[..]).unwrap().jobs, jobs);
    }
}
