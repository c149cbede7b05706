//! Authenticated gRPC clients for the controller and node agents.

use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use crate::controller_client::ControllerClient;
use crate::node_agent_client::NodeAgentClient;
pub use crate::signing::{Credential, Signed, Targets, UserIds};

pub type Controller = ControllerClient<Signed>;
pub type Agent = NodeAgentClient<Signed>;

/// Makes each connection of a channel through [`crate::tls::connect`].
#[derive(Clone, Copy)]
struct Connector;

impl tower::Service<http::Uri> for Connector {
    type Response = hyper_util::rt::TokioIo<crate::tls::Conn>;
    type Error = std::io::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, std::io::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), std::io::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        Box::pin(async move {
            let host = uri.host().unwrap_or_default().to_string();
            let port = uri.port_u16().unwrap_or(80);
            crate::tls::connect(&host, port)
                .await
                .map(hyper_util::rt::TokioIo::new)
        })
    }
}

/// A channel to `host:port` that connects on first use (over TLS where
/// [`crate::tls`] says so).
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
    Ok(ep.connect_with_connector_lazy(Connector))
}

/// The controllers at `addrs` (`host:port`, comma-separated, in
/// `SlurmctldHost` order), each call going to the active one; a failover
/// in progress is waited for up to `patience`.
pub fn targets(addrs: &str, patience: Duration) -> Result<Targets, String> {
    let links = channels(addrs)?.into_iter().map(crate::link::Link::Channel);
    Ok(Targets::new(links.collect(), patience))
}

fn channels(addrs: &str) -> Result<Vec<Channel>, String> {
    let chans = addrs
        .split(',')
        .filter(|a| !a.is_empty())
        .map(|a| channel(a, Duration::from_secs(5)))
        .collect::<Result<Vec<_>, _>>()?;
    if chans.is_empty() {
        return Err(format!("bad address {addrs:?}: no controller"));
    }
    Ok(chans)
}

/// How long a call waits out a failover: the backup takes over within
/// `SlurmctldTimeout` when one is configured.
fn patience(cfg: &drover_conf::Config) -> Duration {
    if cfg.slurmctld_host.len() > 1 {
        Duration::from_secs(cfg.slurmctld_timeout + cfg.message_timeout)
    } else {
        Duration::ZERO
    }
}

/// The controllers a configuration names, waiting out a failover (the
/// backup takes over within `SlurmctldTimeout`) with a backup configured.
pub fn targets_for(cfg: &drover_conf::Config) -> Result<Targets, String> {
    targets(&cfg.controller_addrs(), patience(cfg))
}

/// A connection to this host's controller on its local socket
/// ([`crate::localsock`]), when the configuration has one and a controller
/// answers there; with its path.
pub fn local_controller(
    cfg: &drover_conf::Config,
) -> Option<(std::path::PathBuf, std::os::unix::net::UnixStream)> {
    let path = cfg.local_socket()?;
    let conn = crate::localsock::connect(&path)?;
    Some((path, conn))
}

/// [`targets_for`], with the controller on this host reached through
/// `local` ([`local_controller`]) when given: the only target with one
/// controller configured; tried first, then the others over TCP, with a
/// backup (the local one may be in standby).
pub fn targets_via(
    cfg: &drover_conf::Config,
    local: Option<(std::path::PathBuf, std::os::unix::net::UnixStream)>,
) -> Result<Targets, String> {
    let Some((path, first)) = local else {
        return targets_for(cfg);
    };
    let local = crate::localcall::LocalCalls::new(path, first);
    let others = if cfg.slurmctld_host.len() > 1 {
        channels(&cfg.controller_addrs())?
    } else {
        Vec::new()
    };
    Ok(Targets::local_first(local, others, patience(cfg)))
}

/// The controllers of a configuration ([`targets_for`]).
pub fn controller_for(cfg: &drover_conf::Config, cred: Credential) -> Result<Controller, String> {
    Ok(controller_over(targets_for(cfg)?, cred))
}

/// The generated client over `targets`.
pub fn controller_over(targets: Targets, cred: Credential) -> Controller {
    controller_of(Signed::new(targets, cred))
}

/// The generated client over a signing connection.
pub fn controller_of(svc: Signed) -> Controller {
    ControllerClient::new(svc)
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES)
}

/// The controller(s) at `addr` (comma-separated for several; see [`targets`]).
pub fn controller(addr: &str, cred: Credential) -> Result<Controller, String> {
    let ch = targets(addr, Duration::ZERO)?;
    Ok(ControllerClient::new(Signed::new(ch, cred))
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES))
}

pub fn agent(addr: &str, cred: Credential) -> Result<Agent, String> {
    let ch = channel(addr, Duration::from_secs(5))?;
    Ok(NodeAgentClient::new(Signed::new(ch, cred))
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES))
}

/// Who sent an incoming request, as the daemon's [`crate::verify::AuthLayer`]
/// verified it (credential bound to this request, not replayed).
pub fn identity<T>(
    _key: &crate::auth::ClusterKey,
    req: &tonic::Request<T>,
) -> Result<crate::auth::Identity, tonic::Status> {
    req.extensions()
        .get::<crate::auth::Identity>()
        .cloned()
        .ok_or_else(|| {
            crate::authlog::refused(req.remote_addr(), "none", "a call without a credential");
            tonic::Status::unauthenticated("Authentication failure: no credential")
        })
}

/// Client of the scheduler service (priorities, shares, reservations).
pub type Scheduler = crate::scheduler_client::SchedulerClient<Signed>;

pub fn scheduler(addr: &str, cred: Credential) -> Result<Scheduler, String> {
    scheduler_over(targets(addr, Duration::ZERO)?, cred)
}

/// The Scheduler service of the controllers a configuration names.
pub fn scheduler_for(cfg: &drover_conf::Config, cred: Credential) -> Result<Scheduler, String> {
    scheduler_over(targets_for(cfg)?, cred)
}

/// The generated Scheduler client over `ch`.
pub fn scheduler_over(ch: Targets, cred: Credential) -> Result<Scheduler, String> {
    Ok(
        crate::scheduler_client::SchedulerClient::new(Signed::new(ch, cred))
            .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(crate::MAX_MESSAGE_BYTES),
    )
}

pub type Accounting = crate::acct::accounting_client::AccountingClient<Signed>;

/// Client for the accounting daemon (droverdbd).
pub fn accounting(addr: &str, cred: Credential) -> Result<Accounting, String> {
    accounting_service(addr, cred).map(accounting_over)
}

/// The accounting daemon's connection itself, for calls made without the
/// generated client (`crate::acctbatch`).
pub fn accounting_service(addr: &str, cred: Credential) -> Result<Signed, String> {
    Ok(Signed::new(channel(addr, Duration::from_secs(5))?, cred))
}

/// The generated client over an [`accounting_service`].
pub fn accounting_over(svc: Signed) -> Accounting {
    crate::acct::accounting_client::AccountingClient::new(svc)
        .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
        .max_encoding_message_size(crate::MAX_MESSAGE_BYTES)
}
