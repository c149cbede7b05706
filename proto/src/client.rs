//! Authenticated gRPC clients for the controller and node agents.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use crate::auth::{ClusterKey, METADATA_KEY};
use crate::controller_client::ControllerClient;
use crate::node_agent_client::NodeAgentClient;

/// Adds the credential to every request.
#[derive(Clone)]
pub struct Credential {
    inner: Arc<CredInner>,
}

enum CredInner {
    /// A user's token from the local auth socket.
    Fixed(String),
    /// A daemon signing its own tokens, refreshed well before they expire.
    Daemon(Box<DaemonCred>),
}

struct DaemonCred {
    key: ClusterKey,
    host: String,
    cached: Mutex<(String, Instant)>,
}

impl Credential {
    pub fn user(token: String) -> Credential {
        Credential {
            inner: Arc::new(CredInner::Fixed(token)),
        }
    }

    pub fn daemon(key: ClusterKey, host: String) -> Credential {
        let tok = key.issue_daemon(&host);
        Credential {
            inner: Arc::new(CredInner::Daemon(Box::new(DaemonCred {
                key,
                host,
                cached: Mutex::new((tok, Instant::now())),
            }))),
        }
    }

    pub fn token(&self) -> String {
        match &*self.inner {
            CredInner::Fixed(t) => t.clone(),
            CredInner::Daemon(d) => {
                let mut c = d.cached.lock().unwrap_or_else(|p| p.into_inner());
                if c.1.elapsed() > Duration::from_secs(60) {
                    *c = (d.key.issue_daemon(&d.host), Instant::now());
                }
                c.0.clone()
            }
        }
    }
}

impl tonic::service::Interceptor for Credential {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let v = MetadataValue::try_from(self.token())
            .map_err(|_| tonic::Status::unauthenticated("credential is not valid metadata"))?;
        req.metadata_mut().insert(METADATA_KEY, v);
        Ok(req)
    }
}

pub type Controller = ControllerClient<InterceptedService<Channel, Credential>>;
pub type Agent = NodeAgentClient<InterceptedService<Channel, Credential>>;

/// A channel to `host:port` that connects on first use.
pub fn channel(addr: &str, connect_timeout: Duration) -> Result<Channel, String> {
    let uri = if addr.starts_with("http://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    let ep = Endpoint::from_shared(uri.clone())
        .map_err(|e| format!("bad address {addr}: {e}"))?
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        // Big answers (a 100,000-job queue) should not crawl through 64 KiB
        // flow-control windows.
        .initial_stream_window_size(Some(8 * 1024 * 1024))
        .initial_connection_window_size(Some(16 * 1024 * 1024))
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    Ok(ep.connect_lazy())
}

pub fn controller(addr: &str, cred: Credential) -> Result<Controller, String> {
    let ch = channel(addr, Duration::from_secs(5))?;
    Ok(ControllerClient::with_interceptor(ch, cred)
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES))
}

pub fn agent(addr: &str, cred: Credential) -> Result<Agent, String> {
    let ch = channel(addr, Duration::from_secs(5))?;
    Ok(NodeAgentClient::with_interceptor(ch, cred)
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES))
}

/// Verify the credential on an incoming request.
pub fn identity<T>(
    key: &ClusterKey,
    req: &tonic::Request<T>,
) -> Result<crate::auth::Identity, tonic::Status> {
    let Some(tok) = req
        .metadata()
        .get(METADATA_KEY)
        .and_then(|v| v.to_str().ok())
    else {
        crate::authlog::refused(req.remote_addr(), "no credential", "");
        return Err(tonic::Status::unauthenticated(
            "Authentication failure: no credential",
        ));
    };
    key.verify(tok).map_err(|e| {
        crate::authlog::refused(
            req.remote_addr(),
            &e.to_string(),
            &crate::auth::claimed_host(tok),
        );
        tonic::Status::unauthenticated(format!("Authentication failure: {e}"))
    })
}

/// Client of the scheduler service (priorities, shares, reservations).
pub type Scheduler =
    crate::scheduler_client::SchedulerClient<InterceptedService<Channel, Credential>>;

pub fn scheduler(addr: &str, cred: Credential) -> Result<Scheduler, String> {
    let ch = channel(addr, Duration::from_secs(5))?;
    Ok(
        crate::scheduler_client::SchedulerClient::with_interceptor(ch, cred)
            .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(crate::MAX_MESSAGE_BYTES),
    )
}

pub type Accounting =
    crate::acct::accounting_client::AccountingClient<InterceptedService<Channel, Credential>>;

/// Client for the accounting daemon (droverdbd).
pub fn accounting(addr: &str, cred: Credential) -> Result<Accounting, String> {
    let ch = channel(addr, Duration::from_secs(5))?;
    Ok(
        crate::acct::accounting_client::AccountingClient::with_interceptor(ch, cred)
            .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(crate::MAX_MESSAGE_BYTES),
    )
}
