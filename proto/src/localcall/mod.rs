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
