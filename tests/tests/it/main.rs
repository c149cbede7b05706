//! Integration tests: real daemons (on loopback, or on hosts of their own
//! in network namespaces), real commands.

mod accounting;
mod alloc_release;
mod arrays_deps;
mod bad_input;
mod batch;
mod binding;
mod commands;
mod enforcement;
mod field_limits;
mod file_modes;
mod idle;
mod kill_finish;
mod launch_failures;
mod limits;
mod multihost;
mod node_cmds;
mod node_health;
mod output_safety;
mod oversubscribe;
mod parsers;
mod placement;
mod privacy;
mod recovery;
mod replay;
mod rest;
mod scheduler;
mod script_cmds;
mod step_limits;
mod steps;
mod suspend;
mod up;
mod users;
