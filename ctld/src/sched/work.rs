//! A pass's working copy of the nodes: it reads the snapshot it was given
//! and copies a node only when the pass first changes it (starts a job
//! there), so that a pass over a big cluster that starts a few jobs copies
//! a few nodes, not all of them.

use super::{NodeSet, NodeSnap};

/// No copy of this node yet: read the snapshot's.
const SHARED: u32 = u32::MAX;

pub(super) struct Work<'a> {
    base: &'a [NodeSnap],
    /// Per node: its position in `own`, or [`SHARED`].
    slot: Vec<u32>,
    own: Vec<NodeSnap>,
}

impl<'a> Work<'a> {
    pub fn new(base: &'a [NodeSnap]) -> Work<'a> {
        Work {
            base,
            slot: vec![SHARED; base.len()],
            own: Vec::new(),
        }
    }

    /// The nodes changed so far (copied).
    pub fn changed(&self) -> impl Iterator<Item = usize> + '_ {
        self.slot
            .iter()
            .enumerate()
            .filter(|(_, &k)| k != SHARED)
            .map(|(i, _)| i)
    }

    /// Node `i`, to change (copied on first use).
    pub fn get_mut(&mut self, i: usize) -> &mut NodeSnap {
        let mut k = self.slot[i];
        if k == SHARED {
            k = self.own.len() as u32;
            self.own.push(self.base[i].clone());
            self.slot[i] = k;
        }
        &mut self.own[k as usize]
    }
}

impl std::ops::Index<usize> for Work<'_> {
    type Output = NodeSnap;

    fn index(&self, i: usize) -> &NodeSnap {
        match self.slot[i] {
            SHARED => &self.base[i],
            k => &self.own[k as usize],
        }
    }
}

impl NodeSet for Work<'_> {
    fn count(&self) -> usize {
        self.base.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cpus: u32) -> NodeSnap {
        NodeSnap {
            usable: true,
            cpus,
            free_cpus: (0..cpus).collect(),
            real_memory: 1000,
            free_memory: 1000,
            gres: Vec::new(),
            features: Vec::new(),
            weight: 1,
            jobs: 0,
            threads: 1,
            shared: Vec::new(),
            ready: 0,
        }
    }

    #[test]
    fn a_node_is_copied_when_first_changed_and_the_snapshot_is_left_alone() {
        let base = vec![node(4), node(8), node(2)];
        let mut w = Work::new(&base);
        assert_eq!(w.count(), 3);
        assert_eq!(w[1].free_cpus.len(), 8);
        w.get_mut(1).free_cpus.truncate(3);
        w.get_mut(1).jobs += 1;
        w.get_mut(2).free_cpus.clear();
        assert_eq!((w[1].free_cpus.len(), w[1].jobs), (3, 1));
        assert!(w[2].free_cpus.is_empty());
        assert_eq!(w[0], base[0]);
        assert_eq!(w.own.len(), 2);
        // The snapshot is what it was.
        assert_eq!(base[1], node(8));
        assert_eq!(base[2], node(2));
    }
}
