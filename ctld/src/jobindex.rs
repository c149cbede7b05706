//! Indexes of the job table for queries: job ids by state, by user and by
//! partition. `Ctld::sync_queue`, which every logged change of a job calls
//! (submit, state change, update, array split, requeue, purge, recovery),
//! keeps them in step, so a filtered `squeue -u U` / `-t R` / `-p P` costs
//! what it returns, not the whole queue. The index only proposes
//! candidates: the query still checks each one against the whole filter.

use std::collections::{BTreeSet, HashMap};

use drover_proto::{JobFilter, JobState};

use crate::job::Job;

/// What the index knows of one job: its state, its owner and its
/// partition text (interned: a queue has few distinct partition lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    state: i32,
    uid: u32,
    part: u32,
}

#[derive(Debug, Default)]
pub struct JobIndex {
    keys: HashMap<u32, Key>,
    by_state: HashMap<i32, BTreeSet<u32>>,
    by_user: HashMap<u32, BTreeSet<u32>>,
    /// By interned partition text ("p1" or "p1,p2" for a pending job
    /// submitted to several).
    by_part: Vec<BTreeSet<u32>>,
    part_names: Vec<String>,
    part_ids: HashMap<String, u32>,
}

/// The partition a query matches a job by: where it runs, else what it asked.
pub fn job_partition(job: &Job) -> &str {
    let rt = job.rt();
    if rt.partition.is_empty() {
        job.spec().partition.as_str()
    } else {
        rt.partition.as_str()
    }
}

/// Is a job in `state` listed for `states` (empty: the active ones, as
/// squeue's default; `all`: every one)?
pub fn state_selected(state: JobState, states: &[JobState], all: bool) -> bool {
    if all {
        return true;
    }
    if states.is_empty() {
        return !state.is_final() || state == JobState::Completing;
    }
    states.contains(&state)
}

fn remove_from<K: std::hash::Hash + Eq>(m: &mut HashMap<K, BTreeSet<u32>>, k: K, id: u32) {
    if let Some(set) = m.get_mut(&k) {
        set.remove(&id);
        if set.is_empty() {
            m.remove(&k);
        }
    }
}

impl JobIndex {
    fn intern(&mut self, part: &str) -> u32 {
        if let Some(&i) = self.part_ids.get(part) {
            return i;
        }
        let i = self.part_names.len() as u32;
        self.part_names.push(part.to_string());
        self.part_ids.insert(part.to_string(), i);
        self.by_part.push(BTreeSet::new());
        i
    }

    /// Record job `id` as it is now (`None`: gone).
    pub fn update(&mut self, id: u32, job: Option<&Job>) {
        let new = job.map(|j| Key {
            state: j.rt().state,
            uid: j.rec.uid,
            part: self.intern(job_partition(j)),
        });
        let old = self.keys.get(&id).copied();
        if old == new {
            return;
        }
        if let Some(o) = old {
            remove_from(&mut self.by_state, o.state, id);
            remove_from(&mut self.by_user, o.uid, id);
            self.by_part[o.part as usize].remove(&id);
            self.keys.remove(&id);
        }
        if let Some(n) = new {
            self.by_state.entry(n.state).or_default().insert(id);
            self.by_user.entry(n.uid).or_default().insert(id);
            self.by_part[n.part as usize].insert(id);
            self.keys.insert(id, n);
        }
    }

    /// Ids of the jobs in these states, ascending (the scheduler's running
    /// jobs without a walk over every job).
    pub fn ids_in(&self, states: &[JobState]) -> Vec<u32> {
        let mut ids: Vec<u32> = states
            .iter()
            .filter_map(|s| self.by_state.get(&(*s as i32)))
            .flatten()
            .copied()
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Ids that may match `f` (ascending), from the most selective index
    /// that applies; None when no index narrows it (scan every job). Job
    /// ids in the filter are handled by the caller.
    pub fn candidates(&self, f: &JobFilter) -> Option<Vec<u32>> {
        let mut sets: Vec<Vec<&BTreeSet<u32>>> = Vec::new();
        if !f.all_states {
            // As `Job::state` reads it (an unknown value is Pending).
            let wanted = |s: i32| {
                let st = JobState::try_from(s).unwrap_or(JobState::Pending);
                if f.states.is_empty() {
                    state_selected(st, &[], false)
                } else {
                    f.states.contains(&(st as i32))
                }
            };
            sets.push(
                self.by_state
                    .iter()
                    .filter(|(s, _)| wanted(**s))
                    .map(|(_, v)| v)
                    .collect(),
            );
        }
        if !f.user_ids.is_empty() {
            sets.push(
                f.user_ids
                    .iter()
                    .filter_map(|u| self.by_user.get(u))
                    .collect(),
            );
        }
        if !f.partitions.is_empty() {
            sets.push(
                self.part_names
                    .iter()
                    .zip(&self.by_part)
                    .filter(|(name, _)| {
                        name.split(',').any(|x| f.partitions.iter().any(|p| p == x))
                    })
                    .map(|(_, v)| v)
                    .collect(),
            );
        }
        let (best, n) = sets
            .into_iter()
            .map(|s| {
                let n = s.iter().map(|v| v.len()).sum::<usize>();
                (s, n)
            })
            .min_by_key(|(_, n)| *n)?;
        // Most of the table: a plain walk of it is as cheap.
        if n * 2 > self.keys.len() {
            return None;
        }
        let mut ids: Vec<u32> = Vec::with_capacity(n);
        ids.extend(best.iter().flat_map(|s| s.iter().copied()));
        if best.len() > 1 {
            ids.sort_unstable();
            ids.dedup();
        }
        Some(ids)
    }

    /// Jobs indexed (tests compare this with the job table).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Is the index exactly what `jobs` says? (tests)
    pub fn agrees_with<'a>(&self, jobs: impl Iterator<Item = &'a Job>) -> bool {
        let mut n = 0;
        for j in jobs {
            n += 1;
            let Some(k) = self.keys.get(&j.id()) else {
                return false;
            };
            let ok = k.state == j.rt().state
                && k.uid == j.rec.uid
                && self.part_names[k.part as usize] == job_partition(j)
                && self
                    .by_state
                    .get(&k.state)
                    .is_some_and(|s| s.contains(&j.id()))
                && self
                    .by_user
                    .get(&k.uid)
                    .is_some_and(|s| s.contains(&j.id()))
                && self.by_part[k.part as usize].contains(&j.id());
            if !ok {
                return false;
            }
        }
        n == self.keys.len()
            && self.by_state.values().map(|s| s.len()).sum::<usize>() == n
            && self.by_user.values().map(|s| s.len()).sum::<usize>() == n
            && self.by_part.iter().map(|s| s.len()).sum::<usize>() == n
    }
}
