//! `SchedulerParameters` entries the scheduler honours, checked at load.

/// The backfill and queue settings of `SchedulerParameters`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedParams {
    /// `bf_window`, minutes (Slurm default 1440).
    pub bf_window_min: u32,
    /// `bf_resolution`, seconds (default 60).
    pub bf_resolution_s: u32,
    /// `bf_max_job_test` (default 500).
    pub bf_max_job_test: u32,
    /// `bf_max_job_user` (default 0 = no limit).
    pub bf_max_job_user: u32,
    /// `bf_continue`: accepted; a Drover pass never yields mid-way, so it
    /// always covers the queue to `bf_max_job_test`.
    pub bf_continue: bool,
    /// `default_queue_depth`: jobs an event-driven (quick) pass looks at
    /// (default 100).
    pub default_queue_depth: u32,
    /// `max_script_size`: the largest batch script accepted, bytes
    /// (Slurm's default 4 MiB, at most 512 MiB).
    pub max_script_size: u32,
}

/// Slurm's default `max_script_size`: 4 MiB.
pub const DEFAULT_MAX_SCRIPT_SIZE: u32 = 4 * 1024 * 1024;

impl Default for SchedParams {
    fn default() -> Self {
        SchedParams {
            bf_window_min: 1440,
            bf_resolution_s: 60,
            bf_max_job_test: 500,
            bf_max_job_user: 0,
            bf_continue: false,
            default_queue_depth: 100,
            max_script_size: DEFAULT_MAX_SCRIPT_SIZE,
        }
    }
}

impl SchedParams {
    /// Read the entries of a `SchedulerParameters` list; unknown entries
    /// are Slurm options Drover does not need and are ignored.
    pub fn from_list(list: &[(String, Option<String>)]) -> Result<SchedParams, String> {
        let mut p = SchedParams::default();
        for (k, v) in list {
            let num = |min: u32, max: u32| -> Result<u32, String> {
                let v = v
                    .as_deref()
                    .ok_or_else(|| format!("SchedulerParameters: {k} needs a value ({k}=N)"))?;
                let n: u32 = v
                    .parse()
                    .map_err(|_| format!("SchedulerParameters: invalid {k}={v}: not a number"))?;
                if n < min || n > max {
                    return Err(format!(
                        "SchedulerParameters: invalid {k}={v}: must be {min}..{max}"
                    ));
                }
                Ok(n)
            };
            match k.to_ascii_lowercase().as_str() {
                "bf_window" => p.bf_window_min = num(1, 43200)?,
                "bf_resolution" => p.bf_resolution_s = num(1, 3600)?,
                "bf_max_job_test" => p.bf_max_job_test = num(1, 10_000_000)?,
                "bf_max_job_user" => p.bf_max_job_user = num(0, 10_000_000)?,
                "default_queue_depth" => p.default_queue_depth = num(1, 10_000_000)?,
                "max_script_size" => p.max_script_size = num(1, 512 * 1024 * 1024)?,
                "bf_continue" => p.bf_continue = true,
                _ => {}
            }
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(s: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        s.iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn reads_and_checks() {
        let p = SchedParams::from_list(&l(&[
            ("bf_window", Some("60")),
            ("bf_resolution", Some("30")),
            ("bf_continue", None),
            ("default_queue_depth", Some("50")),
            ("batch_sched_delay", Some("3")),
        ]))
        .unwrap();
        assert_eq!(p.bf_window_min, 60);
        assert_eq!(p.bf_resolution_s, 30);
        assert!(p.bf_continue);
        assert_eq!(p.default_queue_depth, 50);
        assert_eq!(p.bf_max_job_test, 500);
        assert_eq!(p.max_script_size, 4 << 20);
        let p = SchedParams::from_list(&l(&[("max_script_size", Some("1000"))])).unwrap();
        assert_eq!(p.max_script_size, 1000);
        assert!(SchedParams::from_list(&l(&[("max_script_size", Some("0"))])).is_err());
        assert!(SchedParams::from_list(&l(&[("max_script_size", Some("600000000"))])).is_err());
        let e = SchedParams::from_list(&l(&[("bf_window", Some("x"))])).unwrap_err();
        assert!(e.contains("bf_window"), "{e}");
        assert!(SchedParams::from_list(&l(&[("bf_max_job_test", None)])).is_err());
        assert!(SchedParams::from_list(&l(&[("bf_resolution", Some("0"))])).is_err());
    }
}
