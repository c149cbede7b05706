//! droverctld: the Drover controller.
//!
//! Layout: [`ctld`] is the single owner of state and its event loop;
//! [`submit`], [`schedule`], [`end`], [`control`], [`update`], [`agents`] and
//! [`reconfig`] are its operations; [`sched`] is the pure scheduler core;
//! [`wal`] makes state durable; [`server`] is the gRPC front.

pub mod acct;
pub mod agents;
pub mod array;
pub mod assoc;
pub mod cluster;
pub mod control;
pub mod ctld;
mod daemon;
pub mod deps;
pub mod diag;
pub mod end;
pub mod fairshare;
pub mod fieldlimits;
pub mod inactive;
pub mod job;
pub mod jobinfo;
pub mod metrics;
pub mod preemption;
pub mod priority;
pub mod privacy;
pub mod reconfig;
pub mod reservation;
pub mod sched;
pub mod sched_svc;
pub mod schedstate;
pub mod schedule;
pub mod server;
pub mod stats;
pub mod steps;
pub mod submit;
pub mod suspend;
pub mod token;
pub mod update;
pub mod users;
pub mod wal;

pub use daemon::main_entry;
