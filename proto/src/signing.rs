//! Client side of the credentials: a service over the tonic channel that
//! collects each (unary, bounded) request body (a streaming call's is passed
//! on as it comes: its credential binds the method only), gets a credential bound to
//! its method and digest (from the local auth socket, or signed with the
//! cluster key by a daemon), adds it to the headers and sends the same
//! bytes. A refusal because the credential predates the daemon's start (it
//! restarted in between) is retried once with a fresh credential.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tonic::body::Body;
use tonic::transport::Channel;

use crate::auth::{Binding, ClusterKey, BEFORE_START, METADATA_KEY};
use crate::authsock::AuthConn;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

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

/// A channel that signs every request.
#[derive(Clone)]
pub struct Signed {
    inner: Channel,
    cred: Credential,
}

impl Signed {
    pub fn new(inner: Channel, cred: Credential) -> Signed {
        Signed { inner, cred }
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
        tower::Service::poll_ready(&mut self.inner, cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let cred = self.cred.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            if crate::auth::is_streaming(parts.uri.path()) {
                // The body is a stream: sign the method, pass the stream on.
                let bind = Binding::new(parts.uri.path(), &[]);
                let token = match cred.token_for(&bind).await {
                    Ok(t) => t,
                    Err(e) => return Ok(tonic::Status::unauthenticated(e).into_http()),
                };
                let mut parts = parts;
                let value = http::HeaderValue::from_str(&token)
                    .map_err(|_| "credential is not a valid header value")?;
                parts.headers.insert(METADATA_KEY, value);
                let req = http::Request::from_parts(parts, body);
                std::future::poll_fn(|cx| tower::Service::poll_ready(&mut inner, cx)).await?;
                return Ok(tower::Service::call(&mut inner, req).await?);
            }
            let bytes: Bytes = body.collect().await?.to_bytes();
            let bind = Binding::new(parts.uri.path(), &bytes);
            let again = (
                parts.method.clone(),
                parts.uri.clone(),
                parts.version,
                parts.headers.clone(),
            );
            let first = attempt(&mut inner, &cred, &bind, &bytes, parts).await?;
            if !refused_as_before_start(&first) {
                return Ok(first);
            }
            tracing::debug!("{}: the daemon restarted, fresh credential", bind.method);
            let mut r = http::Request::new(());
            *r.method_mut() = again.0;
            *r.uri_mut() = again.1;
            *r.version_mut() = again.2;
            *r.headers_mut() = again.3;
            attempt(&mut inner, &cred, &bind, &bytes, r.into_parts().0).await
        })
    }
}

/// Sign and send one copy of the request.
async fn attempt(
    inner: &mut Channel,
    cred: &Credential,
    bind: &Binding,
    bytes: &Bytes,
    mut parts: http::request::Parts,
) -> Result<http::Response<Body>, BoxError> {
    let token = match cred.token_for(bind).await {
        Ok(t) => t,
        Err(e) => return Ok(tonic::Status::unauthenticated(e).into_http()),
    };
    let value = http::HeaderValue::from_str(&token)
        .map_err(|_| "credential is not a valid header value")?;
    parts.headers.insert(METADATA_KEY, value);
    let req = http::Request::from_parts(parts, Body::new(Full::new(bytes.clone())));
    std::future::poll_fn(|cx| tower::Service::poll_ready(inner, cx)).await?;
    Ok(tower::Service::call(inner, req).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AuthError;

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
