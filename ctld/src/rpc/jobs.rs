//! `GetJobs` answered with the bytes the owner encoded.
//!
//! tonic's generated service fixes each method's reply type: `GetJobs`
//! would have to build a `GetJobsResponse` (one `JobInfo` struct per job,
//! each string copied) for tonic to encode. [`Routed`] sits in front of the
//! generated `Controller` service under the same name and answers
//! `/drover.Controller/GetJobs` itself: the owner task writes the encoded
//! answer in one pass over the jobs (`jobwire.rs`), and `WireCodec` puts
//! those bytes on the wire as they are. Every other method goes to the
//! generated service. Clients see the same `GetJobsResponse` bytes as
//! before (the tests compare them).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::codegen::{http, Service};

use drover_proto::controller_server::ControllerServer;
use drover_proto::wirecodec::{Prost, WireCodec};
use drover_proto::GetJobsRequest;
use tonic::body::Body;
use tonic::server::{Grpc, NamedService, UnaryService};
use tonic::{Request, Response, Status};

use super::controller::Svc;

/// The method [`Routed`] answers itself.
pub const GET_JOBS_PATH: &str = "/drover.Controller/GetJobs";

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send + 'static>>;

/// The `Controller` service with `GetJobs` answered from encoded bytes.
#[derive(Clone)]
pub struct Routed {
    inner: ControllerServer<Svc>,
    svc: Arc<Svc>,
    max_request: usize,
}

impl Routed {
    /// `inner`'s methods, but `GetJobs` through `svc` (the same owner).
    pub fn new(inner: ControllerServer<Svc>, svc: Svc, max_request: usize) -> Routed {
        Routed {
            inner,
            svc: Arc::new(svc),
            max_request,
        }
    }
}

impl NamedService for Routed {
    const NAME: &'static str = <ControllerServer<Svc> as NamedService>::NAME;
}

impl Service<http::Request<Body>> for Routed {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if req.uri().path() != GET_JOBS_PATH {
            return Service::call(&mut self.inner, req);
        }
        let method = GetJobsWire(self.svc.clone());
        let max_request = self.max_request;
        Box::pin(async move {
            let codec = WireCodec::<Vec<u8>, Prost<GetJobsRequest>>::default();
            let mut grpc = Grpc::new(codec).apply_max_message_size_config(
                Some(max_request),
                Some(drover_proto::MAX_MESSAGE_BYTES),
            );
            Ok(grpc.unary(method, req).await)
        })
    }
}

/// The method itself: authenticate, then the owner encodes the answer.
struct GetJobsWire(Arc<Svc>);

impl UnaryService<Prost<GetJobsRequest>> for GetJobsWire {
    type Response = Vec<u8>;
    type Future = BoxFuture<Response<Vec<u8>>, Status>;

    fn call(&mut self, req: Request<Prost<GetJobsRequest>>) -> Self::Future {
        let svc = self.0.clone();
        Box::pin(async move {
            let who = svc.who(&req)?;
            let req = req.into_inner().0;
            svc.call(move |c, r| {
                let _ = r.send(c.get_jobs_wire(&who, req));
            })
            .await
        })
    }
}
