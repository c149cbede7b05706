//! Job dependencies: `after`, `afterok`, `afternotok`, `afterany`,
//! `aftercorr` (afterok of the corresponding array task), `singleton`; `,` joins
//! conditions that must all hold, `?` conditions of which one must hold.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    After,
    AfterOk,
    AfterNotOk,
    AfterAny,
    /// `aftercorr`: task `i` of this array waits for task `i` of the named
    /// one to complete successfully (the whole job when it has no such
    /// task); see `Ctld::corr_verdict`.
    AfterCorr,
    Singleton,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    pub kind: Kind,
    /// Job id and optional array task (`A_3`); none for singleton.
    pub job: Option<(u32, Option<u32>)>,
    /// after:ID+MINUTES
    pub delay_min: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub conds: Vec<Cond>,
    /// `?`: any one condition suffices.
    pub any: bool,
}

/// Where a referenced job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Pending,
    Running {
        since: i64,
    },
    /// Ended; ok = COMPLETED with exit 0.
    Ended {
        ok: bool,
        at: i64,
    },
    /// Not known (purged) and never decided before: the dependency is
    /// lifted, as Slurm does ("job is gone, dependency lifted"). An outcome
    /// decided earlier is kept with the dependent job ([`decided`]).
    Unknown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Satisfied,
    Wait,
    Never,
}

pub fn parse(s: &str) -> Result<Option<Dependency>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let bad = || "Job dependency problem".to_string();
    let any = s.contains('?');
    if any && s.contains(',') {
        return Err(bad());
    }
    let mut conds = Vec::new();
    for part in s.split([',', '?']) {
        let part = part.trim();
        if part.eq_ignore_ascii_case("singleton") {
            conds.push(Cond {
                kind: Kind::Singleton,
                job: None,
                delay_min: 0,
            });
            continue;
        }
        let (kind, ids) = part.split_once(':').ok_or_else(bad)?;
        let kind = match kind.to_ascii_lowercase().as_str() {
            "after" => Kind::After,
            "afterok" => Kind::AfterOk,
            "afternotok" => Kind::AfterNotOk,
            "afterany" | "afterburstbuffer" => Kind::AfterAny,
            "aftercorr" => Kind::AfterCorr,
            _ => return Err(bad()),
        };
        for id in ids.split(':') {
            let (id, delay) = match id.split_once('+') {
                Some((i, d)) if kind == Kind::After => (i, d.parse().map_err(|_| bad())?),
                Some(_) => return Err(bad()),
                None => (id, 0),
            };
            let job = match id.split_once('_') {
                Some((a, t)) => (
                    a.parse().map_err(|_| bad())?,
                    Some(t.parse().map_err(|_| bad())?),
                ),
                None => (id.parse().map_err(|_| bad())?, None),
            };
            conds.push(Cond {
                kind,
                job: Some(job),
                delay_min: delay,
            });
        }
    }
    if conds.is_empty() {
        return Err(bad());
    }
    Ok(Some(Dependency { conds, any }))
}

/// Evaluate one condition given what its job(s) look like. For a whole array,
/// `seen` holds every task.
pub fn eval_cond(c: &Cond, seen: &[Seen], now: i64) -> Verdict {
    use Verdict::*;
    let each = |s: &Seen| -> Verdict {
        match (c.kind, *s) {
            (_, Seen::Unknown) => Satisfied,
            (Kind::After, Seen::Running { since })
            | (Kind::After, Seen::Ended { at: since, .. }) => {
                if now >= since + i64::from(c.delay_min) * 60 {
                    Satisfied
                } else {
                    Wait
                }
            }
            (Kind::AfterOk | Kind::AfterCorr, Seen::Ended { ok, .. }) => {
                if ok {
                    Satisfied
                } else {
                    Never
                }
            }
            (Kind::AfterNotOk, Seen::Ended { ok, .. }) => {
                if ok {
                    Never
                } else {
                    Satisfied
                }
            }
            (Kind::AfterAny, Seen::Ended { .. }) => Satisfied,
            _ => Wait,
        }
    };
    let mut v = Satisfied;
    for s in seen {
        match each(s) {
            Never => return Never,
            Wait => v = Wait,
            Satisfied => {}
        }
    }
    v
}

/// Outcomes kept with the dependent job (`JobRuntime.dep_state`, one byte
/// per condition): Slurm's `depend_state` FULFILLED and FAILED. Once a
/// condition is decided it stays so, even after the job it names is purged.
const SATISFIED: u8 = 1;
const NEVER: u8 = 2;

/// Condition `i`'s recorded outcome, if decided.
pub fn decided(state: &[u8], i: usize) -> Option<Verdict> {
    match state.get(i) {
        Some(&SATISFIED) => Some(Verdict::Satisfied),
        Some(&NEVER) => Some(Verdict::Never),
        _ => None,
    }
}

/// The state to keep after this evaluation: `old` with every newly decided
/// verdict recorded (`keep(i)` false: condition `i` is not recorded, e.g.
/// singleton). None when nothing new was decided.
pub fn settle(old: &[u8], verdicts: &[Verdict], keep: &dyn Fn(usize) -> bool) -> Option<Vec<u8>> {
    let new = |i: usize, v: Verdict| {
        let code = match v {
            Verdict::Satisfied => SATISFIED,
            Verdict::Never => NEVER,
            Verdict::Wait => return None,
        };
        (keep(i) && old.get(i).copied().unwrap_or(0) == 0).then_some(code)
    };
    // Most evaluations decide nothing new: no copy for them.
    if !verdicts
        .iter()
        .enumerate()
        .any(|(i, &v)| new(i, v).is_some())
    {
        return None;
    }
    let mut out = old.to_vec();
    out.resize(verdicts.len().max(old.len()), 0);
    for (i, &v) in verdicts.iter().enumerate() {
        if let Some(code) = new(i, v) {
            out[i] = code;
        }
    }
    Some(out)
}

/// Combine per-condition verdicts with the dependency's `,`/`?` rule.
pub fn combine(dep: &Dependency, verdicts: &[Verdict]) -> Verdict {
    use Verdict::*;
    if dep.any {
        if verdicts.contains(&Satisfied) {
            Satisfied
        } else if verdicts.iter().all(|v| *v == Never) {
            Never
        } else {
            Wait
        }
    } else if verdicts.contains(&Never) {
        Never
    } else if verdicts.iter().all(|v| *v == Satisfied) {
        Satisfied
    } else {
        Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_forms() {
        let d = parse("afterok:12:13,afterany:14").unwrap().unwrap();
        assert_eq!(d.conds.len(), 3);
        assert!(!d.any);
        let d = parse("afterok:12?afternotok:13").unwrap().unwrap();
        assert!(d.any);
        let d = parse("after:5+10,singleton").unwrap().unwrap();
        assert_eq!(d.conds[0].delay_min, 10);
        assert_eq!(d.conds[1].kind, Kind::Singleton);
        assert_eq!(
            parse("afterok:7_3").unwrap().unwrap().conds[0].job,
            Some((7, Some(3)))
        );
        for bad in [
            "afterok",
            "bogus:1",
            "afterok:x",
            "afterok:1,afterok:2?afterok:3",
            ",",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(
            parse("aftercorr:7").unwrap().unwrap().conds[0].kind,
            Kind::AfterCorr
        );
    }

    #[test]
    fn evaluation() {
        let c = |k| Cond {
            kind: k,
            job: Some((1, None)),
            delay_min: 0,
        };
        let ok = Seen::Ended { ok: true, at: 0 };
        let bad = Seen::Ended { ok: false, at: 0 };
        assert_eq!(eval_cond(&c(Kind::AfterOk), &[ok], 0), Verdict::Satisfied);
        assert_eq!(eval_cond(&c(Kind::AfterOk), &[bad], 0), Verdict::Never);
        assert_eq!(
            eval_cond(&c(Kind::AfterOk), &[ok, Seen::Pending], 0),
            Verdict::Wait
        );
        assert_eq!(eval_cond(&c(Kind::AfterNotOk), &[ok], 0), Verdict::Never);
        assert_eq!(eval_cond(&c(Kind::AfterCorr), &[ok], 0), Verdict::Satisfied);
        assert_eq!(eval_cond(&c(Kind::AfterCorr), &[bad], 0), Verdict::Never);
        assert_eq!(eval_cond(&c(Kind::AfterAny), &[bad], 0), Verdict::Satisfied);
        assert_eq!(
            eval_cond(&c(Kind::After), &[Seen::Running { since: 0 }], 0),
            Verdict::Satisfied
        );
        assert_eq!(
            eval_cond(&c(Kind::After), &[Seen::Pending], 0),
            Verdict::Wait
        );
        let any = Dependency {
            conds: vec![],
            any: true,
        };
        assert_eq!(
            combine(&any, &[Verdict::Never, Verdict::Satisfied]),
            Verdict::Satisfied
        );
        let all = Dependency {
            conds: vec![],
            any: false,
        };
        assert_eq!(
            combine(&all, &[Verdict::Wait, Verdict::Never]),
            Verdict::Never
        );
    }

    #[test]
    fn decided_outcomes_are_kept() {
        use Verdict::*;
        assert_eq!(decided(&[], 0), None);
        let s = settle(&[], &[Never, Wait, Satisfied], &|_| true).unwrap();
        assert_eq!(decided(&s, 0), Some(Never));
        assert_eq!(decided(&s, 1), None);
        assert_eq!(decided(&s, 2), Some(Satisfied));
        // Nothing new: nothing to log; a decided one is never overwritten.
        assert_eq!(settle(&s, &[Never, Wait, Satisfied], &|_| true), None);
        assert_eq!(settle(&s, &[Satisfied, Wait, Never], &|_| true), None);
        // Not kept (singleton): not recorded.
        assert_eq!(settle(&[], &[Satisfied], &|_| false), None);
    }
}
