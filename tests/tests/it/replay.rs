//! Credentials cannot be replayed: a real credential (from the auth socket,
//! as the commands get theirs, or signed with the cluster's key, as daemons
//! sign theirs) is sent by a raw gRPC client, then sent again, attached to
//! another request, and sent after the daemon restarts.

use std::path::Path;
use std::time::Duration;

use drover_proto::acct::accounting_client::AccountingClient;
use drover_proto::acct::DbdPingRequest;
use drover_proto::auth::{request_token, Binding, ClusterKey, METADATA_KEY};
use drover_proto::authsock::AuthConn;
use drover_proto::controller_client::ControllerClient;
use drover_proto::node_agent_client::NodeAgentClient;
use drover_proto::{AgentPingRequest, GetJobsRequest, PingRequest};
use drover_tests::{Cluster, Spec};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

pub(crate) type Stamp =
    Box<dyn FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Send>;

/// The request body as gRPC sends it: uncompressed flag, length, message.
pub(crate) fn body(msg: &impl prost::Message) -> Vec<u8> {
    let m = msg.encode_to_vec();
    let mut b = vec![0u8];
    b.extend_from_slice(&(m.len() as u32).to_be_bytes());
    b.extend_from_slice(&m);
    b
}

/// A channel that attaches exactly `token` (what a wire capture would send).
pub(crate) fn with_token(addr: String, token: String) -> InterceptedService<Channel, Stamp> {
    let ch = drover_proto::client::channel(&addr, Duration::from_secs(5)).unwrap();
    let stamp: Stamp = Box::new(move |mut r: tonic::Request<()>| {
        r.metadata_mut()
            .insert(METADATA_KEY, token.parse().expect("token is ASCII"));
        Ok(r)
    });
    InterceptedService::new(ch, stamp)
}

fn ctld(c: &Cluster, token: &str) -> ControllerClient<InterceptedService<Channel, Stamp>> {
    ControllerClient::new(with_token(
        format!("127.0.0.1:{}", c.ctld_port),
        token.into(),
    ))
}

/// A credential from the cluster's auth socket, as the commands get theirs.
async fn user_token(c: &Cluster, method: &str, msg: &impl prost::Message) -> String {
    let bind = Binding::new(method, &body(msg));
    request_token(&c.path().join("auth.sock"), &bind)
        .await
        .unwrap()
}

fn refused(r: Result<impl std::fmt::Debug, tonic::Status>, words: &str) {
    let e = r.expect_err("the credential must be refused");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    assert!(e.message().contains(words), "{:?}", e.message());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const PING: &str = "/drover.Controller/Ping";
const GET_JOBS: &str = "/drover.Controller/GetJobs";

#[test]
fn controller_refuses_a_replayed_or_rebound_credential() {
    let c = Cluster::start(Spec::default());
    runtime().block_on(async {
        // The same request twice: the second is a replay.
        let tok = user_token(&c, PING, &PingRequest {}).await;
        let mut cl = ctld(&c, &tok);
        cl.ping(PingRequest {}).await.expect("first use passes");
        refused(cl.ping(PingRequest {}).await, "credential replayed");

        // Several credentials over one kept connection, each its own.
        let conn = AuthConn::new(c.path().join("auth.sock"));
        let bind = Binding::new(PING, &body(&PingRequest {}));
        let (a, b) = (
            conn.request(&bind).await.unwrap(),
            conn.request(&bind).await.unwrap(),
        );
        assert_ne!(a, b);
        ctld(&c, &a)
            .ping(PingRequest {})
            .await
            .expect("first of two");
        ctld(&c, &b)
            .ping(PingRequest {})
            .await
            .expect("second of two");

        // Attached to another method.
        let tok = user_token(&c, PING, &PingRequest {}).await;
        refused(
            ctld(&c, &tok).get_jobs(GetJobsRequest::default()).await,
            "credential made for /drover.Controller/Ping used for /drover.Controller/GetJobs",
        );

        // Attached to the same method with another body.
        let asked = GetJobsRequest {
            details: true,
            ..Default::default()
        };
        let tok = user_token(&c, GET_JOBS, &asked).await;
        let mut cl = ctld(&c, &tok);
        refused(
            cl.get_jobs(GetJobsRequest::default()).await,
            "credential made for another request",
        );
        // The refusal spent nothing: the request it was made for passes once.
        cl.get_jobs(asked.clone())
            .await
            .expect("bound request passes");
        refused(cl.get_jobs(asked).await, "credential replayed");
    });
    // A bad request on the auth socket is answered with the reason.
    {
        use std::io::{Read, Write};
        let mut s = std::os::unix::net::UnixStream::connect(c.path().join("auth.sock")).unwrap();
        s.write_all(b"give me root\n").unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert_eq!(answer, "error: expected 'sign METHOD DIGEST'\n");
    }
    // Commands, which sign every call, are unaffected.
    c.ok("squeue", &[]);
    c.ok("scontrol", &["ping"]);
    let log = c.log_text("droverctld");
    assert!(
        log.contains("authentication failure from 127.0.0.1:")
            && log.contains("droverctld: refused /drover.Controller/Ping (uid 0 host ")
            && log.contains("credential replayed"),
        "{log}"
    );
    assert!(log.contains("credential made for another request"), "{log}");
}

#[test]
fn credential_from_before_a_controller_restart_is_refused() {
    let mut c = Cluster::start(Spec::default());
    let rt = runtime();
    let tok = rt.block_on(user_token(&c, PING, &PingRequest {}));
    // A kept auth-socket connection dies with the controller ...
    let conn = AuthConn::new(c.path().join("auth.sock"));
    let bind = Binding::new(PING, &body(&PingRequest {}));
    rt.block_on(conn.request(&bind)).unwrap();
    c.stop_ctld();
    c.start_ctld().unwrap();
    // ... and is made again.
    let fresh = rt.block_on(conn.request(&bind)).unwrap();
    rt.block_on(async { ctld(&c, &fresh).ping(PingRequest {}).await })
        .expect("fresh credential after the restart");
    // Unused, within its lifetime and the skew, yet issued before the start.
    rt.block_on(async {
        refused(
            ctld(&c, &tok).ping(PingRequest {}).await,
            "credential issued before this daemon started",
        );
    });
    // Commands go on after the restart.
    c.ok("squeue", &[]);
}

#[test]
fn agent_and_accounting_daemon_refuse_replays() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    let rt = runtime();
    rt.block_on(async {
        // A daemon credential (uid 0, the cluster key), as the controller
        // sends the agent.
        let key = ClusterKey::load(Path::new(&c.path().join("drover.key"))).unwrap();
        let bind = Binding::new("/drover.NodeAgent/Ping", &body(&AgentPingRequest {}));
        let tok = key.issue_daemon("ctl", &bind);
        let mut agent =
            NodeAgentClient::new(with_token(format!("127.0.0.1:{}", c.agent_port), tok));
        agent.ping(AgentPingRequest {}).await.expect("first use");
        refused(agent.ping(AgentPingRequest {}).await, "credential replayed");

        let tok = user_token(&c, "/drover.acct.Accounting/Ping", &DbdPingRequest {}).await;
        let mut dbd = AccountingClient::new(with_token(format!("127.0.0.1:{}", c.dbd_port), tok));
        dbd.ping(DbdPingRequest {}).await.expect("first use");
        refused(dbd.ping(DbdPingRequest {}).await, "credential replayed");
    });
    let log = c.log_text("droverd");
    assert!(
        log.contains("authentication failure from 127.0.0.1:")
            && log.contains(
                "droverd: refused /drover.NodeAgent/Ping (uid 0 host ctl claimed): credential replayed"
            ),
        "{log}"
    );
    let log = c.log_text("droverdbd");
    assert!(
        log.contains("droverdbd: refused /drover.acct.Accounting/Ping ("),
        "{log}"
    );
}
