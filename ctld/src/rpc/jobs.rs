//! `GetJobs` answered with the bytes the owner encoded.
//!
//! tonic's generated service fixes each method's reply type: `GetJobs`
//! would have to build a `GetJobsResponse` (one `JobInfo` struct per job,
//! each string copied) for tonic to encode. [`Routed`] sits in front of the
//! generated `Controller` service under the same name and answers
//! `/drover.Controller/GetJobs` itself: the owner task writes the encoded
//! answer in one pass over the jobs (`jobwire.rs`), and [`WireCodec`] puts
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
use drover_proto::GetJobsRequest;
use prost::Message;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
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
            let mut grpc = Grpc::new(WireCodec).apply_max_message_size_config(
                Some(max_request),
                Some(drover_proto::MAX_MESSAGE_BYTES),
            );
            Ok(grpc.unary(method, req).await)
        })
    }
}

/// The method itself: authenticate, then the owner encodes the answer.
struct GetJobsWire(Arc<Svc>);

impl UnaryService<GetJobsRequest> for GetJobsWire {
    type Response = Vec<u8>;
    type Future = BoxFuture<Response<Vec<u8>>, Status>;

    fn call(&mut self, req: Request<GetJobsRequest>) -> Self::Future {
        let svc = self.0.clone();
        Box::pin(async move {
            let who = svc.who(&req)?;
            let req = req.into_inner();
            svc.call(move |c, r| {
                let _ = r.send(c.get_jobs_wire(&who, req));
            })
            .await
        })
    }
}

/// Decodes the request as prost does; encodes the answer's bytes as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct WireCodec;

impl Codec for WireCodec {
    type Encode = Vec<u8>;
    type Decode = GetJobsRequest;
    type Encoder = WireCodec;
    type Decoder = WireCodec;

    fn encoder(&mut self) -> WireCodec {
        WireCodec
    }
    fn decoder(&mut self) -> WireCodec {
        WireCodec
    }
}

impl Encoder for WireCodec {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use prost::bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for WireCodec {
    type Item = GetJobsRequest;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<GetJobsRequest>, Status> {
        GetJobsRequest::decode(src)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}
