//! Integration tests: real daemons (on loopback, or on hosts of their own
//! in network namespaces), real commands.

#![forbid(unsafe_code)]

mod accounting;
mod advice;
mod alloc_release;
mod arrays_deps;
mod backup;
mod bad_input;
mod batch;
mod binding;
mod commands;
mod compat;
mod compat_arrays;
mod compat_partitions;
mod configless;
mod dashboard;
mod enforcement;
mod field_limits;
mod file_modes;
mod idle;
mod install;
mod kill_finish;
mod launch_failures;
mod limits;
mod mail;
mod multihost;
mod node_cmds;
mod node_health;
mod option_support;
mod output_safety;
mod overload;
mod oversubscribe;
mod parsers;
mod placement;
mod power;
mod privacy;
mod privileges;
mod query_sweep;
mod raw_frames;
mod reconfigure;
mod recovery;
mod replay;
mod resolved_request;
mod rest;
mod scheduler;
mod script_cmds;
mod sim;
mod squeue_index;
mod state_disk;
mod step_limits;
mod steps;
mod suspend;
mod tls;
mod up;
mod users;
