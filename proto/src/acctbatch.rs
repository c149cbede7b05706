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
use prost::Message;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::{GrpcMethod, Status};

use crate::acct::RecordJobsResponse;
use crate::signing::Signed;

/// `RecordJobs` with `records` (each an encoded `JobRecord`) as its jobs;
/// the number the daemon stored.
pub async fn record_jobs_encoded(svc: Signed, records: Vec<Vec<u8>>) -> Result<u32, Status> {
    let mut grpc = tonic::client::Grpc::new(svc)
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES);
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(format!("Service was not ready: {e}")))?;
    let path = http::uri::PathAndQuery::from_static("/drover.acct.Accounting/RecordJobs");
    let mut req = tonic::Request::new(records);
    req.extensions_mut()
        .insert(GrpcMethod::new("drover.acct.Accounting", "RecordJobs"));
    grpc.unary(req, path, EncodedRecords)
        .await
        .map(|r| r.into_inner().stored)
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

/// Writes the records as `RecordJobsRequest`'s field 1; reads the answer.
#[derive(Debug, Clone, Copy, Default)]
struct EncodedRecords;

impl Codec for EncodedRecords {
    type Encode = Vec<Vec<u8>>;
    type Decode = RecordJobsResponse;
    type Encoder = EncodedRecords;
    type Decoder = EncodedRecords;

    fn encoder(&mut self) -> EncodedRecords {
        EncodedRecords
    }
    fn decoder(&mut self) -> EncodedRecords {
        EncodedRecords
    }
}

impl Encoder for EncodedRecords {
    type Item = Vec<Vec<u8>>;
    type Error = Status;

    fn encode(&mut self, records: Vec<Vec<u8>>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // Key (1 byte) and length (at most 10) before each record.
        dst.reserve(records.iter().map(|r| r.len() + 11).sum());
        for r in &records {
            encode_key(1, WireType::LengthDelimited, dst);
            encode_varint(r.len() as u64, dst);
            dst.put_slice(r);
        }
        Ok(())
    }
}

impl Decoder for EncodedRecords {
    type Item = RecordJobsResponse;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<RecordJobsResponse>, Status> {
        RecordJobsResponse::decode(src)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acct::{JobRecord, RecordJobsRequest};

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
