//! drover-conf: parsing of drover.conf / slurm.conf, gres.conf, cgroup.conf,
//! and the one implementation of Slurm's hostlist (`hostlist`), time and
//! memory (`units`) and date (`datetime`) texts for the whole workspace.
//!
//! The crate is pure: text in, typed configuration (or an error) out. The
//! only I/O is in the `load` functions, which read the file and its
//! `Include`s and then call the text parser.

#![forbid(unsafe_code)]

pub mod cgroupconf;
pub mod ctldsock;
pub mod datetime;
pub mod dbdconf;
mod digest;
pub mod error;
pub mod fuzz;
mod general;
pub mod gresconf;
pub mod hostlist;
pub mod include;
mod lexer;
pub mod local;
pub mod locate;
pub mod nodes;
pub mod parsetime;
pub mod partitions;
pub mod power;
pub mod private;
pub mod ratelimit;
pub mod sched;
pub mod slurmconf;
pub mod tls;
pub mod units;
mod values;

pub use cgroupconf::CgroupConf;
pub use error::{ConfError, ConfWarning};
pub use gresconf::{GresConf, GresConfEntry};
pub use hostlist::HostlistError;
pub use nodes::{parse_gres_list, GresSpec, NodeConf, NodeSetConf};
pub use partitions::{apply_partition_words, PartitionConf};
pub use slurmconf::{Config, CtldHost, EntityLine};
