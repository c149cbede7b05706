//! Allocations whose command is gone (Slurm's `InactiveLimit`): salloc,
//! and srun outside an allocation, say `AllocationAlive` every
//! [`beat_interval`] seconds while their command runs; a running
//! allocation not heard of for [`grace`] seconds ends as TIMEOUT with
//! reason `InactiveLimit`. The times are kept in memory only: after a
//! controller restart each allocation gets a whole grace period again, in
//! which its salloc reconnects.

use crate::refusal::Refusal;
use drover_proto::{AllocationAliveRequest, AllocationAliveResponse, JobState};

use crate::ctld::Ctld;
use crate::submit::msg;
use drover_proto::auth::Identity;

/// Grace when `InactiveLimit` is 0 (Slurm: never). Drover always ends an
/// allocation whose command is gone, or a salloc killed with -9 would hold
/// its nodes until its time limit, and for ever without one.
pub const DEFAULT_GRACE_SECS: u64 = 300;

/// Seconds an allocation may go unheard of before it ends.
pub fn grace(inactive_limit: u64) -> i64 {
    let g = if inactive_limit == 0 {
        DEFAULT_GRACE_SECS
    } else {
        inactive_limit
    };
    i64::try_from(g).unwrap_or(i64::MAX)
}

/// How often the command says it is alive: three times per grace period,
/// between once a second and once every 30 s.
pub fn beat_interval(inactive_limit: u64) -> u32 {
    (grace(inactive_limit) / 3).clamp(1, 30) as u32
}

/// Has an allocation last heard of at `seen` outlived its grace at `t`?
pub fn expired(seen: i64, t: i64, grace: i64) -> bool {
    t.saturating_sub(seen) > grace
}

/// Slurm's reason for a job ended by the inactivity limit.
pub const REASON: &str = "InactiveLimit";

impl Ctld {
    /// `AllocationAlive` from salloc/srun: the owner (or an admin) says the
    /// allocation's command still runs.
    pub fn allocation_alive(
        &mut self,
        who: &Identity,
        r: AllocationAliveRequest,
    ) -> Result<AllocationAliveResponse, Refusal> {
        let job = self.owned_job(who, r.job_id)?;
        if !job.spec().interactive {
            return Err(Refusal::invalid_argument(format!(
                "job {} is a batch job, not an allocation",
                r.job_id
            )));
        }
        if job.state().is_final() || job.rt().terminating {
            return Err(Refusal::failed_precondition(msg::ALREADY_DONE));
        }
        if job.state() != JobState::Pending {
            self.alloc_seen.insert(r.job_id, self.now);
        }
        Ok(AllocationAliveResponse {
            interval_secs: beat_interval(self.cfg.inactive_limit),
        })
    }

    /// From the once-a-second tick: end the allocations whose command has
    /// not been heard of for the grace period. An allocation first seen
    /// here (just started, or running when the controller restarted)
    /// starts its grace now.
    pub fn end_inactive_allocations(&mut self, t: i64) {
        let grace = grace(self.cfg.inactive_limit);
        let mut live = std::collections::HashMap::new();
        let mut gone = Vec::new();
        for id in self.index.ids_in(&[JobState::Running, JobState::Suspended]) {
            let Some(j) = self.jobs.get(&id) else {
                continue;
            };
            if !j.spec().interactive || j.rt().terminating {
                continue;
            }
            let seen = self.alloc_seen.get(&id).copied().unwrap_or(t);
            if expired(seen, t, grace) {
                gone.push(id);
            } else {
                live.insert(id, seen);
            }
        }
        self.alloc_seen = live;
        for id in gone {
            tracing::info!(
                "job {id}: inactivity time limit reached: its salloc/srun was not heard of for {grace} s"
            );
            self.terminate(id, true);
            if let Some(j) = self.jobs.get_mut(&id) {
                j.rt_mut().reason = REASON.into();
                self.log_runtime(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_and_interval_follow_inactive_limit() {
        assert_eq!(grace(0), 300);
        assert_eq!(beat_interval(0), 30);
        assert_eq!(grace(3), 3);
        assert_eq!(beat_interval(3), 1);
        assert_eq!(beat_interval(1), 1);
        assert_eq!(beat_interval(60), 20);
        assert_eq!(beat_interval(86_400), 30);
        assert_eq!(grace(u64::MAX), i64::MAX);
    }

    #[test]
    fn expiry_is_strictly_after_the_grace() {
        assert!(!expired(100, 103, 3));
        assert!(expired(100, 104, 3));
        assert!(!expired(100, 50, 3), "a clock step back expires nothing");
        assert!(!expired(i64::MIN, i64::MAX, i64::MAX));
    }
}
