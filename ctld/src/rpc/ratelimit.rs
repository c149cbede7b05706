//! Slurm's per-user RPC rate limit (`SlurmctldParameters=rl_enable`): a
//! token bucket per uid, `rl_bucket_size` tokens at first, `rl_refill_rate`
//! more every `rl_refill_period` seconds (never above the bucket size),
//! one per call; a call that finds the bucket empty is refused with
//! [`BACKOFF`] and the client tries again after a pause. At most
//! `rl_table_size` users are tracked; a user beyond that is not limited (as
//! Slurm's, which says so in the log). Root, `SlurmUser` and daemons are
//! exempt. [`Buckets`] is pure (`now` is passed in); [`Limiter`] is what the
//! gRPC front holds.

use std::collections::HashMap;
use std::sync::Mutex;

use drover_conf::ratelimit::RateLimitConf;
use drover_proto::auth::Identity;
use tonic::Status;

/// Slurm's text for `SLURMCTLD_COMMUNICATIONS_BACKOFF`.
pub const BACKOFF: &str = drover_proto::RATE_LIMITED;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Refill periods since the epoch at the last call.
    period: i64,
    tokens: u32,
    /// When a refusal was last logged (None: never).
    logged: Option<i64>,
}

/// What to do with one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Refused; `log`: say so now (`rl_log_freq`).
    Refused {
        log: bool,
    },
    /// The table is full: not limited (`log`: first time since it filled).
    Untracked {
        log: bool,
    },
}

/// The buckets of every user seen.
#[derive(Debug)]
pub struct Buckets {
    conf: RateLimitConf,
    users: HashMap<u32, Bucket>,
    full_logged: bool,
}

impl Buckets {
    pub fn new(conf: RateLimitConf) -> Buckets {
        Buckets {
            conf,
            users: HashMap::new(),
            full_logged: false,
        }
    }

    /// One call from `uid` at `now` (seconds).
    pub fn take(&mut self, uid: u32, now: i64) -> Verdict {
        let c = self.conf;
        let period = now.div_euclid(c.refill_period.max(1) as i64);
        if !self.users.contains_key(&uid) && self.users.len() >= c.table_size as usize {
            let log = !self.full_logged;
            self.full_logged = true;
            return Verdict::Untracked { log };
        }
        let b = self.users.entry(uid).or_insert(Bucket {
            period,
            tokens: c.bucket_size,
            logged: None,
        });
        let periods = (period - b.period).max(0);
        b.period = period;
        if periods > 0 {
            let add = (periods as u64).saturating_mul(c.refill_rate as u64);
            b.tokens = (b.tokens as u64 + add).min(c.bucket_size as u64) as u32;
        }
        if b.tokens > 0 {
            b.tokens -= 1;
            return Verdict::Allowed;
        }
        let log = c.log_freq >= 0 && b.logged.is_none_or(|t| now >= t + c.log_freq);
        if log {
            b.logged = Some(now);
        }
        Verdict::Refused { log }
    }
}

/// The rate limit as the gRPC front applies it.
pub struct Limiter {
    buckets: Option<Mutex<Buckets>>,
    /// `SlurmUser`'s uid (exempt, as root).
    slurm_user: u32,
}

impl Limiter {
    /// `conf` None: no limit (`rl_enable` not set).
    pub fn new(conf: Option<RateLimitConf>, slurm_user: u32) -> Limiter {
        if let Some(c) = conf {
            tracing::info!(
                "RPC rate limiting enabled: rl_table_size={},rl_bucket_size={},\
                 rl_refill_rate={},rl_refill_period={},rl_log_freq={}",
                c.table_size,
                c.bucket_size,
                c.refill_rate,
                c.refill_period,
                c.log_freq
            );
        }
        Limiter {
            buckets: conf.map(|c| Mutex::new(Buckets::new(c))),
            slurm_user,
        }
    }

    /// Admit one call from `who` (from `peer`), or refuse it with Slurm's
    /// back-off answer.
    pub fn admit(&self, who: &Identity, peer: Option<std::net::SocketAddr>) -> Result<(), Status> {
        let Some(buckets) = &self.buckets else {
            return Ok(());
        };
        if who.daemon || who.uid == 0 || who.uid == self.slurm_user {
            return Ok(());
        }
        let now = crate::runtime::clock();
        let verdict = match buckets.lock() {
            Ok(mut b) => b.take(who.uid, now),
            Err(_) => return Ok(()),
        };
        // No address: a call on the controller's local socket.
        let from = peer
            .map(|p| p.ip().to_string())
            .unwrap_or_else(|| "the local socket".into());
        match verdict {
            Verdict::Allowed => Ok(()),
            Verdict::Untracked { log } => {
                if log {
                    tracing::error!(
                        "RPC Rate Limiting: ran out of user table space. User will not be limited."
                    );
                }
                Ok(())
            }
            Verdict::Refused { log } => {
                if log {
                    tracing::info!(
                        "RPC rate limit exceeded by uid {} from {from}, telling to back off",
                        who.uid
                    );
                }
                Err(Status::resource_exhausted(BACKOFF))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(bucket: u32, rate: u32, period: u32) -> RateLimitConf {
        RateLimitConf {
            bucket_size: bucket,
            refill_rate: rate,
            refill_period: period,
            table_size: 8192,
            log_freq: 0,
        }
    }

    #[test]
    fn a_burst_then_the_refill_rate() {
        let mut b = Buckets::new(conf(3, 2, 1));
        for _ in 0..3 {
            assert_eq!(b.take(1000, 100), Verdict::Allowed);
        }
        assert_eq!(b.take(1000, 100), Verdict::Refused { log: true });
        // Another user has a bucket of their own.
        assert_eq!(b.take(1001, 100), Verdict::Allowed);
        // One second: two tokens.
        assert_eq!(b.take(1000, 101), Verdict::Allowed);
        assert_eq!(b.take(1000, 101), Verdict::Allowed);
        assert!(matches!(b.take(1000, 101), Verdict::Refused { .. }));
        // A long pause fills the bucket, never beyond its size.
        for _ in 0..3 {
            assert_eq!(b.take(1000, 1000), Verdict::Allowed);
        }
        assert!(matches!(b.take(1000, 1000), Verdict::Refused { .. }));
    }

    #[test]
    fn refills_count_whole_periods() {
        let mut b = Buckets::new(conf(1, 1, 10));
        assert_eq!(b.take(7, 100), Verdict::Allowed);
        assert!(matches!(b.take(7, 109), Verdict::Refused { .. }));
        assert_eq!(b.take(7, 110), Verdict::Allowed);
        // A clock that steps back adds nothing.
        assert!(matches!(b.take(7, 50), Verdict::Refused { .. }));
    }

    #[test]
    fn refill_rate_zero_never_refills() {
        let mut b = Buckets::new(conf(2, 0, 1));
        assert_eq!(b.take(7, 0), Verdict::Allowed);
        assert_eq!(b.take(7, 0), Verdict::Allowed);
        assert!(matches!(b.take(7, 1_000_000), Verdict::Refused { .. }));
    }

    #[test]
    fn log_frequency() {
        let mut c = conf(1, 0, 1);
        c.log_freq = 5;
        let mut b = Buckets::new(c);
        b.take(7, 0);
        assert_eq!(b.take(7, 0), Verdict::Refused { log: true });
        assert_eq!(b.take(7, 4), Verdict::Refused { log: false });
        assert_eq!(b.take(7, 5), Verdict::Refused { log: true });
        c.log_freq = -1;
        let mut b = Buckets::new(c);
        b.take(7, 0);
        assert_eq!(b.take(7, 0), Verdict::Refused { log: false });
        c.log_freq = 0;
        let mut b = Buckets::new(c);
        b.take(7, 0);
        assert_eq!(b.take(7, 0), Verdict::Refused { log: true });
        assert_eq!(b.take(7, 0), Verdict::Refused { log: true });
    }

    #[test]
    fn a_full_table_leaves_new_users_unlimited() {
        let mut c = conf(1, 0, 1);
        c.table_size = 2;
        let mut b = Buckets::new(c);
        b.take(1, 0);
        b.take(2, 0);
        assert_eq!(b.take(3, 0), Verdict::Untracked { log: true });
        assert_eq!(b.take(3, 0), Verdict::Untracked { log: false });
        // Users already in the table are still limited.
        assert!(matches!(b.take(1, 0), Verdict::Refused { .. }));
    }

    fn id(uid: u32, daemon: bool) -> Identity {
        Identity {
            uid,
            gid: uid,
            groups: vec![],
            daemon,
            host: "h".into(),
        }
    }

    #[test]
    fn root_slurm_user_and_daemons_are_exempt() {
        let l = Limiter::new(Some(conf(1, 0, 1)), 555);
        for who in [id(0, false), id(555, false), id(1000, true)] {
            for _ in 0..5 {
                assert!(l.admit(&who, None).is_ok());
            }
        }
        let user = id(1000, false);
        assert!(l.admit(&user, None).is_ok());
        let e = l.admit(&user, None).unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted);
        assert_eq!(e.message(), "Rate limit exceeded, please retry momentarily");
        // Without rl_enable nothing is limited.
        let off = Limiter::new(None, 555);
        for _ in 0..100 {
            assert!(off.admit(&user, None).is_ok());
        }
    }
}
