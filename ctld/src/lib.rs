//! droverctld: the Drover controller.
//!
//! Layout, top to bottom:
//! - [`runtime`]: the owner task (clock, batches, performing effects), the
//!   [`wal`] and accounting threads, and [`rpc`], the gRPC front. The only
//!   place with tokio, tonic transports, sockets and the clock.
//! - the core: [`ctld::Ctld`] (all controller state) and its operations,
//!   each a function of (state, event, `now`) that records [`effect`]s:
//!   [`submit`], [`dispatch`], [`end`], [`control`], [`update`], [`agents`],
//!   [`suspend`], [`steps`], [`reservation`], [`reconfig`], ...
//! - [`sched`]: the pure planner the core calls (no controller types).

#![forbid(unsafe_code)]

pub mod acct;
pub mod agents;
/// Associations and QOS: the scheduler's input, kept below it (`sched/assoc.rs`).
pub use sched::assoc;
pub mod array;
pub mod arraytask;
pub mod cluster;
pub mod configless;
pub mod control;
pub mod ctld;
mod daemon;
pub mod deps;
pub mod diag;
pub mod dispatch;
pub mod due;
pub mod effect;
pub mod end;
pub mod fairshare;
pub mod fieldlimits;
pub mod fuzz;
pub mod inactive;
pub mod intern;
pub mod job;
pub mod jobindex;
pub mod jobinfo;
pub mod jobstamp;
pub mod jobwire;
pub mod mail;
pub mod metrics;
pub mod nodepower;
pub mod partedit;
pub mod power;
pub mod priority;
pub mod privacy;
pub mod reconfig;
pub mod refusal;
pub mod request;
pub mod reservation;
pub mod restore;
pub mod rpc;
pub mod runtime;
#[cfg(test)]
mod scenario;
pub mod sched;
pub mod snapshot;
pub mod stats;
pub mod steps;
pub mod submit;
pub mod suspend;
pub mod token;
pub mod update;
pub mod users;
pub mod wal;
pub mod wirecache;

pub use daemon::main_entry;
