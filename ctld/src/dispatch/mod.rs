//! The controller's half of scheduling: [`pass`] runs a pass: which jobs
//! may be considered ([`gate`]), the planner's input (`sched::plan`; the
//! nodes from the cluster's kept snapshot, the jobs holding them from
//! [`inputs`]), and its decisions carried out (starts and launches in
//! [`start`], wait reasons, preemption in [`preempt`]); [`state`] is what the passes
//! keep between them (reservations, fair-share usage, expected starts),
//! [`usage`] charges and logs fair-share usage and computes priorities;
//! [`report`] shows them (sprio, sshare).

pub mod gate;
pub mod inputs;
pub mod pass;
pub mod preempt;
pub mod report;
pub mod start;
pub mod state;
pub mod usage;
