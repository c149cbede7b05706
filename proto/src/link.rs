//! Where a client's calls go: a tonic channel (HTTP/2 over TCP, TLS
//! where configured) or local calls on this host's controller socket
//! ([`crate::localcall`]). Both are the same tower service to tonic's
//! generated clients and to [`crate::signing::Signed`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::transport::Channel;

use crate::localcall::LocalCalls;

use crate::BoxError;

#[derive(Clone)]
pub enum Link {
    Channel(Channel),
    Local(LocalCalls),
}

impl From<Channel> for Link {
    fn from(ch: Channel) -> Link {
        Link::Channel(ch)
    }
}

impl tower::Service<http::Request<Body>> for Link {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Link::Channel(ch) => tower::Service::poll_ready(ch, cx).map_err(Into::into),
            Link::Local(l) => tower::Service::poll_ready(l, cx),
        }
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        match self {
            Link::Channel(ch) => {
                let f = tower::Service::call(ch, req);
                Box::pin(async move { f.await.map_err(Into::into) })
            }
            Link::Local(l) => tower::Service::call(l, req),
        }
    }
}
