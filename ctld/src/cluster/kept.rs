//! The snapshot of the nodes the scheduler reads, kept between passes
//! with its best-fit index: only the nodes whose resources changed since
//! (`stale`) are built again; lent to a pass on a worker thread and given
//! back with its decisions.

use super::{Cluster, Node, NodeSnap};

impl Cluster {
    /// Every node as the scheduler sees it ([`Node::snap`]), from the kept
    /// snapshot: nodes whose resources changed since it was last taken are
    /// built again, the others only get their `usable` refreshed. Give it
    /// back with [`Cluster::put_snaps`] (the scheduler reads it while the
    /// controller starts jobs, which marks their nodes).
    pub fn take_snaps(&mut self) -> Vec<NodeSnap> {
        let mut snaps = std::mem::take(&mut self.snaps);
        if snaps.len() != self.nodes.len() || self.stale.len() != self.nodes.len() {
            snaps = self.nodes.iter().map(Node::snap).collect();
            self.index = None;
            self.kept_gen += 1;
        } else {
            for (i, n) in self.nodes.iter().enumerate() {
                let usable = n.usable();
                if self.stale[i] {
                    snaps[i] = n.snap();
                } else if snaps[i].usable != usable {
                    snaps[i].usable = usable;
                } else {
                    continue;
                }
                if let Some(ix) = self.index.as_mut() {
                    ix.update(i, &snaps[i]);
                }
            }
        }
        self.stale.clear();
        self.stale.resize(self.nodes.len(), false);
        #[cfg(debug_assertions)]
        for (i, n) in self.nodes.iter().enumerate() {
            debug_assert_eq!(snaps[i], n.snap(), "kept snapshot of node {}", n.name());
        }
        snaps
    }

    /// The best-fit index of the snapshot [`Cluster::take_snaps`] gave
    /// (built on first use, then kept current with it), for a pass that
    /// reads that snapshot unchanged. Give it back with
    /// [`Cluster::put_index`].
    pub fn take_index(&mut self, snaps: &[NodeSnap]) -> crate::sched::Index {
        let ix = match self.index.take() {
            Some(ix) => ix,
            None => crate::sched::Index::new(snaps, &self.part_snaps()),
        };
        debug_assert_eq!(ix, crate::sched::Index::new(snaps, &self.part_snaps()));
        ix
    }

    /// The index [`Cluster::take_index`] gave, unchanged, to be kept.
    pub fn put_index(&mut self, ix: crate::sched::Index) {
        self.index = Some(ix);
    }

    /// The snapshot [`Cluster::take_snaps`] gave, unchanged, to be kept
    /// for the next pass.
    pub fn put_snaps(&mut self, snaps: Vec<NodeSnap>) {
        self.give_back(self.kept_gen, snaps, None);
    }

    /// Which kept snapshot [`Cluster::take_snaps`] gave (for
    /// [`Cluster::give_back`]).
    pub fn kept_gen(&self) -> u64 {
        self.kept_gen
    }

    /// The snapshot [`Cluster::take_snaps`] gave (generation `gen`) and its
    /// index, lent unchanged to a pass and given back after it: kept for
    /// the next pass, unless the kept snapshot was dropped or built afresh
    /// meanwhile. (The nodes changed meanwhile are marked stale either
    /// way.)
    pub fn give_back(
        &mut self,
        gen: u64,
        snaps: Vec<NodeSnap>,
        index: Option<crate::sched::Index>,
    ) {
        if gen == self.kept_gen && self.snaps.is_empty() && snaps.len() == self.nodes.len() {
            self.snaps = snaps;
            if index.is_some() {
                self.index = index;
            }
        }
    }

    /// Node `i`'s resources changed: its kept snapshot is built again.
    pub(super) fn touch(&mut self, i: usize) {
        if let Some(s) = self.stale.get_mut(i) {
            *s = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use drover_conf::slurmconf::{Config, NodeConf, PartitionConf};
    use drover_proto::NodeAlloc;

    use super::*;

    fn cluster() -> Cluster {
        let mut cfg = Config::default();
        let mut p = PartitionConf::new("p");
        for name in ["n1", "n2"] {
            let mut n = NodeConf::new(name);
            n.cpus = 4;
            n.real_memory = 4000;
            cfg.nodes.push(n);
            p.nodes.push(name.into());
        }
        cfg.partitions = vec![p];
        let mut c = Cluster::from_config(&cfg, 0);
        for n in &mut c.nodes {
            n.registered = true;
            n.responding = true;
        }
        c
    }

    fn fresh(c: &Cluster) -> Vec<NodeSnap> {
        c.nodes.iter().map(Node::snap).collect()
    }

    /// A snapshot lent to a pass comes back and is kept, the nodes changed
    /// meanwhile built again; one lent before the partitions changed is
    /// not taken back.
    #[test]
    fn a_lent_snapshot_is_kept_unless_dropped_meanwhile() {
        let mut c = cluster();
        let lent = c.take_snaps();
        let gen = c.kept_gen();
        let a = vec![NodeAlloc {
            node: "n2".into(),
            cpus: 2,
            cpu_ids: vec![0, 1],
            mem_mb: 100,
            ..Default::default()
        }];
        c.allocate(7, &a, 1);
        c.give_back(gen, lent.clone(), None);
        assert_eq!(c.snaps, lent, "kept");
        assert_eq!(c.take_snaps(), fresh(&c), "n2 built again");

        let lent = c.take_snaps();
        let gen = c.kept_gen();
        let parts = c.parts.iter().map(|p| p.conf.clone()).collect::<Vec<_>>();
        c.set_partitions(&parts);
        c.give_back(gen, lent, None);
        assert!(c.snaps.is_empty(), "dropped: built afresh at the next pass");
        assert_eq!(c.take_snaps(), fresh(&c));
    }
}
