//! Scenario tests of the core: a job's life told as events in, effects out,
//! with no daemon, socket or clock (see [`env::TestEnv`]).

mod accounting;
mod arrays;
mod deps;
mod env;
mod life;
mod mail;
mod power;
mod preempt;
mod priority;
mod queries;
mod resources;
mod shared;
mod stamps;
