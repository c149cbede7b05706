//! Server side of the credentials: a tower layer in front of every daemon's
//! gRPC services. It collects the (unary, bounded) request body, checks the
//! credential against the method and the body's digest, the clock
//! (`AuthInfo=skew`), the daemon's start and its replay cache, and puts the
//! verified [`Identity`] in the request's extensions, where
//! [`crate::client::identity`] finds it. A call without a credential on
//! the controller's local socket gets the identity the kernel gave its
//! connection ([`crate::localsock`]). A refusal is `Unauthenticated`,
//! logged at warn with the claimed uid/host and the peer's address
//! (rate-limited per peer and kind of failure: [`crate::authlog`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use tonic::body::Body;
use tonic::transport::server::TcpConnectInfo;

use crate::auth::{claimed, now_millis, AuthError, Binding, ClusterKey, Identity, METADATA_KEY};
use crate::localsock::LocalPeer;
use crate::replay::ReplayCache;

use crate::BoxError;

/// `AuthInfo=skew` when not set: seconds of clock difference tolerated.
pub const DEFAULT_SKEW_SECS: u64 = 60;

struct State {
    daemon: &'static str,
    key: ClusterKey,
    skew_ms: i64,
    started_ms: i64,
    max_body: usize,
    cache: Mutex<ReplayCache>,
}

impl State {
    /// Log a refused credential (rate-limited) and make the caller's answer.
    fn refuse(
        &self,
        peer: Option<std::net::SocketAddr>,
        method: &str,
        token: &str,
        e: AuthError,
    ) -> http::Response<Body> {
        crate::authlog::refused(
            peer,
            e.kind(),
            &format!(
                "{}: refused {method} ({} claimed): {e}",
                self.daemon,
                claimed(token)
            ),
        );
        refusal(tonic::Status::unauthenticated(format!(
            "Authentication failure: {e}"
        )))
    }

    fn check(&self, token: &str, bind: &Binding) -> Result<Identity, AuthError> {
        let now = now_millis();
        let v = self.key.verify(token, bind, now, self.skew_ms)?;
        if v.issued_ms < self.started_ms {
            return Err(AuthError::BeforeStart);
        }
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).check(
            v.nonce,
            v.usable_until_ms,
            now,
        )?;
        Ok(v.identity)
    }
}

/// The verifying layer: `Server::builder().layer(AuthLayer::new(...))`.
#[derive(Clone)]
pub struct AuthLayer {
    state: Arc<State>,
}

impl AuthLayer {
    /// `daemon` names the verifier in log lines; the daemon's start is now;
    /// request bodies over `max_body` bytes (gRPC framing included) are
    /// refused.
    pub fn new(
        daemon: &'static str,
        key: ClusterKey,
        skew_secs: u64,
        max_body: usize,
    ) -> AuthLayer {
        AuthLayer {
            state: Arc::new(State {
                daemon,
                key,
                skew_ms: skew_secs.min(i64::MAX as u64 / 1000) as i64 * 1000,
                started_ms: now_millis(),
                max_body,
                cache: Mutex::new(ReplayCache::new(crate::replay::DEFAULT_CAPACITY)),
            }),
        }
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = AuthService<S>;
    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService {
            inner,
            state: self.state.clone(),
        }
    }
}

#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    state: Arc<State>,
}

fn refusal(status: tonic::Status) -> http::Response<Body> {
    status.into_http()
}

impl<S, B> tower::Service<http::Request<Body>> for AuthService<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let state = self.state.clone();
        let started = std::time::Instant::now();
        let method = req.uri().path().to_string();
        let served = Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            // Without a credential the handler's identity() refuses (some
            // calls need none).
            if let Some(token) = parts.headers.get(METADATA_KEY) {
                let peer = parts
                    .extensions
                    .get::<TcpConnectInfo>()
                    .and_then(|c| c.remote_addr());
                let method = parts.uri.path().to_string();
                if crate::auth::is_streaming(&method) {
                    // A stream cannot be collected first: the credential
                    // binds the method (and is used once, as any other).
                    let token = token.to_str().unwrap_or("");
                    match state.check(token, &Binding::new(&method, &[])) {
                        Ok(id) => {
                            parts.extensions.insert(id);
                        }
                        Err(e) => return Ok(state.refuse(peer, &method, token, e)),
                    }
                    let req = http::Request::from_parts(parts, body);
                    let resp = inner.call(req).await.map_err(Into::into)?;
                    return Ok(resp.map(Body::new));
                }
                let bytes = match Limited::new(body, state.max_body).collect().await {
                    Ok(c) => c.to_bytes(),
                    Err(e) => {
                        crate::authlog::refused(
                            peer,
                            "body",
                            &format!("{}: {method}: request body: {e}", state.daemon),
                        );
                        return Ok(refusal(tonic::Status::resource_exhausted(format!(
                            "request refused: {e}"
                        ))));
                    }
                };
                let token = token.to_str().unwrap_or("");
                let bind = Binding::new(&method, &bytes);
                match state.check(token, &bind) {
                    Ok(id) => {
                        parts.extensions.insert(id);
                    }
                    Err(e) => return Ok(state.refuse(peer, &method, token, e)),
                }
                let req = http::Request::from_parts(parts, Body::new(Full::new(bytes)));
                let resp = inner.call(req).await.map_err(Into::into)?;
                return Ok(resp.map(Body::new));
            }
            // On the controller's local socket the kernel said who the
            // caller is (a TCP connection never has a LocalPeer).
            if let Some(LocalPeer(id)) = parts.extensions.get::<LocalPeer>() {
                let id = id.clone();
                parts.extensions.insert(id);
            }
            let req = http::Request::from_parts(parts, body);
            let resp = inner.call(req).await.map_err(Into::into)?;
            Ok(resp.map(Body::new))
        });
        Box::pin(async move {
            let r = served.await;
            crate::metrics::record_rpc(&method, started.elapsed());
            r
        })
    }
}
