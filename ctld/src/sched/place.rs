//! Placement: choose nodes, CPUs, memory and devices for one request.

use super::{GresReq, NodeSet, NodeSnap, Request};

/// What a node has free over some time window: counts for CPUs and memory,
/// a bit per device (position in `NodeSnap::gres`, first 128) for GRES.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Avail {
    pub cpus: u32,
    pub mem: u64,
    pub gres_free: u128,
    pub jobs: u32,
}

impl Avail {
    /// What the node has free right now.
    pub fn of(n: &NodeSnap) -> Avail {
        let mut gres_free = 0u128;
        for (i, d) in n.gres.iter().enumerate().take(128) {
            gres_free |= u128::from(d.free) << i;
        }
        Avail {
            cpus: n.free_cpus.len() as u32,
            mem: n.free_memory,
            gres_free,
            jobs: n.jobs,
        }
    }

    /// Everything the node has, as if empty.
    pub fn capacity(n: &NodeSnap) -> Avail {
        let k = n.gres.len().min(128);
        Avail {
            cpus: n.cpus,
            mem: n.real_memory,
            gres_free: if k == 128 {
                u128::MAX
            } else {
                (1u128 << k) - 1
            },
            jobs: 0,
        }
    }

    /// The smaller of two views of one node.
    pub fn meet(self, b: Avail) -> Avail {
        Avail {
            cpus: self.cpus.min(b.cpus),
            mem: self.mem.min(b.mem),
            gres_free: self.gres_free & b.gres_free,
            jobs: self.jobs.max(b.jobs),
        }
    }

    fn gres_is_free(&self, n: &NodeSnap, i: usize) -> bool {
        if i < 128 {
            self.gres_free >> i & 1 == 1
        } else {
            n.gres[i].free
        }
    }
}

/// Placement options from `SelectTypeParameters`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaceOpts {
    /// `CR_*_Memory`: memory is a consumable resource.
    pub track_memory: bool,
    /// `CR_Core*`: CPUs are handed out as whole cores.
    pub whole_cores: bool,
    /// Not a setting: set per placement, the jobs that may share one CPU
    /// with this job (OverSubscribe; 1: it needs CPUs nobody else uses).
    /// Above 1, the `avail` given to placement counts the node's shareable
    /// CPUs ([`NodeSnap::shareable`]) and CPU ids are picked among them too.
    pub share: u32,
}

impl Default for PlaceOpts {
    fn default() -> Self {
        PlaceOpts {
            track_memory: true,
            whole_cores: false,
            share: 1,
        }
    }
}

/// Resources a job gets on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alloc {
    /// Index into the node slice.
    pub node: usize,
    pub cpu_ids: Vec<u32>,
    pub mem: u64,
    /// Positions in the node's `gres` list.
    pub gres: Vec<usize>,
    pub tasks: u32,
    /// CPUs allocated (`cpu_ids.len()` when placed now; planned allocations
    /// carry the count only).
    pub ncpus: u32,
}

/// Why a request does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoFit {
    /// Not enough suitable nodes with the resources free.
    Resources,
}

fn gres_matches(d: &super::GresDev, r: &GresReq) -> bool {
    d.name == r.name && r.r#type.as_deref().is_none_or(|t| t == d.r#type)
}

/// Free devices on `n` matching `r`, in index order.
fn free_gres(n: &NodeSnap, a: &Avail, r: &GresReq) -> Vec<usize> {
    n.gres
        .iter()
        .enumerate()
        .filter(|(i, d)| a.gres_is_free(n, *i) && gres_matches(d, r))
        .map(|(i, _)| i)
        .collect()
}

fn count_free_gres(n: &NodeSnap, a: &Avail, r: &GresReq) -> u32 {
    n.gres
        .iter()
        .enumerate()
        .filter(|(i, d)| a.gres_is_free(n, *i) && gres_matches(d, r))
        .count() as u32
}

/// CPUs a node hands out for `want` (whole cores under `CR_Core`).
fn round_cpus(n: &NodeSnap, want: u32, opts: &PlaceOpts) -> u32 {
    let t = n.threads.max(1);
    if opts.whole_cores && t > 1 {
        want.div_ceil(t) * t
    } else {
        want
    }
}

/// What one node can give a job: tasks it can host (0 = none) and the fixed part.
struct NodeFit {
    max_tasks: u32,
}

fn node_fit(req: &Request, n: &NodeSnap, a: &Avail, opts: &PlaceOpts) -> NodeFit {
    let none = NodeFit { max_tasks: 0 };
    if !n.usable {
        return none;
    }
    let free_cpus = if opts.whole_cores && n.threads > 1 {
        a.cpus / n.threads * n.threads
    } else {
        a.cpus
    };
    let free_memory = if opts.track_memory {
        a.mem
    } else {
        n.real_memory
    };
    if let Some(c) = &req.constraint {
        if !c.matches(&n.features) {
            return none;
        }
    }
    if req.exclusive && (a.jobs > 0 || free_cpus < n.cpus) {
        return none;
    }
    // Fixed per-node generic resources.
    let mut gpus_fixed = 0u32;
    for g in &req.gres {
        if count_free_gres(n, a, g) < g.count {
            return none;
        }
        if g.name == "gpu" {
            gpus_fixed += g.count;
        }
    }
    let cpt = req.cpus_per_task.max(1);
    let cpt_alloc = round_cpus(n, cpt, opts).max(1);
    let mut max_tasks = free_cpus / cpt_alloc;
    // Per-task GPUs.
    if let Some(per_task) = std::num::NonZeroU32::new(req.gpus_per_task) {
        let g = GresReq {
            name: "gpu".into(),
            r#type: req.gpus_total.as_ref().and_then(|t| t.r#type.clone()),
            count: 0,
        };
        max_tasks = max_tasks.min(count_free_gres(n, a, &g) / per_task);
    }
    // Memory.
    let mut mem_fixed = req.mem_per_node;
    if req.mem_per_gpu > 0 {
        mem_fixed += req.mem_per_gpu * u64::from(gpus_fixed);
    }
    if mem_fixed > free_memory {
        return none;
    }
    if req.mem_per_cpu > 0 {
        let per_task = req.mem_per_cpu * u64::from(cpt);
        let by_mem = (free_memory - mem_fixed) / per_task.max(1);
        max_tasks = max_tasks.min(by_mem.min(u64::from(u32::MAX)) as u32);
    }
    // CPUs demanded by GPUs or --mincpus must be free too.
    let min_cpus = req
        .min_cpus_per_node
        .max(gpus_fixed * req.cpus_per_gpu)
        .max(cpt);
    if free_cpus < round_cpus(n, min_cpus, opts) {
        return none;
    }
    if req.ntasks_per_node > 0 {
        if max_tasks < req.ntasks_per_node {
            return none;
        }
        max_tasks = req.ntasks_per_node;
    }
    NodeFit { max_tasks }
}

/// Tasks a node offering `a` can host for the request (0: none).
pub fn node_tasks(req: &Request, n: &NodeSnap, a: &Avail, opts: &PlaceOpts) -> u32 {
    node_fit(req, n, a, opts).max_tasks
}

/// Tasks a request must put on its node when it runs on one node only
/// (None: it needs, or may use, several nodes).
pub fn single_node_tasks(req: &Request) -> Option<u32> {
    if req.min_nodes.max(1) != 1 || req.max_nodes > 1 || req.required.len() > 1 {
        return None;
    }
    Some(if req.ntasks_per_node > 0 {
        req.ntasks.max(req.ntasks_per_node)
    } else {
        req.ntasks.max(1)
    })
}

/// Whether a one-node request fits a node offering `a` (its `want` tasks
/// and its whole `--gpus` count).
pub fn fits_single(req: &Request, n: &NodeSnap, a: &Avail, opts: &PlaceOpts, want: u32) -> bool {
    if node_fit(req, n, a, opts).max_tasks < want {
        return false;
    }
    match &req.gpus_total {
        Some(g) => {
            let fixed: u32 = req
                .gres
                .iter()
                .filter(|x| x.name == "gpu")
                .map(|x| x.count)
                .sum();
            count_free_gres(n, a, g) >= g.count + fixed + want * req.gpus_per_task
        }
        None => true,
    }
}

/// Place a request on the candidate nodes (indices into `nodes`) with what
/// they have free now; see [`place_with`].
pub fn place<N: NodeSet + ?Sized>(
    req: &Request,
    candidates: &[usize],
    nodes: &N,
) -> Result<Vec<Alloc>, NoFit> {
    let now = |i: usize| Avail::of(&nodes[i]);
    place_with(
        req,
        candidates,
        nodes,
        &PlaceOpts::default(),
        true,
        &now,
        &now,
    )
}

/// Place a request on the candidate nodes, each offering `avail(i)`: best
/// fit, lowest `Weight` first, then nodes already in use (to keep idle
/// nodes whole), then the fewest free CPUs, then the fewest free devices,
/// as `key(i)` shows them (cheap: what is free now). `avail` is asked only
/// for the nodes looked at. All-or-nothing. With `pick_ids`, CPU ids come
/// from the node's free list (placement now; `key` must then be no less
/// than `avail`); without, only counts are decided (a planned start).
#[allow(clippy::too_many_arguments)]
pub fn place_with<N: NodeSet + ?Sized>(
    req: &Request,
    candidates: &[usize],
    nodes: &N,
    opts: &PlaceOpts,
    pick_ids: bool,
    key: &dyn Fn(usize) -> Avail,
    avail: &dyn Fn(usize) -> Avail,
) -> Result<Vec<Alloc>, NoFit> {
    place_bounded(req, candidates, nodes, opts, pick_ids, key, avail, None)
}

/// The most tasks `cpus` free CPUs host for `req` (its CPUs per task, its
/// `--ntasks-per-node`): a bound on what a node can take.
pub(super) fn tasks_by_cpus(req: &Request, cpus: u32) -> u32 {
    let t = cpus / req.cpus_per_task.max(1);
    if req.ntasks_per_node > 0 {
        t.min(req.ntasks_per_node)
    } else {
        t
    }
}

/// Whether nodes hosting no more than `caps` tasks each could hold the
/// request together: enough nodes host a task, and the roomiest
/// `max_nodes` host all tasks (necessary for [`place_with`] to succeed).
/// Answers yes as soon as the nodes seen so far suffice; keeps the
/// roomiest in a small buffer (no allocation) for up to
/// [`FEW_NODES`] nodes a job.
pub(super) fn could_fit(req: &Request, caps: impl Iterator<Item = u32>) -> bool {
    let min_nodes = req.min_nodes.max(1) as usize;
    let max_nodes = (req.max_nodes.max(req.min_nodes).max(1) as usize).max(min_nodes);
    let want = u64::from(want_tasks(req));
    let caps = caps.filter(|&t| t > 0);
    if max_nodes > FEW_NODES {
        let mut caps: Vec<u32> = caps.collect();
        if caps.len() < min_nodes {
            return false;
        }
        if caps.len() > max_nodes {
            caps.select_nth_unstable_by(max_nodes - 1, |a, b| b.cmp(a));
            caps.truncate(max_nodes);
        }
        return caps.iter().map(|&t| u64::from(t)).sum::<u64>() >= want;
    }
    // The roomiest `max_nodes` so far, their sum, and where the least is.
    let mut top = [0u32; FEW_NODES];
    let (mut len, mut sum, mut least, mut hosts) = (0usize, 0u64, 0usize, 0usize);
    for t in caps {
        hosts += 1;
        if len < max_nodes {
            top[len] = t;
            len += 1;
        } else if t > top[least] {
            sum -= u64::from(top[least]);
            top[least] = t;
        } else {
            continue;
        }
        sum += u64::from(t);
        if hosts >= min_nodes && sum >= want {
            return true;
        }
        if len == max_nodes {
            least = (0..len).min_by_key(|&k| top[k]).unwrap_or(0);
        }
    }
    false
}

/// Jobs on up to this many nodes are checked by [`could_fit`] without
/// allocating.
const FEW_NODES: usize = 16;

/// Tasks a request puts on its nodes in all.
pub(super) fn want_tasks(req: &Request) -> u32 {
    let min_nodes = req.min_nodes.max(1);
    if req.ntasks_per_node > 0 {
        req.ntasks.max(req.ntasks_per_node * min_nodes)
    } else {
        req.ntasks.max(min_nodes)
    }
}

/// [`place_with`], with `bound(i)`, when given, no fewer than the tasks
/// node `i` can host with `avail(i)` (cheaper to ask: e.g. by its free CPUs
/// at the start alone): when the best-fit nodes are too small together, the
/// roomiest are then found by looking at `avail` only for the nodes whose
/// bound could still make the cut. Same result as without it.
#[allow(clippy::too_many_arguments)]
pub(super) fn place_bounded<N: NodeSet + ?Sized>(
    req: &Request,
    candidates: &[usize],
    nodes: &N,
    opts: &PlaceOpts,
    pick_ids: bool,
    key: &dyn Fn(usize) -> Avail,
    avail: &dyn Fn(usize) -> Avail,
    bound: Option<&dyn Fn(usize) -> u32>,
) -> Result<Vec<Alloc>, NoFit> {
    let min_nodes = req.min_nodes.max(1) as usize;
    let max_nodes = (req.max_nodes.max(req.min_nodes).max(1) as usize).max(min_nodes);
    if req.required.iter().any(|&r| !candidates.contains(&r)) {
        return Err(NoFit::Resources);
    }
    // One packed integer per node (unique: it ends with the index), in a
    // heap so that only the nodes looked at are put in order.
    let packed: Vec<u128> = candidates
        .iter()
        .copied()
        .filter(|i| *i < nodes.count() && !req.excluded.contains(i))
        .map(|i| {
            let a = key(i);
            let not_required = u128::from(!req.required.contains(&i));
            (not_required << 120)
                | (u128::from(nodes[i].weight) << 88)
                | (u128::from(a.jobs == 0) << 87)
                | (u128::from(a.cpus) << 55)
                | (u128::from(a.gres_free.count_ones()) << 32)
                | i as u128
        })
        .collect();
    let idx = |k: u128| (k & 0xFFFF_FFFF) as usize;
    let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<u128>> =
        packed.iter().copied().map(std::cmp::Reverse).collect();
    // Placing now, what is free now bounds what the window offers: a node
    // that cannot take the job now is not worth a look at its profile.
    let bounded = pick_ids;
    let single = single_node_tasks(req);

    // Choose nodes and how many tasks each can host.
    let mut chosen: Vec<(usize, u32, Avail)> = Vec::new();
    let want_tasks = want_tasks(req);
    let mut cap_sum: u64 = 0;
    while let Some(std::cmp::Reverse(k)) = heap.pop() {
        let i = idx(k);
        let n = &nodes[i];
        if let (Some(want), true) = (single, bounded) {
            if !fits_single(req, n, &key(i), opts, want) {
                if req.required.contains(&i) {
                    return Err(NoFit::Resources);
                }
                continue;
            }
        }
        let a = avail(i);
        if let Some(want) = single {
            if !fits_single(req, n, &a, opts, want) {
                if req.required.contains(&i) {
                    return Err(NoFit::Resources);
                }
                continue;
            }
        }
        let fit = node_fit(req, n, &a, opts);
        if fit.max_tasks == 0 {
            if req.required.contains(&i) {
                return Err(NoFit::Resources);
            }
            continue;
        }
        chosen.push((i, fit.max_tasks, a));
        cap_sum += u64::from(fit.max_tasks);
        let enough_nodes = chosen.len() >= min_nodes && chosen.len() >= req.required.len();
        if enough_nodes && cap_sum >= u64::from(want_tasks) {
            break;
        }
        if chosen.len() >= max_nodes {
            break;
        }
    }
    if chosen.len() >= max_nodes && cap_sum < u64::from(want_tasks) {
        // The best-fit nodes are too small together: take the roomiest
        // (required nodes first), keeping best-fit order among equals.
        chosen = roomiest(req, &packed, nodes, opts, max_nodes, avail, bound);
        cap_sum = chosen.iter().map(|x| u64::from(x.1)).sum();
    }
    if chosen.len() < min_nodes || cap_sum < u64::from(want_tasks) {
        return Err(NoFit::Resources);
    }
    if req.ntasks_per_node > 0 {
        // Exactly ntasks_per_node on each chosen node; need enough nodes.
        let need = want_tasks.div_ceil(req.ntasks_per_node) as usize;
        if chosen.len() < need {
            return Err(NoFit::Resources);
        }
        chosen.truncate(need.max(min_nodes));
    }

    // Distribute tasks: one per node, then fill in order.
    let mut tasks: Vec<u32> = vec![1; chosen.len()];
    if req.ntasks_per_node > 0 {
        tasks = vec![req.ntasks_per_node; chosen.len()];
    } else {
        let mut left = want_tasks.saturating_sub(chosen.len() as u32);
        for (k, (_, cap, _)) in chosen.iter().enumerate() {
            let add = left.min(cap - 1);
            tasks[k] += add;
            left -= add;
        }
    }

    // GPUs spread over the nodes for --gpus=N.
    let mut total_gpus_left = req.gpus_total.as_ref().map_or(0, |g| g.count);
    let cpt = req.cpus_per_task.max(1);
    let mut allocs = Vec::with_capacity(chosen.len());
    for (k, &(i, _, av)) in chosen.iter().enumerate() {
        let n = &nodes[i];
        let t = tasks[k];
        let mut gres: Vec<usize> = Vec::new();
        let mut gpus = 0u32;
        for g in &req.gres {
            let free = free_gres(n, &av, g);
            let take: Vec<usize> = free
                .into_iter()
                .filter(|p| !gres.contains(p))
                .take(g.count as usize)
                .collect();
            if (take.len() as u32) < g.count {
                return Err(NoFit::Resources);
            }
            if g.name == "gpu" {
                gpus += g.count;
            }
            gres.extend(take);
        }
        let mut extra_gpus = t * req.gpus_per_task;
        if let Some(g) = &req.gpus_total {
            let free = free_gres(n, &av, g)
                .into_iter()
                .filter(|p| !gres.contains(p))
                .count() as u32;
            let nodes_after = (chosen.len() - k - 1) as u32;
            let take = if nodes_after == 0 {
                total_gpus_left
            } else {
                total_gpus_left.min(free)
            };
            extra_gpus += take;
            total_gpus_left -= take.min(total_gpus_left);
        }
        if extra_gpus > 0 {
            let g = GresReq {
                name: "gpu".into(),
                r#type: req.gpus_total.as_ref().and_then(|t| t.r#type.clone()),
                count: extra_gpus,
            };
            let take: Vec<usize> = free_gres(n, &av, &g)
                .into_iter()
                .filter(|p| !gres.contains(p))
                .take(extra_gpus as usize)
                .collect();
            if (take.len() as u32) < extra_gpus {
                return Err(NoFit::Resources);
            }
            gpus += extra_gpus;
            gres.extend(take);
        }
        let (cpu_count, mem) = if req.exclusive {
            let gres_all: Vec<usize> = (0..n.gres.len()).collect();
            gres = gres_all;
            (n.cpus, n.real_memory)
        } else {
            let c = (t * cpt)
                .max(req.min_cpus_per_node)
                .max(gpus * req.cpus_per_gpu);
            let c = round_cpus(n, c, opts);
            let mem = req.mem_per_node
                + req.mem_per_cpu * u64::from(c)
                + req.mem_per_gpu * u64::from(gpus);
            (c, mem)
        };
        let free_mem = if opts.track_memory {
            av.mem
        } else {
            n.real_memory
        };
        if cpu_count > av.cpus || mem > free_mem {
            return Err(NoFit::Resources);
        }
        let cpu_ids = if pick_ids {
            pick_cpus(n, cpu_count, opts).ok_or(NoFit::Resources)?
        } else {
            Vec::new()
        };
        allocs.push(Alloc {
            node: i,
            cpu_ids,
            mem,
            gres,
            tasks: t,
            ncpus: cpu_count,
        });
    }
    if total_gpus_left > 0 {
        return Err(NoFit::Resources);
    }
    Ok(allocs)
}

/// The `max_nodes` nodes hosting the most tasks (required nodes first),
/// in best-fit order (the packed keys) among equals.
fn roomiest<N: NodeSet + ?Sized>(
    req: &Request,
    packed: &[u128],
    nodes: &N,
    opts: &PlaceOpts,
    max_nodes: usize,
    avail: &dyn Fn(usize) -> Avail,
    bound: Option<&dyn Fn(usize) -> u32>,
) -> Vec<(usize, u32, Avail)> {
    use std::cmp::Reverse;
    let idx = |k: u128| (k & 0xFFFF_FFFF) as usize;
    let (Some(bound), true) = (bound, req.required.is_empty()) else {
        let mut all: Vec<(bool, Reverse<u32>, u128, Avail)> = packed
            .iter()
            .filter_map(|&k| {
                let i = idx(k);
                let a = avail(i);
                let t = node_fit(req, &nodes[i], &a, opts).max_tasks;
                (t > 0).then_some((!req.required.contains(&i), Reverse(t), k, a))
            })
            .collect();
        all.sort_unstable_by_key(|x| (x.0, x.1, x.2));
        all.truncate(max_nodes);
        return all
            .into_iter()
            .map(|(_, t, k, a)| (idx(k), t.0, a))
            .collect();
    };
    // Look at nodes by falling bound; stop once the last of the best so
    // far beats the bound of every node not looked at.
    let mut heap: std::collections::BinaryHeap<(u32, Reverse<u128>)> = packed
        .iter()
        .filter_map(|&k| {
            let i = idx(k);
            let b = bound(i);
            (b > 0).then_some((b, Reverse(k)))
        })
        .collect();
    // Best first: (Reverse(tasks), key) ascending.
    let mut best: Vec<(Reverse<u32>, u128, Avail)> = Vec::new();
    while let Some((b, Reverse(k))) = heap.pop() {
        if best.len() >= max_nodes {
            if let Some(last) = best.last() {
                if (last.0, last.1) < (Reverse(b), k) {
                    break;
                }
            }
        }
        let i = idx(k);
        let a = avail(i);
        let t = node_fit(req, &nodes[i], &a, opts).max_tasks;
        if t == 0 {
            continue;
        }
        let e = (Reverse(t), k, a);
        let at = best.partition_point(|x| (x.0, x.1) < (e.0, e.1));
        best.insert(at, e);
        best.truncate(max_nodes);
    }
    best.into_iter().map(|(t, k, a)| (idx(k), t.0, a)).collect()
}

/// Choose `count` free CPU ids on a node: whole cores first under
/// `CR_Core` (all threads of a core free), lowest ids first. A job that
/// may share (`opts.share` > 1) takes the joinable shared CPUs first, those
/// expected busy longest first (what placement was offered assumes so:
/// see `Pass::window_now_share`), then free ones.
fn pick_cpus(n: &NodeSnap, count: u32, opts: &PlaceOpts) -> Option<Vec<u32>> {
    if opts.share > 1 && !n.shared.is_empty() {
        let mut joinable: Vec<(i64, u32)> = n
            .shared
            .iter()
            .filter(|x| x.joinable(opts.share))
            .map(|x| (x.until, x.id))
            .collect();
        joinable.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let t = n.threads.max(1);
        if !opts.whole_cores || t == 1 {
            let mut out: Vec<u32> = joinable
                .iter()
                .map(|x| x.1)
                .chain(n.free_cpus.iter().copied())
                .take(count as usize)
                .collect();
            if out.len() != count as usize {
                return None;
            }
            out.sort_unstable();
            return Some(out);
        }
        let mut all: Vec<u32> = joinable.iter().map(|x| x.1).collect();
        all.extend_from_slice(&n.free_cpus);
        all.sort_unstable();
        return pick_from(&all, count, t, true);
    }
    pick_from(&n.free_cpus, count, n.threads.max(1), opts.whole_cores)
}

/// Choose `count` ids from `free` (ascending): whole cores of `t` threads
/// when `whole_cores`, lowest ids first.
fn pick_from(free: &[u32], count: u32, t: u32, whole_cores: bool) -> Option<Vec<u32>> {
    let count = count as usize;
    if count > free.len() {
        return None;
    }
    if !whole_cores || t == 1 {
        return Some(free[..count].to_vec());
    }
    let mut out = Vec::with_capacity(count);
    let mut k = 0;
    while k < free.len() && out.len() < count {
        let c = free[k];
        let core = c / t;
        let whole = (0..t).all(|x| free.binary_search(&(core * t + x)).is_ok());
        if c.is_multiple_of(t) && whole {
            out.extend((0..t).map(|x| core * t + x));
            k += t as usize;
        } else {
            k += 1;
        }
    }
    out.truncate(count);
    (out.len() == count).then_some(out)
}
