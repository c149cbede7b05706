//! Client side of the credentials: a service over the tonic channel that
//! collects each (unary, bounded) request body (a streaming call's is passed
//! on as it comes: its credential binds the method only), gets a credential bound to
//! its method and digest (from the local auth socket, or signed with the
//! cluster key by a daemon), adds it to the headers and sends the same
//! bytes; on the controller's local socket it adds none (the kernel says
//! who the caller is, [`crate::localsock`]). A refusal because the credential predates the daemon's start (it
//! restarted in between) is retried once with a fresh credential. A call
//! the controller's rate limit refused ([`crate::RATE_LIMITED`]) is sent
//! again after 1 s, then 2 s, 3 s... as long as it is refused, as Slurm's
//! clients do.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tonic::body::Body;
use tonic::transport::Channel;

use crate::auth::{Binding, ClusterKey, BEFORE_START, METADATA_KEY};
use crate::authsock::AuthConn;
use crate::link::Link;
use crate::localcall::LocalCalls;

use crate::BoxError;

/// Where a client's credentials come from.
#[derive(Clone)]
pub struct Credential {
    inner: Arc<CredInner>,
}

enum CredInner {
    /// A user asking the local auth socket, once per call.
    User(AuthConn),
    /// A daemon signing its own, with the cluster key.
    Daemon { key: ClusterKey, host: String },
    /// A daemon holding the cluster key acting for a user it authenticated
    /// itself (the REST daemon, after checking the user's JWT).
    OnBehalf {
        key: ClusterKey,
        host: String,
        user: UserIds,
    },
}

/// The ids a credential made on a user's behalf carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserIds {
    pub uid: u32,
    pub gid: u32,
    pub groups: Vec<u32>,
}

impl Credential {
    /// A user's credentials, from the auth socket at `socket`.
    pub fn user(socket: PathBuf) -> Credential {
        Credential {
            inner: Arc::new(CredInner::User(AuthConn::new(socket))),
        }
    }

    pub fn daemon(key: ClusterKey, host: String) -> Credential {
        Credential {
            inner: Arc::new(CredInner::Daemon { key, host }),
        }
    }

    /// Credentials for `user`, signed with the cluster key: the controller
    /// sees exactly that user (permissions, PrivateData).
    pub fn on_behalf(key: ClusterKey, host: String, user: UserIds) -> Credential {
        Credential {
            inner: Arc::new(CredInner::OnBehalf { key, host, user }),
        }
    }

    /// A credential for one request.
    pub async fn token_for(&self, bind: &Binding) -> Result<String, String> {
        match &*self.inner {
            CredInner::User(conn) => conn.request(bind).await,
            CredInner::Daemon { key, host } => Ok(key.issue_daemon(host, bind)),
            CredInner::OnBehalf { key, host, user } => {
                Ok(key.issue_user(user.uid, user.gid, &user.groups, host, 60, bind))
            }
        }
    }
}

/// The controllers a client may reach, in order (`SlurmctldHost` lines):
/// a call goes to the one that answered last; when it cannot be reached or
/// answers that it is in standby, the next is tried, round and round for
/// up to `patience` (a failover in progress). One channel: no retries.
/// The first channel may be the local controller's Unix socket
/// ([`crate::localsock`]): calls on it carry no credential (the kernel
/// says who the caller is).
#[derive(Clone)]
pub struct Targets {
    chans: Arc<Vec<Link>>,
    /// `chans[0]` is the controller's local socket.
    local: bool,
    preferred: Arc<AtomicUsize>,
    patience: Duration,
}

impl Targets {
    pub fn new(chans: Vec<Link>, patience: Duration) -> Targets {
        Targets {
            chans: Arc::new(chans),
            local: false,
            preferred: Arc::new(AtomicUsize::new(0)),
            patience,
        }
    }

    /// `local` (a channel over the controller's local socket) first, then
    /// `others` (the controllers over TCP: a backup, when the local one is
    /// in standby).
    pub fn local_first(local: LocalCalls, others: Vec<Channel>, patience: Duration) -> Targets {
        let mut chans = vec![Link::Local(local)];
        chans.extend(others.into_iter().map(Link::Channel));
        Targets {
            local: true,
            ..Targets::new(chans, patience)
        }
    }

    /// The credential for a call on channel `i`: none on the local socket.
    fn cred_for<'a>(&self, i: usize, cred: &'a Credential) -> Option<&'a Credential> {
        (!(self.local && i == 0)).then_some(cred)
    }
}

impl From<Channel> for Targets {
    fn from(ch: Channel) -> Targets {
        Targets::new(vec![Link::Channel(ch)], Duration::ZERO)
    }
}

/// A channel that signs every request.
#[derive(Clone)]
pub struct Signed {
    targets: Targets,
    inner: Link,
    cred: Credential,
}

impl Signed {
    pub fn new(targets: impl Into<Targets>, cred: Credential) -> Signed {
        let targets = targets.into();
        let inner = targets.chans[0].clone();
        Signed {
            targets,
            inner,
            cred,
        }
    }
}

/// Was this response a refusal of a credential issued before the daemon
/// started?
fn refused_as_before_start(resp: &http::Response<Body>) -> bool {
    tonic::Status::from_header_map(resp.headers()).is_some_and(|s| {
        s.code() == tonic::Code::Unauthenticated && s.message().contains(BEFORE_START)
    })
}

impl tower::Service<http::Request<Body>> for Signed {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        tower::Service::poll_ready(&mut self.inner, cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let cred = self.cred.clone();
        let targets = self.targets.clone();
        let mut first = 0;
        if targets.chans.len() > 1 {
            // Streaming calls go to the controller that answered last.
            first = targets.preferred.load(Ordering::Relaxed) % targets.chans.len();
            inner = targets.chans[first].clone();
        }
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            if crate::auth::is_streaming(parts.uri.path()) {
                // The body is a stream: sign the method, pass the stream on.
                let mut parts = parts;
                if let Some(cred) = targets.cred_for(first, &cred) {
                    let bind = Binding::new(parts.uri.path(), &[]);
                    let token = match cred.token_for(&bind).await {
                        Ok(t) => t,
                        Err(e) => return Ok(tonic::Status::unauthenticated(e).into_http()),
                    };
                    let value = http::HeaderValue::from_str(&token)
                        .map_err(|_| "credential is not a valid header value")?;
                    parts.headers.insert(METADATA_KEY, value);
                }
                let req = http::Request::from_parts(parts, body);
                std::future::poll_fn(|cx| tower::Service::poll_ready(&mut inner, cx)).await?;
                return tower::Service::call(&mut inner, req).await;
            }
            let bytes: Bytes = body.collect().await?.to_bytes();
            if targets.chans.len() == 1 {
                let cred = targets.cred_for(0, &cred);
                // Without a credential (the local socket) nothing is bound:
                // no digest of the body to make.
                let bind = match cred {
                    Some(_) => Binding::new(parts.uri.path(), &bytes),
                    None => Binding::method_only(parts.uri.path()),
                };
                return recovering(&mut inner, cred, &bind, &bytes, parts).await;
            }
            let bind = Binding::new(parts.uri.path(), &bytes);
            failover(&targets, &cred, &bind, &bytes, parts).await
        })
    }
}

/// A copy of a request's head (the body is sent again from `bytes`).
fn head(parts: &http::request::Parts) -> http::request::Parts {
    let mut r = http::Request::new(());
    *r.method_mut() = parts.method.clone();
    *r.uri_mut() = parts.uri.clone();
    *r.version_mut() = parts.version;
    *r.headers_mut() = parts.headers.clone();
    r.into_parts().0
}

/// Was this response the rate limit's refusal?
fn rate_limited(resp: &http::Response<Body>) -> bool {
    tonic::Status::from_header_map(resp.headers()).is_some_and(|s| {
        s.code() == tonic::Code::ResourceExhausted && s.message() == crate::RATE_LIMITED
    })
}

/// Send to one daemon; while its rate limit refuses the call, again after
/// a pause one second longer each time (Slurm's
/// `slurm_send_recv_controller_msg`).
async fn send(
    inner: &mut Link,
    cred: Option<&Credential>,
    bind: &Binding,
    bytes: &Bytes,
    parts: http::request::Parts,
) -> Result<http::Response<Body>, BoxError> {
    let mut limited = 0u64;
    loop {
        let resp = send_once(inner, cred, bind, bytes, head(&parts)).await?;
        if !rate_limited(&resp) {
            return Ok(resp);
        }
        limited += 1;
        tracing::info!("RPC rate limited {limited} time(s). Sleeping then trying again.");
        tokio::time::sleep(Duration::from_secs(limited)).await;
    }
}

/// Send to one daemon, again with a fresh credential if it restarted.
async fn send_once(
    inner: &mut Link,
    cred: Option<&Credential>,
    bind: &Binding,
    bytes: &Bytes,
    parts: http::request::Parts,
) -> Result<http::Response<Body>, BoxError> {
    let again = head(&parts);
    let first = attempt(inner, cred, bind, bytes, parts).await?;
    if !refused_as_before_start(&first) {
        return Ok(first);
    }
    tracing::debug!("{}: the daemon restarted, fresh credential", bind.method);
    attempt(inner, cred, bind, bytes, again).await
}

/// How long a lone controller that is still recovering its state (it
/// answers "not the active controller" until it serves) is waited for.
const RECOVERY_PATIENCE: Duration = Duration::from_secs(30);

/// Send to the one controller, again every 200 ms while it says it is not
/// active yet (recovering its state after a restart), for up to
/// [`RECOVERY_PATIENCE`].
async fn recovering(
    inner: &mut Link,
    cred: Option<&Credential>,
    bind: &Binding,
    bytes: &Bytes,
    parts: http::request::Parts,
) -> Result<http::Response<Body>, BoxError> {
    let deadline = Instant::now() + RECOVERY_PATIENCE;
    loop {
        let resp = send(inner, cred, bind, bytes, head(&parts)).await?;
        if !crate::standby::is_not_active(&resp) || Instant::now() >= deadline {
            return Ok(resp);
        }
        tracing::debug!("{}: the controller is recovering, waiting", bind.method);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Try the controllers in turn from the one that answered last, skipping
/// one that cannot be reached or is in standby; once round, then again
/// every half second until `patience` has passed (a backup taking over).
async fn failover(
    targets: &Targets,
    cred: &Credential,
    bind: &Binding,
    bytes: &Bytes,
    parts: http::request::Parts,
) -> Result<http::Response<Body>, BoxError> {
    let deadline = Instant::now() + targets.patience;
    let n = targets.chans.len();
    loop {
        let start = targets.preferred.load(Ordering::Relaxed);
        let mut last = None;
        for k in 0..n {
            let i = (start + k) % n;
            let mut ch = targets.chans[i].clone();
            let cred = targets.cred_for(i, cred);
            match send(&mut ch, cred, bind, bytes, head(&parts)).await {
                Ok(resp) if !crate::standby::is_not_active(&resp) => {
                    targets.preferred.store(i, Ordering::Relaxed);
                    return Ok(resp);
                }
                other => {
                    tracing::debug!(
                        "{}: controller {i} not active, trying the next",
                        bind.method
                    );
                    last = Some(other);
                }
            }
        }
        if Instant::now() >= deadline {
            return last.unwrap_or_else(|| Err("no controller".into()));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Sign (unless on the local socket: `cred` None) and send one copy of
/// the request.
async fn attempt(
    inner: &mut Link,
    cred: Option<&Credential>,
    bind: &Binding,
    bytes: &Bytes,
    mut parts: http::request::Parts,
) -> Result<http::Response<Body>, BoxError> {
    if let Some(cred) = cred {
        let token = match cred.token_for(bind).await {
            Ok(t) => t,
            Err(e) => return Ok(tonic::Status::unauthenticated(e).into_http()),
        };
        let value = http::HeaderValue::from_str(&token)
            .map_err(|_| "credential is not a valid header value")?;
        parts.headers.insert(METADATA_KEY, value);
    }
    let req = http::Request::from_parts(parts, Body::new(Full::new(bytes.clone())));
    std::future::poll_fn(|cx| tower::Service::poll_ready(inner, cx)).await?;
    tower::Service::call(inner, req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AuthError;

    #[test]
    fn the_rate_limit_refusal_is_recognised() {
        assert!(rate_limited(
            &tonic::Status::resource_exhausted(crate::RATE_LIMITED).into_http()
        ));
        assert!(!rate_limited(
            &tonic::Status::resource_exhausted("message too large").into_http()
        ));
        assert!(!rate_limited(
            &tonic::Status::unavailable(crate::RATE_LIMITED).into_http()
        ));
    }

    #[test]
    fn only_a_before_start_refusal_is_retried() {
        let before = tonic::Status::unauthenticated(format!(
            "Authentication failure: {}",
            AuthError::BeforeStart
        ))
        .into_http();
        assert!(refused_as_before_start(&before));
        let replayed = tonic::Status::unauthenticated(format!(
            "Authentication failure: {}",
            AuthError::Replayed
        ))
        .into_http();
        assert!(!refused_as_before_start(&replayed));
        let other = tonic::Status::permission_denied(BEFORE_START).into_http();
        assert!(!refused_as_before_start(&other));
        assert!(!refused_as_before_start(
            &http::Response::new(Body::empty())
        ));
    }
}
