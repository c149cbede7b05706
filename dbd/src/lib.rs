//! droverdbd: the Drover accounting daemon.
//!
//! [`store`] opens and migrates the database (SQLite, PostgreSQL or
//! MySQL/MariaDB through one `sqlx::Any` code path); [`jobs`] stores the
//! controller's job records and answers sacct; [`assocs`] and [`edit`] keep
//! the association set (sacctmgr); [`usage`] rolls usage up per hour for
//! sreport and fair-share; [`server`] is the gRPC front.

#![forbid(unsafe_code)]

pub mod assocs;
mod daemon;
pub mod edit;
pub mod jobs;
pub mod packed;
pub mod private;
pub mod server;
pub mod store;
pub mod usage;

pub use daemon::main_entry;
