//! What planning learnt about each node's earliest start for a request,
//! kept while the node's profile is unchanged: by shape (request, time
//! limit, partitions, reservation), and, for sweeps over nodes without a
//! reservation block, by request alone, with the lengths the answer holds
//! for ([`Answer`]), so that jobs asking for the same resources for
//! different times share it.
//!
//! [`Answer`]: crate::sched::profile::Answer

use super::breaks::BreakSets;
use super::sweep::SortedSweeps;
use super::{FxMap, Pass};
use crate::sched::place::Avail;

/// One node's answer for a request: its earliest start searching from
/// `from`, or none up to `t`; valid while the node's profile version is
/// `ver`, for searches from `from` on, of jobs whose length is in
/// (lo, hi].
#[derive(Clone, Copy)]
pub(in crate::sched) struct Memo {
    ver: u32,
    known: bool,
    from: i64,
    t: i64,
    lo: i64,
    hi: i64,
}

const UNKNOWN: Memo = Memo {
    ver: u32::MAX,
    known: false,
    from: i64::MAX,
    t: 0,
    lo: i64::MAX,
    hi: i64::MIN,
};

/// A memo per node, for one request or shape. A pass makes many, each
/// the size of the cluster, and writes few entries of each: rows come
/// from this thread's spares and go back to them, emptied, when dropped.
#[derive(Default)]
pub(in crate::sched) struct MemoRow {
    memos: Vec<Memo>,
    /// The entries written (to empty it again).
    written: Vec<u32>,
}

/// Spare rows kept at most, per thread (a few passes' worth).
const SPARE_ROWS: usize = 1024;

thread_local! {
    /// Rows given back, unknown everywhere.
    static SPARE: std::cell::RefCell<Vec<Vec<Memo>>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl MemoRow {
    /// Sized for `n` nodes, unknown everywhere when new.
    fn size(&mut self, n: usize) {
        if self.memos.len() == n {
            return;
        }
        self.give_back();
        self.memos = SPARE
            .with_borrow_mut(|spare| match spare.pop() {
                Some(v) if v.len() == n => Some(v),
                _ => None,
            })
            .unwrap_or_else(|| vec![UNKNOWN; n]);
    }

    fn len(&self) -> usize {
        self.memos.len()
    }

    fn get(&self, i: usize) -> Option<&Memo> {
        self.memos.get(i)
    }

    fn set(&mut self, i: usize, m: Memo) {
        // (A written memo's `ver` is a node's count of changes this pass.)
        if self.memos[i].ver == UNKNOWN.ver {
            self.written.push(i as u32);
        }
        self.memos[i] = m;
    }

    /// Unknown everywhere again.
    pub fn clear(&mut self) {
        for &i in &self.written {
            self.memos[i as usize] = UNKNOWN;
        }
        self.written.clear();
    }

    fn give_back(&mut self) {
        self.clear();
        let v = std::mem::take(&mut self.memos);
        if !v.is_empty() {
            SPARE.with_borrow_mut(|spare| {
                if spare.len() < SPARE_ROWS {
                    spare.push(v);
                }
            });
        }
    }
}

impl Drop for MemoRow {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// The memos a look at one node uses.
pub(in crate::sched) struct Memos<'m> {
    /// The shape's own.
    pub shape: &'m mut MemoRow,
    /// The request's, for nodes without a reservation block (multi-node
    /// sweeps).
    pub request: Option<&'m mut MemoRow>,
}

impl<'m> Memos<'m> {
    /// Sized for `n` nodes (unknown everywhere when new): the request's
    /// when given (the shape's then on first use, for a node with a
    /// reservation block), else the shape's.
    pub fn sized(shape: &'m mut MemoRow, request: Option<&'m mut MemoRow>, n: usize) -> Memos<'m> {
        let mut m = Memos { shape, request };
        match m.request.as_deref_mut() {
            Some(r) => r.size(n),
            None => m.shape.size(n),
        }
        m
    }
}

/// A shape's memos: for one task on a node (one-node shapes: for the
/// job), and for an even share of that many tasks (multi-node shapes).
#[derive(Default)]
pub(in crate::sched) struct ShapeMemos {
    pub one: MemoRow,
    pub share: (u32, MemoRow),
}

impl ShapeMemos {
    pub fn clear(&mut self) {
        self.one.clear();
        self.share.1.clear();
    }
}

/// What a plan of one job reads and adds to: its shape's memos and the
/// pass's, where its request is number `rid` ([`super::kinds`]).
pub(in crate::sched) struct Learnt<'m> {
    pub shape: &'m mut ShapeMemos,
    pub pass: &'m mut PassMemos,
    pub rid: u32,
}

/// A pass's memos by request number and tasks per node.
pub(in crate::sched) type ByRequest = FxMap<(u32, u32), MemoRow>;

/// What a pass learns for all its jobs; emptied when resources come back
/// (a preemption).
#[derive(Default)]
pub(in crate::sched) struct PassMemos {
    pub requests: ByRequest,
    pub sorted: SortedSweeps,
    pub breaks: BreakSets,
    /// Scratch, not learnt: a row of task bounds by node for a multi-node
    /// plan's tries, reused by every round (each try writes the entries it
    /// reads, so nothing in it is ever stale and `clear` leaves it).
    pub bounds: Vec<u32>,
}

impl PassMemos {
    pub fn clear(&mut self) {
        self.requests.clear();
        self.sorted.clear();
        self.breaks.clear();
    }
}

impl Pass<'_> {
    /// No earlier than this is node `i`'s answer to a search from `from`
    /// for a job of length `d` (MIN: nothing known), by the last answer
    /// its memo holds: an answer searched from no later than `from`, for
    /// lengths from no longer than `d` up, is no later, and a pass only
    /// takes resources (a preemption empties its memos), so an answer made
    /// before a change bounds the answers after it.
    ///
    /// Only the memo a look at the node would read is read: the request's
    /// where there is one (a node with a reservation block, whose looks
    /// use the shape's, never has one there: no bound), else the shape's;
    /// and `from` as asked, not raised to when the node is up (the memo's
    /// own is).
    pub(super) fn node_bound(memos: &Memos, i: usize, from: i64, d: i64) -> i64 {
        let memo = match memos.request.as_deref() {
            Some(r) => r.get(i),
            None => memos.shape.get(i),
        };
        match memo {
            Some(m) if from >= m.from && d > m.lo => {
                if m.known {
                    m.t
                } else {
                    m.t.saturating_add(1)
                }
            }
            _ => i64::MIN,
        }
    }

    /// Node `i`'s earliest start in [from, lim] for a shape, remembered
    /// while the node's profile is unchanged.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn node_earliest(
        &self,
        i: usize,
        memos: &mut Memos,
        from: i64,
        lim: i64,
        d: i64,
        own: Option<usize>,
        fits: &dyn Fn(&Avail) -> bool,
    ) -> Option<i64> {
        // A powered-down node runs nothing before it is up.
        let from = from.max(self.inp.nodes[i].ready);
        if from > lim {
            return None;
        }
        let line = &self.lines[i];
        let row: &mut MemoRow = match memos.request.as_deref_mut() {
            Some(r) if line.blocks.is_empty() => r,
            Some(r) => {
                // The shape's own memos, made on first use (most passes
                // have no reservation).
                memos.shape.size(r.len());
                memos.shape
            }
            None => memos.shape,
        };
        let m = row.memos[i];
        // What the memo says holds for this search (see `node_bound`):
        // every start before its `t` fails (takes since then only make
        // less free), and with the profile unchanged its `t` is the answer
        // for the lengths it holds for.
        let covered = from >= m.from && d > m.lo;
        let start = if !covered {
            from
        } else if m.known {
            if m.ver == self.ver[i] && d <= m.hi {
                if m.t >= from {
                    return (m.t <= lim).then_some(m.t);
                }
                from
            } else {
                from.max(m.t)
            }
        } else if lim <= m.t {
            return None;
        } else {
            from.max(m.t + 1)
        };
        let a = line.earliest(self.inp.now, self.res(), start, lim, d, own, fits);
        // What was searched: from `from` when this search covers it,
        // else (resumed past an earlier search) from that one's start, for
        // the lengths over both `lo`s (every start before this search's
        // failed within the earlier one's) up to what fits at the answer.
        let (searched_from, lo, hi) = if start == from {
            (from, a.lo, a.hi)
        } else {
            (m.from, a.lo.max(m.lo), a.hi)
        };
        let r = a.t;
        row.set(
            i,
            Memo {
                ver: self.ver[i],
                known: r.is_some(),
                from: searched_from,
                t: r.unwrap_or(lim),
                lo,
                hi,
            },
        );
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown_everywhere(r: &MemoRow) -> bool {
        r.memos
            .iter()
            .all(|m| m.ver == UNKNOWN.ver && m.from == UNKNOWN.from && !m.known)
    }

    /// A row comes back from the spares unknown everywhere: no pass reads
    /// what an earlier one learnt (its bounds would not hold).
    #[test]
    fn rows_are_emptied_when_cleared_and_given_back() {
        let learnt = Memo {
            ver: 0,
            known: true,
            from: 5,
            t: 9,
            lo: 0,
            hi: i64::MAX,
        };
        let mut row = MemoRow::default();
        row.size(64);
        row.set(3, learnt);
        row.set(3, learnt);
        row.set(40, learnt);
        row.clear();
        assert!(unknown_everywhere(&row));
        row.set(7, learnt);
        drop(row);
        for _ in 0..3 {
            let mut again = MemoRow::default();
            again.size(64);
            assert!(unknown_everywhere(&again));
            again.set(7, learnt);
        }
    }
}
