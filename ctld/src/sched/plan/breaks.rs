//! The breakpoints of a partition's profiles, for a multi-node plan's
//! tries: every time some candidate node's profile changes, kept current
//! from the pass's change log.
//!
//! A pass builds each set once from the candidates' profiles (thousands of
//! breakpoints) and then adds the ends of what it plans; a try reads the
//! first few at or after a time. So the set is a sorted list, built by one sort,
//! with the times added since kept in a short sorted list of their own and
//! merged in when it grows: reading merges the two on the fly. A time added
//! that the main list already holds is not looked for there (a search of
//! the long list per add): the merges read it once.

use super::{FxMap, Pass};

/// Added times are merged into the main list once there are this many.
const MERGE_AT: usize = 256;

/// A set of times, ascending.
pub(in crate::sched) struct TimeSet {
    /// Ascending, distinct.
    main: Vec<i64>,
    /// Added since the last merge: ascending, distinct (some may be in
    /// `main` too).
    added: Vec<i64>,
}

impl TimeSet {
    /// The set of `times` (any order, repeats allowed).
    pub fn of(mut times: Vec<i64>) -> TimeSet {
        times.sort_unstable();
        times.dedup();
        TimeSet {
            main: times,
            added: Vec::new(),
        }
    }

    pub fn insert(&mut self, t: i64) {
        if let Err(at) = self.added.binary_search(&t) {
            self.added.insert(at, t);
            if self.added.len() >= MERGE_AT {
                self.merge();
            }
        }
    }

    fn merge(&mut self) {
        let mut out = Vec::with_capacity(self.main.len() + self.added.len());
        out.extend(Merged {
            main: &self.main,
            added: &self.added,
        });
        self.main = out;
        self.added.clear();
    }

    /// The times in [from, until], ascending (none when until < from).
    pub fn range(&self, from: i64, until: i64) -> impl Iterator<Item = i64> + '_ {
        let main = &self.main[self.main.partition_point(|&t| t < from)..];
        let added = &self.added[self.added.partition_point(|&t| t < from)..];
        Merged { main, added }.take_while(move |&t| t <= until)
    }
}

/// Two ascending lists of distinct times read as one (a time in both, once).
struct Merged<'a> {
    main: &'a [i64],
    added: &'a [i64],
}

impl Iterator for Merged<'_> {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        let t = match (self.main.first(), self.added.first()) {
            (Some(&m), Some(&a)) => m.min(a),
            (Some(&m), None) => m,
            (None, Some(&a)) => a,
            (None, None) => return None,
        };
        for list in [&mut self.main, &mut self.added] {
            if list.first() == Some(&t) {
                *list = &list[1..];
            }
        }
        Some(t)
    }
}

/// The breakpoints of a set of candidates' profiles, kept current from the
/// pass's change log.
pub(in crate::sched) struct Breaks {
    set: TimeSet,
    member: Vec<bool>,
    seen: usize,
}

/// A pass's breakpoint sets, by partition and reservation.
pub(in crate::sched) type BreakSets = FxMap<(usize, Option<usize>), Breaks>;

impl Pass<'_> {
    pub(super) fn breaks(&self, cands: &[usize]) -> Breaks {
        let mut member = vec![false; self.inp.nodes.len()];
        let mut times = Vec::new();
        for &i in cands {
            member[i] = true;
            times.extend(self.lines[i].breakpoints(i64::MIN, i64::MAX));
        }
        Breaks {
            set: TimeSet::of(times),
            member,
            seen: self.changes.len(),
        }
    }

    /// The candidates' breakpoints in [from, until], ascending.
    pub(super) fn breakpoints_of<'b>(
        &self,
        b: &'b mut Breaks,
        from: i64,
        until: i64,
    ) -> impl Iterator<Item = i64> + 'b {
        for c in &self.changes[b.seen..] {
            if b.member[c.node] {
                // A take or give splits the profile at both ends (at the
                // first segment's start it splits nothing new).
                if c.s >= self.inp.now {
                    b.set.insert(c.s);
                }
                if c.e != i64::MAX {
                    b.set.insert(c.e);
                }
            }
        }
        b.seen = self.changes.len();
        b.set.range(from, until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::synth::Rng;
    use std::collections::BTreeSet;

    /// Built, added to (past the merge, repeats and times already there
    /// among them) and read over random ranges, the set reads as a B-tree
    /// set given the same times.
    #[test]
    fn time_sets_read_as_btree_sets() {
        for seed in 1..=40u64 {
            let mut rng = Rng::new(seed);
            let spread = rng.pick(&[10u64, 1_000, 1_000_000]);
            let first: Vec<i64> = (0..rng.range(0, 300))
                .map(|_| rng.range(0, spread) as i64 - 50)
                .collect();
            let mut set = TimeSet::of(first.clone());
            let mut truth: BTreeSet<i64> = first.into_iter().collect();
            for step in 0..(3 * MERGE_AT) {
                let t = rng.range(0, spread) as i64 - 50;
                set.insert(t);
                truth.insert(t);
                if step % 37 == 0 {
                    let from = rng.range(0, spread) as i64 - 60;
                    let until = from + rng.range(0, spread) as i64;
                    let got: Vec<i64> = set.range(from, until).collect();
                    let want: Vec<i64> = truth.range(from..=until).copied().collect();
                    assert_eq!(got, want, "seed {seed} step {step}");
                }
            }
            assert_eq!(set.range(10, 9).count(), 0, "seed {seed}: an empty range");
            let all: Vec<i64> = set.range(i64::MIN, i64::MAX).collect();
            assert_eq!(all, truth.into_iter().collect::<Vec<_>>(), "seed {seed}");
        }
    }
}
