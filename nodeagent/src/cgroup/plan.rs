//! What a job's cgroup must look like, computed by the agent from
//! cgroup.conf, the node's inventory and the launch (pure), and handed to
//! the supervisor as `JOBDIR/cgroup.plan` (key=value lines).

use std::path::PathBuf;

use drover_conf::CgroupConf;
use drover_proto::{GresInventory, LaunchRequest};

/// Which cgroup interface a node uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V1 => "v1",
            Version::V2 => "v2",
        }
    }

    /// The file a process writes `0` into to join a group. v1: `tasks`,
    /// which moves the calling thread only (the joining child is fresh from
    /// fork, so single-threaded: the thread is the process). A move through
    /// `cgroup.procs` takes the kernel's global threadgroup lock for
    /// writing, which waits for an RCU grace period when no other move just
    /// did: 5-15 ms per job on an idle node here, a third of
    /// submit-to-running (docs/benchmarks.md). v2 has only `cgroup.procs`
    /// for a process of a domain group.
    pub fn join_file(self) -> &'static str {
        match self {
            Version::V1 => "tasks",
            Version::V2 => "cgroup.procs",
        }
    }
}

/// A device rule target: char device `major:minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dev {
    pub major: u32,
    pub minor: u32,
}

/// Everything the supervisor needs to build, fill, watch and remove the
/// job's cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub version: Version,
    /// v2: the unified mount. v1: unused (see `v1_mounts`).
    pub root: PathBuf,
    /// v1: controller name -> its hierarchy's mount point.
    pub v1_mounts: Vec<(String, PathBuf)>,
    /// Job directory relative to each hierarchy (`drover/<node>/job_<id>`).
    pub job_rel: String,
    /// Hard memory limit in bytes (None = not constrained).
    pub mem_bytes: Option<u64>,
    /// Memory+swap limit in bytes (None = swap not constrained).
    pub memsw_bytes: Option<u64>,
    /// What the job asked for, MiB (for the OOM message).
    pub mem_request_mb: u64,
    /// Allowed CPUs of the host as a cpuset list (None = not constrained).
    pub cpus: Option<String>,
    /// Device nodes the job may not open.
    pub deny: Vec<Dev>,
    /// ConstrainDevices: the job has a devices group even when it may open
    /// every device (its steps may be allowed fewer).
    pub devices: bool,
}

/// The cgroup step directory processes of the batch script live in.
pub const BATCH_STEP: &str = "step_batch";

/// Directory of all of one node's jobs, relative to a hierarchy:
/// `drover/<node>_<agent port>`. Node name and port are both part of it so
/// that emulated nodes, and several test clusters on one host, never share
/// a directory (Slurm's multiple-slurmd setups do the same with names).
pub fn node_rel(node: &str, port: u16) -> String {
    format!("drover/{}_{port}", sanitize(node))
}

pub fn job_rel(node: &str, port: u16, job_id: u32) -> String {
    format!("{}/job_{job_id}", node_rel(node, port))
}

/// Node names are config-checked, but never let one escape its directory.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

/// The memory limit of a job holding `alloc_mb` on a node of `node_mb`:
/// Slurm's AllowedRAMSpace percent of the allocation, at least MinRAMSpace,
/// at most MaxRAMPercent of the node. `alloc_mb == 0` means the whole node.
pub fn ram_limit_mb(conf: &CgroupConf, alloc_mb: u64, node_mb: u64) -> u64 {
    let alloc = if alloc_mb == 0 { node_mb } else { alloc_mb };
    let mut lim = (alloc as f64 * conf.allowed_ram_space / 100.0) as u64;
    if node_mb > 0 {
        let cap = (node_mb as f64 * conf.max_ram_percent / 100.0) as u64;
        lim = lim.min(cap.max(1));
    }
    lim.max(conf.min_ram_space).max(1)
}

/// Memory plus swap: the RAM limit plus AllowedSwapSpace percent of the
/// allocation, at most MaxSwapPercent of the node on top of the RAM limit.
pub fn memsw_limit_mb(conf: &CgroupConf, ram_mb: u64, alloc_mb: u64, node_mb: u64) -> u64 {
    let alloc = if alloc_mb == 0 { node_mb } else { alloc_mb };
    let mut swap = (alloc as f64 * conf.allowed_swap_space / 100.0) as u64;
    if node_mb > 0 {
        swap = swap.min((node_mb as f64 * conf.max_swap_percent / 100.0) as u64);
    }
    ram_mb + swap
}

/// Map allocated CPU ids onto the host's CPUs (an emulated node may claim
/// more CPUs than the host has: ids wrap around) and print a cpuset list.
pub fn cpuset_list(cpu_ids: &[u32], host_cpus: u32) -> String {
    let ids: Vec<u32> = cpu_ids.iter().map(|c| c % host_cpus.max(1)).collect();
    drover_conf::hostlist::ranges(&ids)
}

/// The device nodes of the node's GRES that the job was NOT given. GRES
/// indices count per GRES name over the node's `Gres=` entries in order,
/// and the inventory lists each entry's files in the same order.
pub fn denied_devices(
    inventory: &[GresInventory],
    allocated: &[(String, u32)],
    dev_of: &dyn Fn(&str) -> Option<Dev>,
) -> Vec<Dev> {
    let mut next_index: Vec<(String, u32)> = Vec::new();
    let mut deny = Vec::new();
    let mut allow = Vec::new();
    for inv in inventory {
        let slot = match next_index.iter().position(|(n, _)| *n == inv.name) {
            Some(p) => p,
            None => {
                next_index.push((inv.name.clone(), 0));
                next_index.len() - 1
            }
        };
        for file in &inv.files {
            let index = next_index[slot].1;
            next_index[slot].1 += 1;
            let Some(dev) = dev_of(file) else { continue };
            if allocated.iter().any(|(n, i)| *n == inv.name && *i == index) {
                allow.push(dev);
            } else {
                deny.push(dev);
            }
        }
    }
    // One file shared by several GRES entries stays usable if any is ours.
    deny.retain(|d| !allow.contains(d));
    deny.sort();
    deny.dedup();
    deny
}

/// Inputs of [`Plan::build`] that come from the host and the agent.
pub struct PlanInputs<'a> {
    pub conf: &'a CgroupConf,
    /// The agent's port (part of the directory name).
    pub port: u16,
    pub version: Version,
    pub root: PathBuf,
    pub v1_mounts: Vec<(String, PathBuf)>,
    pub node_mem_mb: u64,
    pub host_cpus: u32,
    pub inventory: &'a [GresInventory],
    pub dev_of: &'a dyn Fn(&str) -> Option<Dev>,
}

impl Plan {
    /// The plan for the batch script of `req` on `req.node`.
    pub fn build(inp: &PlanInputs<'_>, req: &LaunchRequest) -> Plan {
        let job_alloc = crate::allocation::of(req);
        let alloc = crate::allocation::on_node(&job_alloc, &req.node);
        let alloc_mb = alloc.map_or(0, |a| a.mem_mb);
        let c = inp.conf;
        let ram = ram_limit_mb(c, alloc_mb, inp.node_mem_mb);
        let mem_bytes = c.constrain_ram_space.then_some(ram.saturating_mul(1 << 20));
        let memsw_bytes = (c.constrain_ram_space && c.constrain_swap_space)
            .then(|| memsw_limit_mb(c, ram, alloc_mb, inp.node_mem_mb).saturating_mul(1 << 20));
        let cpus = if c.constrain_cores {
            alloc
                .filter(|a| !a.cpu_ids.is_empty())
                .map(|a| cpuset_list(&a.cpu_ids, inp.host_cpus))
        } else {
            None
        };
        let allocated: Vec<(String, u32)> = alloc
            .map(|a| {
                a.gres
                    .iter()
                    .flat_map(|g| g.indices.iter().map(|i| (g.name.clone(), *i)))
                    .collect()
            })
            .unwrap_or_default();
        let deny = if c.constrain_devices {
            denied_devices(inp.inventory, &allocated, inp.dev_of)
        } else {
            Vec::new()
        };
        Plan {
            version: inp.version,
            root: inp.root.clone(),
            v1_mounts: inp.v1_mounts.clone(),
            job_rel: job_rel(&req.node, inp.port, req.job_id),
            mem_bytes,
            memsw_bytes,
            mem_request_mb: alloc_mb,
            cpus,
            deny,
            devices: c.constrain_devices,
        }
    }

    /// `key=value` lines (paths must not contain newlines; they come from
    /// mount points and sanitized names).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!("version={}\n", self.version.as_str()));
        s.push_str(&format!("root={}\n", self.root.display()));
        for (c, p) in &self.v1_mounts {
            s.push_str(&format!("mount={c}:{}\n", p.display()));
        }
        s.push_str(&format!("job={}\n", self.job_rel));
        if let Some(m) = self.mem_bytes {
            s.push_str(&format!("mem={m}\n"));
        }
        if let Some(m) = self.memsw_bytes {
            s.push_str(&format!("memsw={m}\n"));
        }
        s.push_str(&format!("mem_request_mb={}\n", self.mem_request_mb));
        if let Some(c) = &self.cpus {
            s.push_str(&format!("cpus={c}\n"));
        }
        for d in &self.deny {
            s.push_str(&format!("deny={}:{}\n", d.major, d.minor));
        }
        if self.devices {
            s.push_str("devices=1\n");
        }
        s
    }

    pub fn parse(text: &str) -> Result<Plan, String> {
        let mut p = Plan {
            version: Version::V1,
            root: PathBuf::new(),
            v1_mounts: Vec::new(),
            job_rel: String::new(),
            mem_bytes: None,
            memsw_bytes: None,
            mem_request_mb: 0,
            cpus: None,
            deny: Vec::new(),
            devices: false,
        };
        for line in text.lines().filter(|l| !l.is_empty()) {
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("bad cgroup plan line {line:?}"))?;
            let num = |v: &str| {
                v.parse::<u64>()
                    .map_err(|_| format!("bad number in cgroup plan: {line:?}"))
            };
            match k {
                "version" => {
                    p.version = match v {
                        "v1" => Version::V1,
                        "v2" => Version::V2,
                        _ => return Err(format!("bad cgroup version {v:?}")),
                    }
                }
                "root" => p.root = PathBuf::from(v),
                "mount" => {
                    let (c, path) = v
                        .split_once(':')
                        .ok_or_else(|| format!("bad mount line {line:?}"))?;
                    p.v1_mounts.push((c.to_string(), PathBuf::from(path)));
                }
                "job" => {
                    if v.split('/').any(|part| part == ".." || part.is_empty()) {
                        return Err(format!("bad job path {v:?}"));
                    }
                    p.job_rel = v.to_string();
                }
                "mem" => p.mem_bytes = Some(num(v)?),
                "memsw" => p.memsw_bytes = Some(num(v)?),
                "mem_request_mb" => p.mem_request_mb = num(v)?,
                "cpus" => p.cpus = Some(v.to_string()),
                "devices" => p.devices = v == "1",
                "deny" => {
                    let (a, b) = v
                        .split_once(':')
                        .ok_or_else(|| format!("bad device {line:?}"))?;
                    let major = num(a)? as u32;
                    let minor = num(b)? as u32;
                    p.deny.push(Dev { major, minor });
                }
                _ => {}
            }
        }
        if p.job_rel.is_empty() {
            return Err("cgroup plan names no job directory".into());
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::{GresAlloc, JobInfo, NodeAlloc};

    fn inv(name: &str, ty: &str, files: &[&str]) -> GresInventory {
        GresInventory {
            name: name.into(),
            r#type: ty.into(),
            count: files.len() as u64,
            files: files.iter().map(|f| f.to_string()).collect(),
            ..Default::default()
        }
    }

    fn dev(f: &str) -> Option<Dev> {
        let n: u32 = f.trim_start_matches("/dev/nvidia").parse().ok()?;
        Some(Dev {
            major: 195,
            minor: n,
        })
    }

    #[test]
    fn limits_follow_cgroup_conf() {
        let mut c = CgroupConf::default();
        assert_eq!(ram_limit_mb(&c, 1000, 8000), 1000);
        assert_eq!(ram_limit_mb(&c, 0, 8000), 8000);
        assert_eq!(ram_limit_mb(&c, 10, 8000), 30, "MinRAMSpace floor");
        c.allowed_ram_space = 150.0;
        assert_eq!(ram_limit_mb(&c, 1000, 8000), 1500);
        c.max_ram_percent = 10.0;
        assert_eq!(ram_limit_mb(&c, 1000, 8000), 800);
        c.allowed_swap_space = 50.0;
        assert_eq!(memsw_limit_mb(&c, 800, 1000, 8000), 1300);
    }

    #[test]
    fn cpusets_wrap_and_compress() {
        assert_eq!(cpuset_list(&[0, 1, 2, 5, 7, 8], 64), "0-2,5,7-8");
        assert_eq!(cpuset_list(&[2, 3], 2), "0-1");
        assert_eq!(cpuset_list(&[], 4), "");
    }

    #[test]
    fn devices_denied_are_the_unallocated_ones() {
        let inv = vec![
            inv("gpu", "a100", &["/dev/nvidia0", "/dev/nvidia1"]),
            inv("gpu", "v100", &["/dev/nvidia2", "/dev/nvidia3"]),
        ];
        let d = denied_devices(&inv, &[("gpu".into(), 1), ("gpu".into(), 2)], &dev);
        assert_eq!(
            d.iter().map(|d| d.minor).collect::<Vec<_>>(),
            vec![0, 3],
            "indices count across types of one GRES name"
        );
        assert_eq!(denied_devices(&inv, &[], &dev).len(), 4);
    }

    #[test]
    fn plan_round_trips_and_rejects_escapes() {
        let c = CgroupConf {
            constrain_ram_space: true,
            constrain_swap_space: true,
            constrain_cores: true,
            constrain_devices: true,
            ..Default::default()
        };
        let inventory = vec![inv("gpu", "", &["/dev/nvidia0", "/dev/nvidia1"])];
        let req = LaunchRequest {
            job_id: 42,
            node: "n1".into(),
            info: Some(JobInfo {
                alloc: vec![NodeAlloc {
                    node: "n1".into(),
                    cpus: 2,
                    cpu_ids: vec![2, 3],
                    mem_mb: 64,
                    gres: vec![GresAlloc {
                        name: "gpu".into(),
                        indices: vec![1],
                        ..Default::default()
                    }],
                    tasks: 1,
                }],
                ..Default::default()
            }),
            ..Default::default()
        };
        let p = Plan::build(
            &PlanInputs {
                conf: &c,
                port: 6818,
                version: Version::V1,
                root: "/sys/fs/cgroup".into(),
                v1_mounts: vec![("memory".into(), "/sys/fs/cgroup/memory".into())],
                node_mem_mb: 4096,
                host_cpus: 8,
                inventory: &inventory,
                dev_of: &dev,
            },
            &req,
        );
        assert_eq!(p.job_rel, "drover/n1_6818/job_42");
        assert_eq!(p.mem_bytes, Some(64 << 20));
        assert_eq!(p.memsw_bytes, Some(64 << 20));
        assert_eq!(p.cpus.as_deref(), Some("2-3"));
        assert_eq!(
            p.deny,
            vec![Dev {
                major: 195,
                minor: 0
            }]
        );
        assert_eq!(Plan::parse(&p.to_text()).unwrap(), p);
        assert!(Plan::parse("job=drover/../../etc\n").is_err());
        assert!(Plan::parse("version=v3\njob=a\n").is_err());
        assert!(Plan::parse("mem=x\njob=a\n").is_err());
        assert_eq!(node_rel("../x", 1), "drover/_x_1");
    }
}
