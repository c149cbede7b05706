//! Arbitrary bytes as gRPC request bodies to every unary method of the
//! three daemons (controller, agent, accounting daemon), each with a valid
//! credential for exactly those bytes, so the body reaches the decoder and
//! the handler. Every call must be answered (an error, or an answer where
//! the bytes happen to be a valid request) and every daemon must stay up.
//! The fuzz targets (`bench/fuzz.sh`, `grpc_request`) cover the decoders in
//! process with millions of inputs; this is the same over the network.

use std::path::Path;
use std::time::Duration;

use drover_proto::auth::{Binding, ClusterKey, METADATA_KEY};
use drover_tests::{Cluster, Spec};
use prost::bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType};
use prost::DecodeError;

/// A request body sent as is: its "encoding" is the bytes themselves.
#[derive(Clone, Debug, Default, PartialEq)]
struct Raw(Vec<u8>);

impl prost::Message for Raw {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        buf.put_slice(&self.0);
    }
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        prost::encoding::skip_field(wire_type, tag, buf, ctx)
    }
    fn encoded_len(&self) -> usize {
        self.0.len()
    }
    fn clear(&mut self) {
        self.0.clear();
    }
}

/// Deterministic bytes (xorshift), so a failure can be run again.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Odd draws: plain random bytes. Even draws: protobuf-shaped fields
    /// (small tags, valid wire types, random values), which get past the
    /// first byte of the decoder far more often.
    fn body(&mut self, i: usize) -> Vec<u8> {
        let mut b = Vec::new();
        if i % 2 == 1 {
            for _ in 0..self.below(96) {
                b.push(self.next() as u8);
            }
            return b;
        }
        for _ in 0..self.below(8) {
            let field = 1 + self.below(40) as u8;
            match self.below(3) {
                0 => {
                    b.push(field << 3);
                    b.extend(std::iter::repeat_n(0xff, self.below(10) as usize));
                    b.push(self.next() as u8 & 0x7f);
                }
                1 => {
                    let len = self.below(24) as u8;
                    b.push((field << 3) | 2);
                    b.push(len.wrapping_add(self.below(3) as u8)); // sometimes too long
                    b.extend((0..len).map(|_| self.next() as u8));
                }
                _ => {
                    b.push((field << 3) | 5);
                    b.extend_from_slice(&(self.next() as u32).to_le_bytes());
                }
            }
        }
        b
    }
}

/// The request body as gRPC frames it: uncompressed flag, length, message.
fn frame(msg: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8];
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(msg);
    b
}

const CONTROLLER: &[&str] = &[
    "/drover.Controller/Submit",
    "/drover.Controller/GetJobs",
    "/drover.Controller/Cancel",
    "/drover.Controller/UpdateJob",
    "/drover.Controller/WaitJob",
    "/drover.Controller/GetNodes",
    "/drover.Controller/UpdateNode",
    "/drover.Controller/GetPartitions",
    "/drover.Controller/Ping",
    "/drover.Controller/GetConfig",
    "/drover.Controller/Reconfigure",
    "/drover.Controller/Register",
    "/drover.Controller/Heartbeat",
    "/drover.Controller/JobEnded",
    "/drover.Controller/JobStats",
    "/drover.Controller/CreateStep",
    "/drover.Controller/StepEnded",
    "/drover.Controller/CompleteAllocation",
    "/drover.Controller/AllocationAlive",
    "/drover.Controller/GetJobScript",
    "/drover.Controller/GetDiag",
    "/drover.Scheduler/GetPriorities",
    "/drover.Scheduler/GetShares",
    "/drover.Scheduler/CreateReservation",
    "/drover.Scheduler/UpdateReservation",
    "/drover.Scheduler/DeleteReservation",
    "/drover.Scheduler/GetReservations",
];

const AGENT: &[&str] = &[
    "/drover.NodeAgent/Launch",
    "/drover.NodeAgent/SignalJob",
    "/drover.NodeAgent/Ping",
    "/drover.NodeAgent/JobStats",
    "/drover.NodeAgent/StepLaunch",
    "/drover.NodeAgent/SuspendJob",
    "/drover.NodeAgent/ListPids",
];

const ACCOUNTING: &[&str] = &[
    "/drover.acct.Accounting/RecordJobs",
    "/drover.acct.Accounting/RegisterCluster",
    "/drover.acct.Accounting/GetJobs",
    "/drover.acct.Accounting/GetAssocs",
    "/drover.acct.Accounting/Modify",
    "/drover.acct.Accounting/GetUsage",
    "/drover.acct.Accounting/Ping",
];

/// How each daemon answered.
#[derive(Default, Debug)]
struct Tally {
    answered: usize,
    refused: usize,
}

/// Send `per_method` bodies to each method; every call must be answered
/// with a reply or a deliberate error (not a broken connection, a timeout
/// or an unknown error, which is what a handler panic looks like).
async fn hammer(addr: String, methods: &[&'static str], key: &ClusterKey, rng: &mut Rng) -> Tally {
    let ch = drover_proto::client::channel(&addr, Duration::from_secs(5)).unwrap();
    let mut tally = Tally::default();
    for method in methods {
        for i in 0..12 {
            let body = rng.body(i);
            let tok = key.issue_daemon("fuzz", &Binding::new(method, &frame(&body)));
            let mut req = tonic::Request::new(Raw(body.clone()));
            req.metadata_mut()
                .insert(METADATA_KEY, tok.parse().expect("token is ASCII"));
            req.set_timeout(Duration::from_secs(20));
            let mut grpc = tonic::client::Grpc::new(ch.clone());
            grpc.ready().await.expect("connection ready");
            let codec = tonic_prost::ProstCodec::<Raw, ()>::default();
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(method);
            match grpc.unary(req, path, codec).await {
                Ok(_) => tally.answered += 1,
                Err(s) => {
                    let deliberate = match s.code() {
                        tonic::Code::Unknown
                        | tonic::Code::Unavailable
                        | tonic::Code::Cancelled
                        | tonic::Code::DeadlineExceeded
                        | tonic::Code::Unauthenticated => false,
                        // tonic's own answer to bytes that are no message.
                        tonic::Code::Internal => s.message().contains("decode"),
                        _ => !s.message().is_empty(),
                    };
                    assert!(deliberate, "{addr}{method} body {body:02x?}: {s:?}");
                    tally.refused += 1;
                }
            }
        }
    }
    tally
}

#[test]
fn daemons_answer_arbitrary_request_bodies_and_stay_up() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    let key = ClusterKey::load(Path::new(&c.path().join("drover.key"))).unwrap();
    let pids_before = c.daemon_pids();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rng = Rng(0x5eed_d00d_cafe_f00d);
    let (ctl, agent, dbd) = rt.block_on(async {
        (
            hammer(
                format!("127.0.0.1:{}", c.ctld_port),
                CONTROLLER,
                &key,
                &mut rng,
            )
            .await,
            hammer(format!("127.0.0.1:{}", c.agent_port), AGENT, &key, &mut rng).await,
            hammer(
                format!("127.0.0.1:{}", c.dbd_port),
                ACCOUNTING,
                &key,
                &mut rng,
            )
            .await,
        )
    });
    eprintln!("controller {ctl:?}, agent {agent:?}, accounting {dbd:?}");
    // Most random bodies are no valid request: each daemon refused some.
    for t in [&ctl, &agent, &dbd] {
        assert!(t.refused > 0, "{t:?}");
    }
    // The same daemons are still there and still serve the commands.
    // (Random admin requests may have drained nodes or changed the queue,
    // so only that they answer is checked.)
    assert_eq!(c.daemon_pids(), pids_before);
    c.ok("sinfo", &[]);
    c.ok("squeue", &[]);
    c.ok("sacctmgr", &["show", "cluster"]);
}
