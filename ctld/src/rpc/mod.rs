//! The gRPC front: authenticate, then hand each request to the owner task
//! as an operation on the core. [`controller`]: jobs, nodes, steps, agents;
//! [`scheduler`]: sprio, sshare, reservations.

pub mod controller;
mod failover;
pub mod scheduler;
