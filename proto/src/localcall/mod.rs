//! Local calls: gRPC calls to the controller on its local socket
//! ([`crate::localsock`]) without HTTP/2. A command on the controller's
//! host makes one or two calls and exits; over HTTP/2 each connection
//! first exchanges a preface, settings and their acknowledgements, and a
//! call's head and body go as separate writes, each waking the
//! controller's thread again before the request is whole. Here the
//! client writes its request in one frame sequence and one write, and
//! the answer comes back the same way (docs/architecture.md, "Identity",
//! the local socket).
//!
//! The calls stay gRPC calls: the same paths, headers, length-prefixed
//! messages and trailers (`grpc-status`), served by the same tower stack as
//! HTTP/2 connections, so tonic's generated clients and services are used
//! as they are on both ends. The local socket still speaks HTTP/2 to a
//! client that starts with its preface (grpcurl, older commands).

pub mod client;
pub mod server;
pub mod wire;

pub use client::LocalCalls;

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use http_body::{Body as _, Frame};

/// A body's next frame if it is ready now (`None`: it is not; the body
/// wakes no one, so await it after).
fn ready_frame(
    body: &mut tonic::body::Body,
) -> Option<Option<Result<Frame<bytes::Bytes>, tonic::Status>>> {
    match Pin::new(body).poll_frame(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(f) => Some(f),
        Poll::Pending => None,
    }
}
