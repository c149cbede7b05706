//! Backup controllers: a controller in standby answers every call but
//! `Ping`, `Takeover` and `Relinquish` at once with [`NOT_ACTIVE`]
//! (`Unavailable`), so a client moves on to the next controller without
//! waiting; [`crate::signing`] recognises the answer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tonic::body::Body;

use crate::BoxError;

/// The message of a standby controller's refusal.
pub const NOT_ACTIVE: &str = "not the active controller (standby, or taking control)";

/// The calls a standby controller serves.
const SERVED_IN_STANDBY: &[&str] = &[
    "/drover.Controller/Ping",
    "/drover.Controller/Takeover",
    "/drover.Controller/Relinquish",
];

/// Is this response a standby controller's refusal?
pub fn is_not_active(resp: &http::Response<Body>) -> bool {
    tonic::Status::from_header_map(resp.headers())
        .is_some_and(|s| s.code() == tonic::Code::Unavailable && s.message() == NOT_ACTIVE)
}

/// Refuses calls while `active` is false.
#[derive(Clone)]
pub struct StandbyLayer {
    pub active: Arc<AtomicBool>,
}

impl<S> tower::Layer<S> for StandbyLayer {
    type Service = Standby<S>;
    fn layer(&self, inner: S) -> Standby<S> {
        Standby {
            inner,
            active: self.active.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Standby<S> {
    inner: S,
    active: Arc<AtomicBool>,
}

impl<S, B> tower::Service<http::Request<Body>> for Standby<S>
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
        if !self.active.load(Ordering::Acquire) && !SERVED_IN_STANDBY.contains(&req.uri().path()) {
            return Box::pin(std::future::ready(Ok(tonic::Status::unavailable(
                NOT_ACTIVE,
            )
            .into_http())));
        }
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let resp = inner.call(req).await.map_err(Into::into)?;
            Ok(resp.map(Body::new))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_standby_refusal_is_recognised() {
        assert!(is_not_active(
            &tonic::Status::unavailable(NOT_ACTIVE).into_http()
        ));
        assert!(!is_not_active(
            &tonic::Status::unavailable("tcp connect error").into_http()
        ));
        assert!(!is_not_active(&http::Response::new(Body::empty())));
    }
}
