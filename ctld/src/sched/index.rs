//! The nodes of each partition in best-fit order (lowest `Weight`, nodes
//! without generic resources before those with them, nodes in use before
//! idle ones, fewest free CPUs, fewest free devices), kept current as a
//! pass starts jobs, so that placing a one-node job now costs a seek and a
//! short walk instead of a sort of every node.

use super::place::Avail;
use super::{NodeSnap, PartSnap, Request};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    /// Per partition, its usable nodes' keys, ascending.
    sets: Vec<Vec<u128>>,
    keys: Vec<Option<u128>>,
    node_parts: Vec<usize>,
    node_parts_at: Vec<u32>,
    class: Vec<u16>,
    /// Per class: the (name, type) of its devices.
    class_devs: Vec<Vec<(String, String)>>,
}

/// The same devices (name and type, in the same order)?
fn same_devs(a: &NodeSnap, b: &NodeSnap) -> bool {
    a.gres.len() == b.gres.len()
        && a.gres
            .iter()
            .zip(&b.gres)
            .all(|(x, y)| x.name == y.name && x.r#type == y.r#type)
}

const CLASS_SHIFT: u32 = 80;
const IDLE_SHIFT: u32 = 79;
const CPU_SHIFT: u32 = 47;

fn pack(weight: u32, class: u16, idle: bool, cpus: u32, gres: u32, i: usize) -> u128 {
    (u128::from(weight) << 96)
        | (u128::from(class) << CLASS_SHIFT)
        | (u128::from(idle) << IDLE_SHIFT)
        | (u128::from(cpus) << CPU_SHIFT)
        | (u128::from(gres.min(255)) << 39)
        | (i as u128 & 0x7F_FFFF_FFFF)
}

impl Index {
    pub fn new(nodes: &[NodeSnap], parts: &[PartSnap]) -> Index {
        let mut class_devs: Vec<Vec<(String, String)>> = vec![Vec::new()];
        let mut class: Vec<u16> = Vec::with_capacity(nodes.len());
        let mut devs: Vec<(&str, &str)> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            // Most nodes have the devices of the node before them.
            if i > 0 && same_devs(&nodes[i - 1], n) {
                class.push(class[i - 1]);
                continue;
            }
            // Borrowed: most nodes share a class already known.
            devs.clear();
            devs.extend(n.gres.iter().map(|d| (d.name.as_str(), d.r#type.as_str())));
            devs.sort_unstable();
            devs.dedup();
            let same = |x: &Vec<(String, String)>| {
                x.len() == devs.len() && x.iter().zip(&devs).all(|(a, b)| a.0 == b.0 && a.1 == b.1)
            };
            let c = match class_devs.iter().position(same) {
                Some(c) => c,
                None => {
                    class_devs.push(
                        devs.iter()
                            .map(|(a, b)| (a.to_string(), b.to_string()))
                            .collect(),
                    );
                    class_devs.len() - 1
                }
            };
            class.push(c.min(usize::from(u16::MAX)) as u16);
        }
        // Each node's partitions, one flat list (`node_parts_at[i]..[i+1]`).
        let mut counts = vec![0u32; nodes.len() + 1];
        for part in parts {
            for &i in &part.nodes {
                if i < nodes.len() {
                    counts[i + 1] += 1;
                }
            }
        }
        for i in 0..nodes.len() {
            counts[i + 1] += counts[i];
        }
        let mut fill = counts.clone();
        let mut node_parts = vec![0usize; counts[nodes.len()] as usize];
        for (p, part) in parts.iter().enumerate() {
            for &i in &part.nodes {
                if i < nodes.len() {
                    node_parts[fill[i] as usize] = p;
                    fill[i] += 1;
                }
            }
        }
        let mut ix = Index {
            sets: Vec::new(),
            keys: vec![None; nodes.len()],
            node_parts,
            node_parts_at: counts,
            class,
            class_devs,
        };
        for (i, n) in nodes.iter().enumerate() {
            ix.keys[i] = ix.key(i, n);
        }
        // Each partition's keys sorted at once.
        ix.sets = parts
            .iter()
            .map(|part| {
                let mut set: Vec<u128> = part
                    .nodes
                    .iter()
                    .filter_map(|&i| ix.keys.get(i).copied().flatten())
                    .collect();
                set.sort_unstable();
                set
            })
            .collect();
        ix
    }

    /// Node `i`'s place in its partitions' sets (None: not usable).
    fn key(&self, i: usize, n: &NodeSnap) -> Option<u128> {
        if !n.usable {
            return None;
        }
        let a = Avail::of(n);
        Some(pack(
            n.weight,
            self.class[i],
            a.jobs == 0,
            a.cpus,
            a.gres_free.count_ones(),
            i,
        ))
    }

    /// Re-file node `i` after its free resources changed.
    pub fn update(&mut self, i: usize, n: &NodeSnap) {
        let (a, b) = (
            self.node_parts_at[i] as usize,
            self.node_parts_at[i + 1] as usize,
        );
        if let Some(old) = self.keys[i].take() {
            for &p in &self.node_parts[a..b] {
                let set = &mut self.sets[p];
                if let Ok(k) = set.binary_search(&old) {
                    set.remove(k);
                }
            }
        }
        let Some(k) = self.key(i, n) else {
            return;
        };
        for &p in &self.node_parts[a..b] {
            let set = &mut self.sets[p];
            if let Err(at) = set.binary_search(&k) {
                set.insert(at, k);
            }
        }
        self.keys[i] = Some(k);
    }

    /// Whether nodes of `class` have every device kind the request names.
    fn class_ok(&self, class: u16, req: &Request) -> bool {
        let devs = &self.class_devs[usize::from(class)];
        let has = |name: &str, ty: Option<&str>| {
            devs.iter()
                .any(|(n, t)| n == name && ty.is_none_or(|ty| ty == t))
        };
        req.gres.iter().all(|g| has(&g.name, g.r#type.as_deref()))
            && req
                .gpus_total
                .as_ref()
                .is_none_or(|g| has("gpu", g.r#type.as_deref()))
            && (req.gpus_per_task == 0 || has("gpu", None))
    }

    /// Offer the nodes of partition `p` with at least `need_cpus` free, in
    /// best-fit order, to `f` until it takes one.
    pub fn scan<T>(
        &self,
        p: usize,
        req: &Request,
        need_cpus: u32,
        mut f: impl FnMut(usize) -> Option<T>,
    ) -> Option<T> {
        let set = self.sets.get(p)?;
        let mut cursor: u128 = 0;
        while let Some(&k) = set.get(set.partition_point(|&k| k < cursor)) {
            let class = ((k >> CLASS_SHIFT) & 0xFFFF) as u16;
            if !self.class_ok(class, req) {
                cursor = ((k >> CLASS_SHIFT) + 1) << CLASS_SHIFT;
                continue;
            }
            let cpus = ((k >> CPU_SHIFT) & 0xFFFF_FFFF) as u32;
            if cpus < need_cpus {
                cursor = ((k >> IDLE_SHIFT) << IDLE_SHIFT) | (u128::from(need_cpus) << CPU_SHIFT);
                continue;
            }
            if let Some(r) = f((k & 0x7F_FFFF_FFFF) as usize) {
                return Some(r);
            }
            cursor = k + 1;
        }
        None
    }
}
