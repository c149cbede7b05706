//! droverctld: the Drover controller.
//!
//! Layout: [`ctld`] is the single owner of state and its event loop;
//! [`submit`], [`schedule`], [`end`], [`control`], [`update`], [`agents`] and
//! [`reconfig`] are its operations; [`sched`] is the pure scheduler core;
//! [`wal`] makes state durable; [`server`] is the gRPC front.

pub mod agents;
pub mod array;
pub mod cluster;
pub mod control;
pub mod ctld;
mod daemon;
pub mod deps;
pub mod end;
pub mod job;
pub mod jobinfo;
pub mod reconfig;
pub mod sched;
pub mod schedule;
pub mod server;
pub mod submit;
pub mod update;
pub mod users;
pub mod wal;

pub use daemon::main_entry;
