//! Integration tests: real daemons on loopback, real commands.

mod arrays_deps;
mod bad_input;
mod batch;
mod commands;
mod placement;
mod recovery;
mod up;
mod users;
