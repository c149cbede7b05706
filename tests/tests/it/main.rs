//! Integration tests: real daemons on loopback, real commands.

mod accounting;
mod arrays_deps;
mod bad_input;
mod batch;
mod binding;
mod commands;
mod enforcement;
mod limits;
mod node_health;
mod oversubscribe;
mod placement;
mod recovery;
mod scheduler;
mod step_limits;
mod steps;
mod suspend;
mod up;
mod users;
