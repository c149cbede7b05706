//! Kernel enforcement with cgroups, v1 and v2.
//!
//! Layout, in every hierarchy used: `drover/<node>/job_<id>/step_batch`.
//! Limits sit on `job_<id>` (memory, cpuset, devices), the processes in the
//! step below it. The agent detects the cgroup version and prepares
//! `drover/<node>` at start-up ([`System`]); at each launch it computes a
//! [`plan::Plan`] that the supervisor (root, single-threaded) turns into
//! directories and limits before the script starts ([`job::JobCgroup`]);
//! the script's child process joins the step itself before it execs, so
//! every process of the job, double-forked daemons included, is inside.
//! When the job ends the supervisor kills what is left through the cgroup
//! (`cgroup.kill` on v2, freeze + SIGKILL + thaw on v1), reads the OOM-kill
//! counter and usage, and removes the directories.

pub mod bpf;
pub mod job;
pub mod plan;
pub mod pool;
pub mod step;

use std::path::{Path, PathBuf};

use drover_conf::CgroupConf;

pub use plan::{Dev, Plan, Version};

/// v1 controllers Drover uses, in the order it creates them.
pub const V1_CONTROLLERS: &[&str] = &["freezer", "memory", "cpuacct", "cpuset", "devices", "pids"];

/// One line of /proc/self/mountinfo that is a cgroup mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgMount {
    pub path: PathBuf,
    /// "cgroup" (v1) or "cgroup2".
    pub fstype: String,
    /// v1: the controllers bound to this hierarchy.
    pub controllers: Vec<String>,
}

/// Undo mountinfo's octal escapes (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The cgroup mounts in a mountinfo text (pure).
pub fn parse_mountinfo(text: &str) -> Vec<CgMount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let pre: Vec<&str> = pre.split(' ').collect();
        let post: Vec<&str> = post.split(' ').collect();
        if pre.len() < 5 || post.len() < 3 {
            continue;
        }
        let fstype = post[0];
        if fstype != "cgroup" && fstype != "cgroup2" {
            continue;
        }
        let controllers = if fstype == "cgroup" {
            post[2]
                .split(',')
                .filter(|o| {
                    !matches!(
                        *o,
                        "rw" | "ro" | "relatime" | "noatime" | "nosuid" | "nodev" | "noexec"
                    ) && !o.starts_with("name=")
                        && !o.starts_with("release_agent")
                        && *o != "clone_children"
                        && *o != "noprefix"
                        && *o != "xattr"
                })
                .map(str::to_string)
                .collect()
        } else {
            Vec::new()
        };
        out.push(CgMount {
            path: PathBuf::from(unescape(pre[4])),
            fstype: fstype.to_string(),
            controllers,
        });
    }
    out
}

/// How this node does cgroups, decided once at agent start.
#[derive(Debug, Clone)]
pub struct System {
    pub version: Version,
    /// v2 mount (or the CgroupMountpoint for v1).
    pub root: PathBuf,
    pub v1_mounts: Vec<(String, PathBuf)>,
    pub conf: CgroupConf,
}

/// Pick the cgroup version and mounts from cgroup.conf and the mount
/// table (pure). `Ok(None)` = cgroups disabled by configuration.
pub fn choose(conf: &CgroupConf, mounts: &[CgMount]) -> Result<Option<System>, String> {
    let plugin = conf.cgroup_plugin.trim().to_ascii_lowercase();
    let mountpoint = Path::new(conf.cgroup_mountpoint.trim_end_matches('/'));
    let v2_at_mountpoint = mounts
        .iter()
        .any(|m| m.fstype == "cgroup2" && m.path == mountpoint);
    let v1: Vec<(String, PathBuf)> = V1_CONTROLLERS
        .iter()
        .filter_map(|c| {
            mounts
                .iter()
                .find(|m| m.fstype == "cgroup" && m.controllers.iter().any(|x| x == c))
                .map(|m| (c.to_string(), m.path.clone()))
        })
        .collect();
    let want = match plugin.as_str() {
        "disabled" | "none" => return Ok(None),
        "cgroup/v2" => Version::V2,
        "cgroup/v1" => Version::V1,
        "autodetect" | "" => {
            if v2_at_mountpoint {
                Version::V2
            } else {
                Version::V1
            }
        }
        other => {
            return Err(format!(
                "cgroup.conf: CgroupPlugin: unknown plugin \"{other}\" (autodetect, cgroup/v1, cgroup/v2 or disabled)"
            ))
        }
    };
    match want {
        Version::V2 if !v2_at_mountpoint => {
            let elsewhere: Vec<String> = mounts
                .iter()
                .filter(|m| m.fstype == "cgroup2")
                .map(|m| m.path.display().to_string())
                .collect();
            Err(format!(
                "cgroup v2 is not mounted at CgroupMountpoint={} (cgroup2 mounts: {})",
                mountpoint.display(),
                if elsewhere.is_empty() {
                    "none".to_string()
                } else {
                    elsewhere.join(", ")
                }
            ))
        }
        Version::V1 if !v1.iter().any(|(c, _)| c == "freezer") => Err(
            "no cgroup v1 freezer hierarchy is mounted (set CgroupPlugin=cgroup/v2 or disabled in cgroup.conf)"
                .to_string(),
        ),
        v => Ok(Some(System {
            version: v,
            root: mountpoint.to_path_buf(),
            v1_mounts: if v == Version::V1 { v1 } else { Vec::new() },
            conf: conf.clone(),
        })),
    }
}

impl System {
    /// Detect from this host's mount table. `Ok(None)`: disabled.
    pub fn detect(conf: &CgroupConf) -> Result<Option<System>, String> {
        let text = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
        choose(conf, &parse_mountinfo(&text))
    }

    pub fn describe(&self) -> String {
        match self.version {
            Version::V2 => format!("cgroup v2 at {}", self.root.display()),
            Version::V1 => format!(
                "cgroup v1 ({})",
                self.v1_mounts
                    .iter()
                    .map(|(c, p)| format!("{c} at {}", p.display()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Does any constraint of cgroup.conf need the kernel's help?
    pub fn constrains(&self) -> bool {
        let c = &self.conf;
        c.constrain_ram_space || c.constrain_cores || c.constrain_devices
    }

    /// Create `drover/<node>` in every hierarchy used and make it able to
    /// hold job groups (v1 cpuset needs cpus/mems at every level; v2 needs
    /// the controllers enabled down the path). Then remove leftovers of
    /// jobs this agent no longer runs (see [`System::job_groups`]), and
    /// groups kept for jobs to come by an earlier run ([`pool`]).
    pub fn prepare_node(&self, node: &str, port: u16) -> Result<(), String> {
        let rel = plan::node_rel(node, port);
        match self.version {
            Version::V1 => {
                for (ctrl, mount) in &self.v1_mounts {
                    let dir = mount.join(&rel);
                    std::fs::create_dir_all(&dir)
                        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                    if ctrl == "cpuset" {
                        job::cpuset_inherit_path(mount, &rel)?;
                    }
                    pool::drop_spares(&dir);
                }
            }
            Version::V2 => {
                let dir = self.root.join(&rel);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                job::v2_enable_down(&self.root, &rel)?;
            }
        }
        Ok(())
    }

    /// At a clean agent exit: remove the node's kept groups, and its
    /// directory where no job group is left in it (rmdir fails on a
    /// non-empty group, so running jobs keep theirs). Test clusters and
    /// emulated nodes each have a port of their own, so without this their
    /// empty directories pile up.
    pub fn release_node(&self, node: &str, port: u16) {
        let rel = plan::node_rel(node, port);
        let dirs: Vec<PathBuf> = match self.version {
            Version::V1 => self.v1_mounts.iter().map(|(_, m)| m.join(&rel)).collect(),
            Version::V2 => vec![self.root.join(&rel)],
        };
        for d in dirs {
            pool::drop_spares(&d);
            let _ = std::fs::remove_dir(d);
        }
    }

    /// Job ids with a cgroup under `drover/<node>` (v1: in the freezer hierarchy).
    pub fn job_groups(&self, node: &str, port: u16) -> Vec<u32> {
        let base = match self.version {
            Version::V2 => self.root.clone(),
            Version::V1 => match self.v1_mounts.iter().find(|(c, _)| c == "freezer") {
                Some((_, m)) => m.clone(),
                None => return Vec::new(),
            },
        };
        let dir = base.join(plan::node_rel(node, port));
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut ids: Vec<u32> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.strip_prefix("job_")?.parse().ok())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The group of a job that freezing acts on (v1: in the freezer
    /// hierarchy), whether it exists or not.
    pub fn freezer_dir(&self, node: &str, port: u16, job_id: u32) -> Option<PathBuf> {
        let base = match self.version {
            Version::V2 => self.root.clone(),
            Version::V1 => self
                .v1_mounts
                .iter()
                .find(|(c, _)| c == "freezer")
                .map(|(_, m)| m.clone())?,
        };
        Some(base.join(plan::job_rel(node, port, job_id)))
    }

    /// A plan for this system (the agent adds the job's numbers).
    pub fn plan_inputs<'a>(
        &'a self,
        port: u16,
        node_mem_mb: u64,
        host_cpus: u32,
        inventory: &'a [drover_proto::GresInventory],
        dev_of: &'a dyn Fn(&str) -> Option<Dev>,
    ) -> plan::PlanInputs<'a> {
        plan::PlanInputs {
            conf: &self.conf,
            port,
            version: self.version,
            root: self.root.clone(),
            v1_mounts: self.v1_mounts.clone(),
            node_mem_mb,
            host_cpus,
            inventory,
            dev_of,
        }
    }

    /// Kill and remove the cgroup of a job the agent found without a
    /// supervisor (left behind by a crash).
    pub fn reap_orphan(&self, node: &str, port: u16, job_id: u32) {
        let p = Plan {
            version: self.version,
            root: self.root.clone(),
            v1_mounts: self.v1_mounts.clone(),
            job_rel: plan::job_rel(node, port, job_id),
            mem_bytes: None,
            memsw_bytes: None,
            mem_request_mb: 0,
            // Every hierarchy a job may have used, so all its groups go.
            cpus: Some(String::new()),
            deny: Vec::new(),
            devices: true,
        };
        let cg = job::JobCgroup::open(p);
        cg.kill_all();
        if let Err(e) = cg.remove() {
            tracing::warn!("cannot remove the cgroup of job {job_id} on {node}: {e}");
        }
    }
}

/// `major:minor` of a character device file.
pub fn char_dev(path: &str) -> Option<Dev> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let md = std::fs::metadata(path).ok()?;
    if !md.file_type().is_char_device() {
        return None;
    }
    let rdev = md.rdev();
    Some(Dev {
        major: libc::major(rdev),
        minor: libc::minor(rdev),
    })
}

/// A message for people: Rust's ` (os error N)` suffixes dropped (the
/// words before them already say what went wrong).
pub fn plain(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find(" (os error ") {
        out.push_str(&rest[..i]);
        let tail = &rest[i + " (os error ".len()..];
        match tail.find(')') {
            Some(j) if tail[..j].bytes().all(|b| b.is_ascii_digit()) => rest = &tail[j + 1..],
            _ => {
                out.push_str(" (os error ");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_messages_drop_errno_suffixes() {
        assert_eq!(
            plain("cannot write \"0-1\" to /x/cpuset.cpus: Invalid argument (os error 22)"),
            "cannot write \"0-1\" to /x/cpuset.cpus: Invalid argument"
        );
        assert_eq!(plain("a (os error x) b"), "a (os error x) b");
        assert_eq!(plain("no suffix"), "no suffix");
    }

    const HYBRID: &str = "\
25 1 0:23 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
27 25 0:25 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
28 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
29 25 0:27 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer
30 25 0:28 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
31 25 0:29 / /sys/fs/cgroup/my\\040dir rw - cgroup cgroup rw,devices
";

    #[test]
    fn mountinfo_and_choice() {
        let m = parse_mountinfo(HYBRID);
        assert_eq!(m.len(), 6);
        assert_eq!(m[1].controllers, ["cpu", "cpuacct"]);
        assert!(m[4].controllers.is_empty(), "name=systemd is no controller");
        assert_eq!(m[5].path, PathBuf::from("/sys/fs/cgroup/my dir"));

        let mut c = CgroupConf::default();
        let s = choose(&c, &m).unwrap().unwrap();
        assert_eq!(s.version, Version::V1, "tmpfs at the mountpoint: v1");
        assert!(s
            .v1_mounts
            .contains(&("cpuacct".into(), "/sys/fs/cgroup/cpu,cpuacct".into())));
        assert!(s.v1_mounts.iter().all(|(c, _)| c != "pids"));

        c.cgroup_plugin = "cgroup/v2".into();
        let e = choose(&c, &m).unwrap_err();
        assert!(e.contains("/sys/fs/cgroup/unified"), "{e}");
        c.cgroup_mountpoint = "/sys/fs/cgroup/unified/".into();
        assert_eq!(choose(&c, &m).unwrap().unwrap().version, Version::V2);
        c.cgroup_plugin = "autodetect".into();
        assert_eq!(choose(&c, &m).unwrap().unwrap().version, Version::V2);
        c.cgroup_plugin = "disabled".into();
        assert!(choose(&c, &m).unwrap().is_none());
        c.cgroup_plugin = "cgroup/v9".into();
        assert!(choose(&c, &m).unwrap_err().contains("CgroupPlugin"));
        c.cgroup_plugin = "cgroup/v1".into();
        assert!(choose(&c, &[]).unwrap_err().contains("freezer"));
    }
}
