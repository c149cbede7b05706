//! The gRPC front: authenticate, then hand each request to the owner task
//! as an operation on the core. [`controller`]: jobs, nodes, steps, agents;
//! [`scheduler`]: sprio, sshare, reservations; [`ratelimit`]: Slurm's
//! per-user RPC rate limit, applied to every authenticated user call;
//! [`jobs`]: `GetJobs` answered with the bytes the owner encodes.

pub mod conns;
pub mod controller;
mod failover;
pub mod idle;
pub mod jobs;
pub mod ratelimit;
pub mod refusal;
pub mod scheduler;
