//! `SlurmctldParameters` options of the controller's RPC front: Slurm's
//! per-user rate limit (`rl_enable`, `rl_bucket_size`, `rl_refill_rate`,
//! `rl_refill_period`, `rl_table_size`, `rl_log_freq`, defaults as Slurm
//! 23.11's) and Drover's own limit of connections per peer address
//! (`drover_conn_per_peer`; Slurm has none).

use crate::values;

/// Slurm's rate limit: a token bucket per user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimitConf {
    /// `rl_bucket_size`: the burst a user may send (default 30).
    pub bucket_size: u32,
    /// `rl_refill_rate`: tokens added each refill period (default 2).
    pub refill_rate: u32,
    /// `rl_refill_period`: seconds between refills (default 1).
    pub refill_period: u32,
    /// `rl_table_size`: users tracked; others are not limited (default 8192).
    pub table_size: u32,
    /// `rl_log_freq`: seconds between two "rate limit exceeded" lines for
    /// one user; 0 logs every refusal, -1 none (default 0).
    pub log_freq: i64,
}

impl Default for RateLimitConf {
    fn default() -> Self {
        RateLimitConf {
            bucket_size: 30,
            refill_rate: 2,
            refill_period: 1,
            table_size: 8192,
            log_freq: 0,
        }
    }
}

/// Drover's default for `drover_conn_per_peer`: connections one address
/// may hold open to the controller at once.
pub const DEFAULT_CONN_PER_PEER: u32 = 512;

/// The RPC front's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrontConf {
    /// `Some` with `rl_enable`.
    pub rate_limit: Option<RateLimitConf>,
    /// `drover_conn_per_peer` (0: no limit).
    pub conn_per_peer: u32,
}

impl Default for FrontConf {
    fn default() -> Self {
        FrontConf {
            rate_limit: None,
            conn_per_peer: DEFAULT_CONN_PER_PEER,
        }
    }
}

impl FrontConf {
    /// Read from the `SlurmctldParameters` value; an unreadable number is
    /// an error naming the option (`SlurmctldParameters: rl_bucket_size=x: ...`).
    pub fn of(slurmctld_parameters: Option<&str>) -> Result<FrontConf, String> {
        let mut f = FrontConf::default();
        let mut rl = RateLimitConf::default();
        let mut enabled = false;
        for w in values::parse_list(slurmctld_parameters.unwrap_or("")) {
            let (k, v) = match w.split_once('=') {
                Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim())),
                None => (w.trim().to_ascii_lowercase(), None),
            };
            let bad =
                |why: &str| format!("SlurmctldParameters: {k}={}: {why}", v.unwrap_or_default());
            let positive = || -> Result<u32, String> {
                match v.map(str::parse::<u32>) {
                    Some(Ok(n)) if n > 0 => Ok(n),
                    _ => Err(bad("must be a whole number above 0")),
                }
            };
            let whole = || -> Result<u32, String> {
                match v.map(str::parse::<u32>) {
                    Some(Ok(n)) => Ok(n),
                    _ => Err(bad("must be a whole number")),
                }
            };
            match k.as_str() {
                "rl_enable" => enabled = true,
                "rl_bucket_size" => rl.bucket_size = positive()?,
                "rl_refill_rate" => rl.refill_rate = whole()?,
                "rl_refill_period" => rl.refill_period = positive()?,
                "rl_table_size" => rl.table_size = positive()?,
                "drover_conn_per_peer" => f.conn_per_peer = whole()?,
                "rl_log_freq" => {
                    rl.log_freq = match v.map(str::parse::<i64>) {
                        Some(Ok(n)) if n >= -1 => n,
                        _ => return Err(bad("must be -1 (never), 0 (always) or seconds")),
                    }
                }
                _ => {}
            }
        }
        if enabled {
            f.rate_limit = Some(rl);
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_slurms() {
        let f = FrontConf::of(None).unwrap();
        assert_eq!(f.rate_limit, None);
        assert_eq!(f.conn_per_peer, DEFAULT_CONN_PER_PEER);
        assert_eq!(
            FrontConf::of(Some("drover_conn_per_peer=7"))
                .unwrap()
                .conn_per_peer,
            7
        );
        let f = FrontConf::of(Some("enable_configless,rl_enable")).unwrap();
        assert_eq!(
            f.rate_limit,
            Some(RateLimitConf {
                bucket_size: 30,
                refill_rate: 2,
                refill_period: 1,
                table_size: 8192,
                log_freq: 0
            })
        );
    }

    #[test]
    fn options_are_read() {
        let f = FrontConf::of(Some(
            "RL_ENABLE, rl_bucket_size=5,rl_refill_rate=0,rl_refill_period=3,rl_table_size=10,\
             rl_log_freq=-1",
        ))
        .unwrap();
        assert_eq!(
            f.rate_limit,
            Some(RateLimitConf {
                bucket_size: 5,
                refill_rate: 0,
                refill_period: 3,
                table_size: 10,
                log_freq: -1
            })
        );
        // Options without rl_enable change nothing.
        assert_eq!(
            FrontConf::of(Some("rl_bucket_size=5")).unwrap().rate_limit,
            None
        );
    }

    #[test]
    fn bad_values_name_the_option() {
        assert_eq!(
            FrontConf::of(Some("rl_enable,rl_refill_period=0")).unwrap_err(),
            "SlurmctldParameters: rl_refill_period=0: must be a whole number above 0"
        );
        assert_eq!(
            FrontConf::of(Some("rl_bucket_size=lots")).unwrap_err(),
            "SlurmctldParameters: rl_bucket_size=lots: must be a whole number above 0"
        );
        assert_eq!(
            FrontConf::of(Some("rl_log_freq=-2")).unwrap_err(),
            "SlurmctldParameters: rl_log_freq=-2: must be -1 (never), 0 (always) or seconds"
        );
        assert!(FrontConf::of(Some("rl_table_size")).is_err());
    }
}
