//! Sharing equal values between jobs: a queue of 100,000 jobs submitted by
//! a loop of `sbatch`, or the tasks of an array, holds a few distinct specs
//! and requests, each ~250–800 bytes. Jobs keep them behind an `Arc`; the
//! table gives the one already held for an equal value. Values nobody holds
//! any more are dropped when the table has doubled since the last sweep, so
//! the table's cost stays proportional to the values in use.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use drover_proto::state::ResolvedRequest;
use drover_proto::JobSpec;

use crate::job::Job;
use crate::sched::Request;

/// The controller's tables: jobs' specs (script and environment are blobs,
/// so a loop of `sbatch` makes equal specs), resolved requests and their
/// scheduler form (a queue has few distinct shapes).
#[derive(Debug, Default)]
pub struct SharedParts {
    pub specs: Interner<JobSpec>,
    pub requests: Interner<ResolvedRequest>,
    pub sched: Interner<Request>,
}

impl SharedParts {
    /// Point `job`'s spec at the shared copy (after a change made it its own).
    pub fn share_spec(&mut self, job: &mut Job) {
        let s = self.specs.intern_arc(job.spec_arc().clone());
        job.set_spec_arc(s);
    }
}

#[derive(Debug)]
pub struct Interner<T> {
    set: HashSet<Arc<T>>,
    /// Sweep when the table grows past this.
    sweep_at: usize,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner {
            set: HashSet::new(),
            sweep_at: 1024,
        }
    }
}

impl<T: Hash + Eq> Interner<T> {
    /// The shared copy of `v`.
    pub fn intern(&mut self, v: T) -> Arc<T> {
        if let Some(a) = self.set.get(&v) {
            return a.clone();
        }
        self.insert(Arc::new(v))
    }

    /// The shared copy equal to `a` (`a` itself when it is the first).
    pub fn intern_arc(&mut self, a: Arc<T>) -> Arc<T> {
        if let Some(s) = self.set.get(&*a) {
            return s.clone();
        }
        self.insert(a)
    }

    fn insert(&mut self, a: Arc<T>) -> Arc<T> {
        if self.set.len() >= self.sweep_at {
            self.sweep();
        }
        self.set.insert(a.clone());
        a
    }

    /// Drop the values only the table holds.
    pub fn sweep(&mut self) {
        self.set.retain(|a| Arc::strong_count(a) > 1);
        self.set.shrink_to_fit();
        self.sweep_at = (self.set.len() * 2).max(1024);
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_share_one_copy() {
        let mut t = Interner::default();
        let a = t.intern(String::from("debug"));
        let b = t.intern(String::from("debug"));
        let c = t.intern(String::from("gpu"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        let d = t.intern_arc(Arc::new(String::from("gpu")));
        assert!(Arc::ptr_eq(&c, &d));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn values_nobody_holds_are_swept_as_the_table_grows() {
        let mut t = Interner::default();
        let kept = t.intern(0u32);
        for i in 1..5000u32 {
            drop(t.intern(i));
        }
        // Sweeps ran while it grew: never more than twice the live values
        // plus the sweep's floor.
        assert!(t.len() <= 1024, "{}", t.len());
        t.sweep();
        assert_eq!(t.len(), 1);
        assert!(Arc::ptr_eq(&kept, &t.intern(0)));
    }
}
