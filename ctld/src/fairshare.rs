//! Fair-share: decayed usage per association and the fair-share factor
//! from the account tree (Fair Tree, Slurm's default, or classic). Pure;
//! the controller charges running jobs and persists the table.

use std::collections::{BTreeMap, BTreeSet};

use crate::assoc::AssocSet;

/// Usage in billing TRES-seconds per (account, user), decayed to `time`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub time: i64,
    pub map: BTreeMap<(String, String), f64>,
}

impl Usage {
    /// Decay everything from `self.time` to `t` with the half-life (seconds).
    pub fn decay_to(&mut self, t: i64, half_life: i64) {
        if self.time == 0 || t <= self.time {
            self.time = self.time.max(t);
            return;
        }
        if half_life > 0 {
            let k = 0.5f64.powf((t - self.time) as f64 / half_life as f64);
            for v in self.map.values_mut() {
                *v *= k;
            }
            self.map.retain(|_, v| *v > 1e-6);
        }
        self.time = t;
    }

    pub fn charge(&mut self, account: &str, user: &str, amount: f64) {
        *self
            .map
            .entry((account.to_string(), user.to_string()))
            .or_default() += amount;
    }

    /// [`Usage::charge`] for many (account, user, amount) at once: the
    /// amounts of each (account, user) added in the order given, so the
    /// sums are those of charging one by one; each key made once.
    pub fn charge_all(&mut self, charges: Vec<(&str, &str, f64)>) {
        let mut by_key: rustc_hash::FxHashMap<(&str, &str), Vec<f64>> = Default::default();
        for (account, user, amount) in charges {
            by_key.entry((account, user)).or_default().push(amount);
        }
        for ((account, user), amounts) in by_key {
            let sum = self
                .map
                .entry((account.to_string(), user.to_string()))
                .or_default();
            for a in amounts {
                *sum += a;
            }
        }
    }
}

/// Billing of an allocation under `TRESBillingWeights` (default: CPUs).
pub fn billing(cpus: u64, mem_mb: u64, gpus: u64, weights: &[(String, f64)]) -> f64 {
    if weights.is_empty() {
        return cpus as f64;
    }
    let mut b = 0.0;
    for (k, w) in weights {
        b += w * match k.as_str() {
            "cpu" => cpus as f64,
            "mem" => mem_mb as f64 / 1024.0,
            "gres/gpu" => gpus as f64,
            _ => 0.0,
        };
    }
    b
}

/// One row of the share tree (sshare).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub account: String,
    pub user: String,
    pub depth: u32,
    pub raw_shares: u32,
    pub norm_shares: f64,
    pub raw_usage: f64,
    pub effective_usage: f64,
    pub fairshare: f64,
}

struct Node {
    account: String,
    user: String,
    shares: u32,
    children: Vec<usize>,
}

/// The tree: accounts from the association set (or, without accounting,
/// every account seen under `root`, every user with one share).
fn build(set: &AssocSet, seen: &BTreeSet<(String, String)>) -> Vec<Node> {
    let mut nodes = vec![Node {
        account: "root".into(),
        user: String::new(),
        shares: 1,
        children: vec![],
    }];
    let mut acct_idx: BTreeMap<String, usize> = BTreeMap::new();
    acct_idx.insert("root".into(), 0);
    if !set.is_empty() {
        // Accounts in parent order (parents first), loop-safe.
        let mut pending: Vec<&crate::assoc::Assoc> =
            set.assocs.iter().filter(|a| a.user.is_empty()).collect();
        let mut progress = true;
        while progress {
            progress = false;
            pending.retain(|a| {
                if acct_idx.contains_key(&a.account) {
                    return false;
                }
                let parent = if a.parent.is_empty() {
                    "root"
                } else {
                    &a.parent
                };
                if let Some(&p) = acct_idx.get(parent) {
                    let i = nodes.len();
                    nodes.push(Node {
                        account: a.account.clone(),
                        user: String::new(),
                        shares: a.shares,
                        children: vec![],
                    });
                    nodes[p].children.push(i);
                    acct_idx.insert(a.account.clone(), i);
                    progress = true;
                    return false;
                }
                true
            });
        }
        for a in set
            .assocs
            .iter()
            .filter(|a| !a.user.is_empty() && a.partition.is_empty())
        {
            if let Some(&p) = acct_idx.get(&a.account) {
                let i = nodes.len();
                nodes.push(Node {
                    account: a.account.clone(),
                    user: a.user.clone(),
                    shares: a.shares,
                    children: vec![],
                });
                nodes[p].children.push(i);
            }
        }
        return nodes;
    }
    for (account, user) in seen {
        let a = if account.is_empty() { "root" } else { account };
        let p = match acct_idx.get(a) {
            Some(&p) => p,
            None => {
                let i = nodes.len();
                nodes.push(Node {
                    account: a.to_string(),
                    user: String::new(),
                    shares: 1,
                    children: vec![],
                });
                nodes[0].children.push(i);
                acct_idx.insert(a.to_string(), i);
                i
            }
        };
        let i = nodes.len();
        nodes.push(Node {
            account: a.to_string(),
            user: user.clone(),
            shares: 1,
            children: vec![],
        });
        nodes[p].children.push(i);
    }
    nodes
}

/// Compute every association's shares, usage and fair-share factor.
/// `seen` lists (account, user) pairs that have jobs (used without
/// accounting to build the default tree).
pub fn compute(
    set: &AssocSet,
    usage: &Usage,
    seen: &BTreeSet<(String, String)>,
    fair_tree: bool,
) -> Vec<Row> {
    let nodes = build(set, seen);
    let n = nodes.len();
    // Raw usage: users from the table, accounts as sums.
    let mut raw = vec![0.0f64; n];
    fn sum(nodes: &[Node], raw: &mut [f64], usage: &Usage, i: usize) -> f64 {
        let node = &nodes[i];
        let mut v = if node.user.is_empty() {
            0.0
        } else {
            usage
                .map
                .get(&(node.account.clone(), node.user.clone()))
                .copied()
                .unwrap_or(0.0)
        };
        for &c in &node.children {
            v += sum(nodes, raw, usage, c);
        }
        raw[i] = v;
        v
    }
    sum(&nodes, &mut raw, usage, 0);
    let total = raw[0];
    let mut norm_shares = vec![1.0f64; n];
    // Root's children take their own usage (Slurm's classic formula
    // starts below root).
    let mut eff = vec![0.0f64; n];
    let mut depth = vec![0u32; n];
    let mut order = vec![0usize];
    let mut k = 0;
    while k < order.len() {
        let i = order[k];
        k += 1;
        let sib: u64 = nodes[i]
            .children
            .iter()
            .map(|&c| u64::from(nodes[c].shares))
            .sum();
        for &c in &nodes[i].children {
            let s = if sib == 0 {
                0.0
            } else {
                f64::from(nodes[c].shares) / sib as f64
            };
            norm_shares[c] = norm_shares[i] * s;
            let u = if total > 0.0 { raw[c] / total } else { 0.0 };
            // Classic effective usage: own usage plus the parent's, by share.
            eff[c] = if i == 0 { u } else { u + (eff[i] - u) * s };
            depth[c] = depth[i] + 1;
            order.push(c);
        }
    }
    let mut fs = vec![0.0f64; n];
    if fair_tree {
        // Rank users depth-first, siblings by level fair-share S/U (higher first).
        let mut ranked: Vec<usize> = Vec::new();
        fn walk(nodes: &[Node], raw: &[f64], i: usize, out: &mut Vec<usize>) {
            let sib_s: u64 = nodes[i]
                .children
                .iter()
                .map(|&c| u64::from(nodes[c].shares))
                .sum();
            let sib_u: f64 = nodes[i].children.iter().map(|&c| raw[c]).sum();
            let mut kids: Vec<(f64, usize)> = nodes[i]
                .children
                .iter()
                .map(|&c| {
                    let s = if sib_s == 0 {
                        0.0
                    } else {
                        f64::from(nodes[c].shares) / sib_s as f64
                    };
                    let u = if sib_u > 0.0 { raw[c] / sib_u } else { 0.0 };
                    let lf = if u == 0.0 { f64::INFINITY } else { s / u };
                    (lf, c)
                })
                .collect();
            kids.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, c) in kids {
                if nodes[c].user.is_empty() {
                    walk(nodes, raw, c, out);
                } else {
                    out.push(c);
                }
            }
        }
        walk(&nodes, &raw, 0, &mut ranked);
        let users = ranked.len() as f64;
        for (r, &i) in ranked.iter().enumerate() {
            fs[i] = (users - r as f64) / users;
        }
    } else {
        for i in 0..n {
            fs[i] = if norm_shares[i] > 0.0 {
                2f64.powf(-eff[i] / norm_shares[i])
            } else {
                0.0
            };
        }
    }
    // Rows in tree order (depth-first) for display.
    let mut rows = Vec::with_capacity(n);
    fn emit(nodes: &[Node], i: usize, out: &mut Vec<usize>) {
        out.push(i);
        let mut kids = nodes[i].children.clone();
        kids.sort_by(|&a, &b| {
            (nodes[a].user.is_empty(), &nodes[a].account, &nodes[a].user).cmp(&(
                nodes[b].user.is_empty(),
                &nodes[b].account,
                &nodes[b].user,
            ))
        });
        for c in kids {
            emit(nodes, c, out);
        }
    }
    let mut dfs = Vec::new();
    emit(&nodes, 0, &mut dfs);
    for i in dfs {
        rows.push(Row {
            account: nodes[i].account.clone(),
            user: nodes[i].user.clone(),
            depth: depth[i],
            raw_shares: nodes[i].shares,
            norm_shares: norm_shares[i],
            raw_usage: raw[i],
            effective_usage: eff[i],
            fairshare: if nodes[i].user.is_empty() { 0.0 } else { fs[i] },
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assoc::Assoc;

    fn a(account: &str, user: &str, parent: &str, shares: u32) -> Assoc {
        Assoc {
            shares,
            ..Assoc::new(account, user, parent)
        }
    }

    /// Charging many at once leaves every sum bit for bit as charging one
    /// by one in the same order (floating-point sums depend on it).
    #[test]
    fn charging_in_bulk_sums_as_one_by_one() {
        let mut rng = crate::sched::synth::Rng::new(3);
        let names = ["a", "b", "root", "phys"];
        let (mut one, mut bulk) = (Usage::default(), Usage::default());
        one.charge("a", "x", 0.1);
        bulk.charge("a", "x", 0.1);
        for _ in 0..50 {
            let charges: Vec<(&str, &str, f64)> = (0..rng.range(0, 30))
                .map(|_| {
                    let v = rng.next_u64() as f64 / 7.0e15;
                    (rng.pick(&names), rng.pick(&["x", "y", "z"]), v)
                })
                .collect();
            for &(acc, user, v) in &charges {
                one.charge(acc, user, v);
            }
            bulk.charge_all(charges);
            assert_eq!(one.map.len(), bulk.map.len());
            for (k, v) in &one.map {
                assert_eq!(v.to_bits(), bulk.map[k].to_bits(), "{k:?}");
            }
        }
    }

    fn fs_of(rows: &[Row], user: &str) -> f64 {
        rows.iter().find(|r| r.user == user).unwrap().fairshare
    }

    #[test]
    fn decay_halves_per_half_life() {
        let mut u = Usage {
            time: 100,
            ..Default::default()
        };
        u.charge("a", "x", 1000.0);
        u.decay_to(200, 100);
        assert!((u.map[&("a".into(), "x".into())] - 500.0).abs() < 1e-9);
        assert_eq!(u.time, 200);
    }

    #[test]
    fn heavy_users_rank_lower_in_both_algorithms() {
        let mut set = AssocSet::default();
        set.assocs.push(a("root", "", "", 1));
        set.assocs.push(a("phys", "", "root", 1));
        set.assocs.push(a("chem", "", "root", 1));
        set.assocs.push(a("phys", "alice", "phys", 1));
        set.assocs.push(a("phys", "bob", "phys", 1));
        set.assocs.push(a("chem", "carol", "chem", 1));
        let mut u = Usage::default();
        u.charge("phys", "alice", 900.0);
        u.charge("phys", "bob", 100.0);
        let seen = BTreeSet::new();
        for ft in [true, false] {
            let rows = compute(&set, &u, &seen, ft);
            assert!(
                fs_of(&rows, "carol") > fs_of(&rows, "bob"),
                "ft={ft} {rows:?}"
            );
            assert!(fs_of(&rows, "bob") > fs_of(&rows, "alice"), "ft={ft}");
        }
        let rows = compute(&set, &u, &seen, true);
        assert_eq!(fs_of(&rows, "carol"), 1.0);
        let root = &rows[0];
        assert_eq!(root.account, "root");
        assert_eq!(root.raw_usage, 1000.0);
        let alice = rows.iter().find(|r| r.user == "alice").unwrap();
        assert_eq!(alice.norm_shares, 0.25);
        assert_eq!(alice.depth, 2);
    }

    #[test]
    fn without_accounting_users_share_equally() {
        let set = AssocSet::default();
        let mut seen = BTreeSet::new();
        seen.insert(("".to_string(), "u1".to_string()));
        seen.insert(("".to_string(), "u2".to_string()));
        let mut u = Usage::default();
        u.charge("root", "u1", 50.0);
        let rows = compute(&set, &u, &seen, false);
        assert!(fs_of(&rows, "u2") > fs_of(&rows, "u1"));
        assert_eq!(fs_of(&rows, "u2"), 1.0);
    }
}
