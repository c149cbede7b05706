//! `drover sim`: a workload replayed through the real controller core
//! (`drover_ctld::ctld::Ctld`) on simulated time.
//!
//! - [`trace`]: the workload, whatever it was read from; [`sacct`] (`sacct
//!   -P` text), [`swf`] (the Standard Workload Format) and [`synthetic`]
//!   make one. Pure: text in, jobs and line-numbered errors out.
//! - [`engine`]: the event loop. Submits at their times, the core's effects
//!   performed as a cluster of perfect agents would (a launch runs for the
//!   trace's run time, a kill ends the job at once), timers and periodic
//!   checks on simulated time. Deterministic: no clock, no thread, no I/O.
//! - [`outcome`]: what a run produced; [`report`]: per-job rows (CSV), the summary, the side-by-side
//!   comparison; [`svg`]: the plot.

#![forbid(unsafe_code)]

pub mod cli;
pub mod engine;
pub mod outcome;
pub mod report;
pub mod sacct;
pub mod svg;
pub mod swf;
pub mod synthetic;
pub mod trace;
