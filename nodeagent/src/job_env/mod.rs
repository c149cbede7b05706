//! The batch script's environment: the submitter's `spec.environment` plus
//! the `SLURM_*` variables Slurm's slurmd/slurmstepd set, computed purely
//! from the [`LaunchRequest`] (and a few facts the caller passes in).

use std::collections::HashMap;

use drover_proto::{JobAllocation, LaunchRequest, NodeAlloc, INFINITE};

use crate::allocation;

/// Facts about the running job that are not in the launch request.
#[derive(Debug, Clone, Default)]
pub struct EnvContext<'a> {
    /// Pid of the batch script process (`SLURM_TASK_PID`).
    pub task_pid: u32,
    /// The agent's config file (`SLURM_CONF`, `DROVER_CONF`).
    pub conf_path: &'a str,
    /// The user's home directory and shell (from the password database);
    /// only used when the submitted environment lacks `HOME` / `SHELL`.
    pub home: Option<&'a str>,
    pub shell: Option<&'a str>,
    /// Now (unix seconds), used when the request carries no start time.
    pub now: i64,
    /// The device cgroup hides the other GPUs, so CUDA renumbers the
    /// visible ones from 0: `CUDA_VISIBLE_DEVICES` then lists 0..n-1 (as
    /// Slurm does with ConstrainDevices=yes); `SLURM_JOB_GPUS` keeps the
    /// node's indices.
    pub local_gpu_index: bool,
    /// An srun step whose own device group hides the job's other GPUs:
    /// CUDA numbers the step's GPUs from 0.
    pub step_gpus_only: bool,
}

/// Ordered environment with unique keys; a later `set` replaces the value.
#[derive(Debug, Default)]
struct Env {
    vars: Vec<(String, String)>,
    index: HashMap<String, usize>,
}

impl Env {
    fn set(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.index.get(key) {
            Some(&i) => self.vars[i].1 = value,
            None => {
                self.index.insert(key.to_string(), self.vars.len());
                self.vars.push((key.to_string(), value));
            }
        }
    }

    fn set_default(&mut self, key: &str, value: impl Into<String>) {
        if !self.index.contains_key(key) {
            self.set(key, value);
        }
    }

    fn set_nonempty(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.set(key, value);
        }
    }
}

fn first_nonempty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

/// Slurm's run-length form of a per-node list: `[4,4,2]` → `4(x2),2`.
pub fn run_length(values: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let mut n = 1;
        while i + n < values.len() && values[i + n] == v {
            n += 1;
        }
        if n > 1 {
            out.push(format!("{v}(x{n})"));
        } else {
            out.push(v.to_string());
        }
        i += n;
    }
    out.join(",")
}

/// Slurm's block task layout (`_task_layout_block`): one task per node
/// first, then fill each node up to `caps[i]` tasks, then spread the rest
/// round-robin.
pub fn block_layout(num_tasks: u32, caps: &[u32]) -> Vec<u32> {
    let mut tasks = vec![0u32; caps.len()];
    if caps.is_empty() {
        return tasks;
    }
    let mut left = num_tasks;
    for (t, &cap) in tasks.iter_mut().zip(caps) {
        if left == 0 {
            break;
        }
        if *t < cap {
            *t += 1;
            left -= 1;
        }
    }
    for (t, &cap) in tasks.iter_mut().zip(caps) {
        let take = cap.saturating_sub(*t).min(left);
        *t += take;
        left -= take;
    }
    // Spread what remains (overcommit); bounded so a huge count cannot spin.
    if left > 0 {
        let n = caps.len() as u32;
        let each = left / n;
        let extra = left % n;
        for (i, t) in tasks.iter_mut().enumerate() {
            *t = t.saturating_add(each + u32::from((i as u32) < extra));
        }
    }
    tasks
}

/// Summary of an array expression (`--array`), as Slurm exports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArraySummary {
    pub min: u32,
    pub max: u32,
    pub count: u32,
    pub step: u32,
}

/// Summarise `0-15:4%2`, `1,3,5`, `7` ... Returns None when the text is not
/// an array expression. The step is the common difference when the ids form
/// a regular progression, otherwise 1.
pub fn array_summary(spec: &str) -> Option<ArraySummary> {
    let body = spec.split('%').next().unwrap_or("").trim();
    if body.is_empty() {
        return None;
    }
    // Ranges as (first, last, step); expanded lazily, bounded in size.
    let mut ranges: Vec<(u32, u32, u32)> = Vec::new();
    for item in body.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (range, step) = match item.split_once(':') {
            Some((r, s)) => (r, s.trim().parse::<u32>().ok().filter(|&s| s > 0)?),
            None => (item, 1),
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let v = range.trim().parse::<u32>().ok()?;
                (v, v)
            }
        };
        if b < a {
            return None;
        }
        ranges.push((a, b, step));
    }
    if ranges.is_empty() {
        return None;
    }
    if let [(a, b, s)] = ranges[..] {
        // One range: arithmetic, whatever its size.
        let count = u64::from((b - a) / s) + 1;
        let max = u64::from(a) + (count - 1) * u64::from(s);
        return Some(ArraySummary {
            min: a,
            max: u32::try_from(max).ok()?,
            count: u32::try_from(count).ok()?,
            step: if count > 1 { s } else { 1 },
        });
    }
    let nominal: u64 = ranges
        .iter()
        .map(|&(a, b, s)| u64::from((b - a) / s) + 1)
        .sum();
    if nominal > 1_000_000 {
        return None; // far beyond any MaxArraySize
    }
    let mut ids: Vec<u32> = Vec::with_capacity(nominal as usize);
    for (a, b, s) in ranges {
        let mut v = a;
        loop {
            ids.push(v);
            match v.checked_add(s) {
                Some(n) if n <= b => v = n,
                _ => break,
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    let min = *ids.first()?;
    let max = *ids.last()?;
    let count = ids.len() as u32;
    let step = if ids.len() < 2 {
        1
    } else {
        let d = ids[1] - ids[0];
        if ids.windows(2).all(|w| w[1] - w[0] == d) {
            d
        } else {
            1
        }
    };
    Some(ArraySummary {
        min,
        max,
        count,
        step,
    })
}

/// Names of the allocated nodes, in allocation order.
pub fn alloc_node_names(req: &LaunchRequest) -> Vec<String> {
    let alloc = allocation::of(req);
    if !alloc.nodes.is_empty() {
        return alloc.nodes.iter().map(|a| a.node.clone()).collect();
    }
    if let Some(info) = req.info.as_ref() {
        if !info.nodes.is_empty() {
            if let Ok(names) = drover_conf::hostlist::expand(&info.nodes) {
                if !names.is_empty() {
                    return names;
                }
            }
        }
    }
    if req.node.is_empty() {
        Vec::new()
    } else {
        vec![req.node.clone()]
    }
}

/// CPUs allocated on each node (allocation order).
fn cpus_per_node(req: &LaunchRequest, nnodes: usize) -> Vec<u32> {
    let alloc = allocation::of(req);
    if !alloc.nodes.is_empty() {
        return alloc.nodes.iter().map(|a| a.cpus.max(1)).collect();
    }
    let n = nnodes.max(1) as u32;
    let num_cpus = req.info.as_ref().map_or(0, |i| i.num_cpus);
    vec![(num_cpus / n).max(1); nnodes.max(1)]
}

/// The allocation on the node running the batch script.
fn this_node_alloc<'a>(alloc: &'a JobAllocation, node: &str) -> Option<&'a NodeAlloc> {
    allocation::on_node(alloc, node).or_else(|| alloc.nodes.first())
}

/// Tasks per node as Slurm's batch environment computes them.
pub fn tasks_per_node(req: &LaunchRequest) -> Vec<u32> {
    let alloc = allocation::of(req);
    let nnodes = alloc_node_names(req).len().max(1);
    if alloc.nodes.len() == nnodes && alloc.nodes.iter().all(|a| a.tasks > 0) {
        return alloc.nodes.iter().map(|a| a.tasks).collect();
    }
    let cpt = alloc.cpus_per_task.max(1);
    let per_node_max = if alloc.ntasks_per_node > 0 {
        alloc.ntasks_per_node
    } else {
        u32::MAX
    };
    let caps: Vec<u32> = cpus_per_node(req, nnodes)
        .iter()
        .map(|c| (c / cpt).clamp(1, per_node_max.max(1)))
        .collect();
    let mut num = explicit_ntasks(req);
    if num == 0 {
        num = caps.iter().fold(0u32, |a, &c| a.saturating_add(c));
    }
    block_layout(num, &caps)
}

/// Number of tasks the user asked for (`-n`, or `--ntasks-per-node` x nodes); 0 = none.
fn explicit_ntasks(req: &LaunchRequest) -> u32 {
    let alloc = allocation::of(req);
    if alloc.ntasks > 0 {
        return alloc.ntasks;
    }
    if alloc.ntasks_per_node > 0 {
        let nnodes = alloc_node_names(req).len().max(1) as u32;
        return alloc.ntasks_per_node.saturating_mul(nnodes);
    }
    0
}

fn gpus_text(count: u32, ty: &str) -> String {
    if ty.is_empty() {
        count.to_string()
    } else {
        format!("{ty}:{count}")
    }
}

/// Output/error/input file defaults and the values patterns may refer to.
pub fn default_stdout_pattern(req: &LaunchRequest) -> &'static str {
    if req.info.as_ref().is_some_and(|i| i.array_job_id != 0) {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    }
}

/// The full environment of the batch script, `KEY`/`VALUE` pairs with unique keys.
pub fn job_environment(req: &LaunchRequest, ctx: &EnvContext<'_>) -> Vec<(String, String)> {
    let spec = req.spec.clone().unwrap_or_default();
    let info = req.info.clone().unwrap_or_default();
    let mut env = Env::default();

    for entry in &spec.environment {
        if let Some((k, v)) = entry.split_once('=') {
            if !k.is_empty() && !k.contains('\0') {
                env.set(k, v);
            }
        }
    }

    let job_id = req.job_id.to_string();
    let names = alloc_node_names(req);
    let nnodes = names.len().max(1);
    let nodelist = if names.is_empty() {
        info.nodes.clone()
    } else {
        drover_conf::hostlist::compress(&names)
    };
    let cpus = cpus_per_node(req, nnodes);
    let alloc = allocation::of(req);
    let this = this_node_alloc(&alloc, &req.node);
    let cpus_on_node = this
        .map(|a| a.cpus.max(1))
        .unwrap_or_else(|| cpus.first().copied().unwrap_or(1));

    env.set("SLURM_CLUSTER_NAME", req.cluster_name.as_str());
    env.set("SLURM_JOB_ID", job_id.as_str());
    env.set("SLURM_JOBID", job_id.as_str());
    env.set("SLURM_JOB_NAME", first_nonempty(&spec.name, &info.name));
    env.set("SLURM_JOB_NODELIST", nodelist.as_str());
    env.set("SLURM_NODELIST", nodelist.as_str());
    env.set("SLURM_JOB_NUM_NODES", nnodes.to_string());
    env.set("SLURM_NNODES", nnodes.to_string());
    env.set("SLURM_JOB_CPUS_PER_NODE", run_length(&cpus));
    env.set("SLURM_CPUS_ON_NODE", cpus_on_node.to_string());
    env.set(
        "SLURM_JOB_PARTITION",
        first_nonempty(&info.partition, &spec.partition),
    );

    let ntasks = explicit_ntasks(req);
    if ntasks > 0 {
        env.set("SLURM_NTASKS", ntasks.to_string());
        env.set("SLURM_NPROCS", ntasks.to_string());
    }
    if spec.ntasks_per_node > 0 {
        env.set("SLURM_NTASKS_PER_NODE", spec.ntasks_per_node.to_string());
    }
    env.set("SLURM_TASKS_PER_NODE", run_length(&tasks_per_node(req)));
    if spec.cpus_per_task > 0 {
        env.set(
            "SLURM_CPUS_PER_TASK",
            alloc.cpus_per_task.max(1).to_string(),
        );
    }

    // Memory: the resolved request's terms (partition defaults applied).
    if let Some((var, mb)) = allocation::mem_var(&alloc) {
        env.set(var, mb.to_string());
    }
    if alloc.mem_per_gpu_mb > 0 {
        env.set("SLURM_MEM_PER_GPU", alloc.mem_per_gpu_mb.to_string());
    }

    // GPUs.
    if spec.gpus > 0 {
        env.set("SLURM_GPUS", gpus_text(spec.gpus, &spec.gpus_type));
    }
    if spec.gpus_per_node > 0 {
        env.set(
            "SLURM_GPUS_PER_NODE",
            gpus_text(spec.gpus_per_node, &spec.gpus_type),
        );
    }
    if spec.gpus_per_task > 0 {
        env.set(
            "SLURM_GPUS_PER_TASK",
            gpus_text(spec.gpus_per_task, &spec.gpus_type),
        );
    }
    if spec.cpus_per_gpu > 0 {
        env.set("SLURM_CPUS_PER_GPU", spec.cpus_per_gpu.to_string());
    }
    if let Some(a) = this {
        let mut indices: Vec<u32> = Vec::new();
        let mut counted: u64 = 0;
        for g in a.gres.iter().filter(|g| g.name == "gpu") {
            indices.extend(g.indices.iter().copied());
            counted = counted.saturating_add(if g.indices.is_empty() {
                g.count
            } else {
                g.indices.len() as u64
            });
        }
        indices.sort_unstable();
        indices.dedup();
        if !indices.is_empty() {
            let list: Vec<String> = indices.iter().map(u32::to_string).collect();
            let list = list.join(",");
            let visible = if ctx.local_gpu_index {
                (0..indices.len())
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            } else {
                list.clone()
            };
            env.set("SLURM_GPUS_ON_NODE", indices.len().to_string());
            env.set("SLURM_JOB_GPUS", list.as_str());
            env.set("CUDA_VISIBLE_DEVICES", visible.as_str());
            env.set("GPU_DEVICE_ORDINAL", visible.as_str());
            env.set_default("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        } else if counted > 0 {
            env.set("SLURM_GPUS_ON_NODE", counted.to_string());
        }
    }

    env.set_nonempty(
        "SLURM_JOB_ACCOUNT",
        first_nonempty(&info.account, &spec.account),
    );
    env.set_nonempty("SLURM_JOB_QOS", first_nonempty(&info.qos, &spec.qos));
    env.set_nonempty(
        "SLURM_JOB_RESERVATION",
        first_nonempty(&info.reservation, &spec.reservation),
    );
    env.set_nonempty(
        "SLURM_JOB_DEPENDENCY",
        first_nonempty(&spec.dependency, &info.dependency),
    );

    // Per-task values of the batch "task".
    env.set("SLURMD_NODENAME", req.node.as_str());
    env.set("HOSTNAME", req.node.as_str());
    env.set("SLURM_TOPOLOGY_ADDR", req.node.as_str());
    env.set("SLURM_TOPOLOGY_ADDR_PATTERN", "node");
    env.set("SLURM_NODEID", "0");
    env.set("SLURM_PROCID", "0");
    env.set("SLURM_LOCALID", "0");
    env.set("SLURM_GTIDS", "0");
    env.set("SLURM_PRIO_PROCESS", "0");
    env.set("SLURM_TASK_PID", ctx.task_pid.to_string());
    env.set("SLURM_RESTART_COUNT", info.restart_count.to_string());

    let user = first_nonempty(&req.user_name, &info.user_name);
    env.set("SLURM_JOB_USER", user);
    env.set("SLURM_JOB_UID", req.uid.to_string());
    env.set("SLURM_JOB_GID", req.gid.to_string());
    env.set_nonempty("SLURM_JOB_GROUP", &info.group_name);

    let start = if info.start_time > 0 {
        info.start_time
    } else {
        ctx.now
    };
    env.set("SLURM_JOB_START_TIME", start.to_string());
    if info.time_limit != INFINITE && info.time_limit != 0 {
        let end = start.saturating_add(i64::from(info.time_limit) * 60);
        env.set("SLURM_JOB_END_TIME", end.to_string());
    }

    if info.array_job_id != 0 {
        env.set("SLURM_ARRAY_JOB_ID", info.array_job_id.to_string());
        env.set("SLURM_ARRAY_TASK_ID", info.array_task_id.to_string());
        let s =
            array_summary(first_nonempty(&spec.array, &info.array_spec)).unwrap_or(ArraySummary {
                min: info.array_task_id,
                max: info.array_task_id,
                count: 1,
                step: 1,
            });
        env.set("SLURM_ARRAY_TASK_COUNT", s.count.to_string());
        env.set("SLURM_ARRAY_TASK_MIN", s.min.to_string());
        env.set("SLURM_ARRAY_TASK_MAX", s.max.to_string());
        env.set("SLURM_ARRAY_TASK_STEP", s.step.to_string());
    }

    let work_dir = first_nonempty(&spec.work_dir, &info.work_dir);
    env.set_default("SLURM_SUBMIT_DIR", work_dir);
    env.set_default(
        "SLURM_SUBMIT_HOST",
        first_nonempty(&spec.submit_host, &info.submit_host),
    );
    if !ctx.conf_path.is_empty() {
        env.set("SLURM_CONF", ctx.conf_path);
        env.set("DROVER_CONF", ctx.conf_path);
    }
    env.set("ENVIRONMENT", "BATCH");

    // A usable login-like baseline when the submitter exported nothing.
    env.set_default("PATH", "/usr/local/bin:/usr/bin:/bin");
    if !user.is_empty() {
        env.set_default("USER", user);
        env.set_default("LOGNAME", user);
    }
    if let Some(h) = ctx.home.filter(|h| !h.is_empty()) {
        env.set_default("HOME", h);
    }
    if let Some(s) = ctx.shell.filter(|s| !s.is_empty()) {
        env.set_default("SHELL", s);
    }
    env.vars
}

#[cfg(test)]
mod tests;
