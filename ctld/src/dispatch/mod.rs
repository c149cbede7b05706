//! The controller's half of scheduling: [`pass`] builds the snapshot for
//! the pure planner (`sched::plan`) and carries out its decisions (start,
//! wait reasons, preemption in [`preempt`]); [`state`] is what the passes
//! keep between them (reservations, fair-share usage, expected starts),
//! [`usage`] charges and logs fair-share usage and computes priorities;
//! [`report`] shows them (sprio, sshare).

pub mod pass;
pub mod preempt;
pub mod report;
pub mod state;
pub mod usage;
