//! sacct's selections the accounting daemon's query does not carry:
//! `-g/--gid`, `-W/--wckeys`, `-i/--nnodes`, `-I/--ncpus`, `-R/--reason`,
//! applied to the records it returns, and `-D/--duplicates` (without it a
//! job id that has several records, as after a requeue, shows only its
//! newest, as Slurm's sacct does). Pure.

use drover_proto::acct::JobRecord;

/// What the local filters keep.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Local {
    pub gids: Option<Vec<u32>>,
    pub wckeys: Option<Vec<String>>,
    pub nnodes: Option<(u32, u32)>,
    pub ncpus: Option<(u32, u32)>,
    pub reasons: Option<Vec<String>>,
    pub duplicates: bool,
}

impl Local {
    /// The daemon columns these filters read.
    pub fn columns(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.gids.is_some() {
            v.push("gid");
        }
        if self.wckeys.is_some() {
            v.push("wckey");
        }
        if self.nnodes.is_some() {
            v.push("nnodes");
        }
        if self.ncpus.is_some() {
            v.push("ncpus");
        }
        if self.reasons.is_some() {
            v.push("reason");
        }
        v
    }

    pub fn keep(&self, j: &JobRecord) -> bool {
        let within = |r: &Option<(u32, u32)>, v: u32| r.is_none_or(|(lo, hi)| v >= lo && v <= hi);
        self.gids.as_ref().is_none_or(|g| g.contains(&j.gid))
            && self
                .wckeys
                .as_ref()
                .is_none_or(|w| w.iter().any(|x| x == &j.wckey))
            && within(&self.nnodes, j.nnodes)
            && within(&self.ncpus, j.ncpus)
            && self
                .reasons
                .as_ref()
                .is_none_or(|r| r.iter().any(|x| x.eq_ignore_ascii_case(&j.reason)))
    }

    /// Apply the filters and (unless `-D`) keep each job id's newest record.
    pub fn apply(&self, jobs: Vec<JobRecord>) -> Vec<JobRecord> {
        let mut jobs: Vec<JobRecord> = jobs.into_iter().filter(|j| self.keep(j)).collect();
        if !self.duplicates {
            let newest = |a: &JobRecord| {
                jobs.iter()
                    .filter(|b| {
                        b.cluster == a.cluster
                            && b.job_id == a.job_id
                            && b.array_task_id == a.array_task_id
                    })
                    .map(|b| b.submit_time)
                    .max()
                    .unwrap_or(a.submit_time)
            };
            let keep: Vec<bool> = jobs.iter().map(|j| j.submit_time >= newest(j)).collect();
            let mut it = keep.into_iter();
            jobs.retain(|_| it.next().unwrap_or(true));
        }
        jobs
    }
}

/// `-i`/`-I`: `N`, `MIN-MAX` or `*` (every value), with `k`/`m` suffixes,
/// as Slurm's `get_resource_arg_range` reads them; `what` names it in
/// Slurm's error (`requested node range`).
pub fn range(s: &str, what: &str) -> Result<(u32, u32), String> {
    if s.is_empty() || s.starts_with('*') {
        return Ok((1, i32::MAX as u32));
    }
    let bad = || format!("Invalid numeric value \"{s}\" for {what}.");
    let num = |t: &str, zero_ok: bool| -> Result<u32, String> {
        let (digits, mult) = match t.as_bytes().last() {
            Some(b'k' | b'K') => (&t[..t.len() - 1], 1024u64),
            Some(b'm' | b'M') => (&t[..t.len() - 1], 1_048_576u64),
            _ => (t, 1),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        let n = n * mult;
        if n > i32::MAX as u64 {
            return Err(format!("Numeric argument ({n}) to big for {what}."));
        }
        if n == 0 && !zero_ok {
            return Err(bad());
        }
        Ok(n as u32)
    };
    match s.split_once('-') {
        Some((a, b)) => Ok((num(a, true)?, num(b, false)?)),
        None => {
            let n = num(s, true)?;
            Ok((n, n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: u32, submit: i64) -> JobRecord {
        JobRecord {
            job_id: id,
            submit_time: submit,
            ..Default::default()
        }
    }

    #[test]
    fn filters() {
        let mut j = rec(1, 10);
        j.gid = 100;
        j.wckey = "w".into();
        j.nnodes = 2;
        j.ncpus = 8;
        j.reason = "Resources".into();
        assert!(Local::default().keep(&j));
        let f = |l: Local| l.keep(&j);
        assert!(f(Local {
            gids: Some(vec![5, 100]),
            ..Default::default()
        }));
        assert!(!f(Local {
            gids: Some(vec![5]),
            ..Default::default()
        }));
        assert!(!f(Local {
            wckeys: Some(vec!["x".into()]),
            ..Default::default()
        }));
        assert!(f(Local {
            nnodes: Some((2, 2)),
            ncpus: Some((4, 16)),
            ..Default::default()
        }));
        assert!(!f(Local {
            ncpus: Some((9, 16)),
            ..Default::default()
        }));
        assert!(f(Local {
            reasons: Some(vec!["resources".into()]),
            ..Default::default()
        }));
        assert_eq!(
            Local {
                gids: Some(vec![]),
                ncpus: Some((1, 1)),
                ..Default::default()
            }
            .columns(),
            vec!["gid", "ncpus"]
        );
    }

    #[test]
    fn newest_record_unless_duplicates() {
        let jobs = vec![rec(5, 100), rec(6, 50), rec(5, 200)];
        let ids = |v: Vec<JobRecord>| {
            v.iter()
                .map(|j| (j.job_id, j.submit_time))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(Local::default().apply(jobs.clone())),
            vec![(6, 50), (5, 200)]
        );
        let all = Local {
            duplicates: true,
            ..Default::default()
        };
        assert_eq!(ids(all.apply(jobs)), vec![(5, 100), (6, 50), (5, 200)]);
    }

    #[test]
    fn ranges() {
        assert_eq!(range("4", "requested cpu range"), Ok((4, 4)));
        assert_eq!(range("2-8", "requested cpu range"), Ok((2, 8)));
        assert_eq!(range("1k", "requested cpu range"), Ok((1024, 1024)));
        assert_eq!(range("*", "requested cpu range"), Ok((1, i32::MAX as u32)));
        assert_eq!(
            range("x", "requested node range"),
            Err("Invalid numeric value \"x\" for requested node range.".to_string())
        );
        assert!(range("2-0", "requested node range").is_err());
    }
}
