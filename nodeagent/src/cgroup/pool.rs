//! v1 job groups kept between jobs. Making and removing a job's groups
//! costs the kernel more CPU than the rest of a short job's cgroup work (a
//! new memory group allocates per-CPU state, a removed one lingers until
//! its last page is reclaimed; docs/benchmarks.md), so at a job's usual
//! end its supervisor renames its groups `job_<id>` -> `spare_<id>`, and
//! the next job's supervisor on the node renames a spare to its own
//! `job_<id>` and writes its limits over the old ones. cgroup v1 allows a
//! group to be renamed within its parent; v2 does not, so v2 groups are
//! still made and removed for each job.
//!
//! The freezer hierarchy decides: a spare is claimed by renaming its
//! freezer group (one claimer wins), and kept by renaming that one last,
//! so a spare seen there is whole. A job's groups are kept only when its
//! processes are all gone, the group is thawed and holds nothing but the
//! batch step, and its memory group still holds at most [`MAX_LEFTOVER`]
//! (page cache of files the job wrote, kernel objects it left); what the
//! memory group holds when the next job begins ([`Base`]) is not counted
//! as that job's. A devices group that denied something is removed
//! instead: v1 neither shows the exceptions of a group whose default is
//! allow nor lifts a parent's rule while it has children, so only a group
//! with no rules is known clean. The agent drops a node's spares when it
//! starts and at a clean exit.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::job::{keyed, put, JobCgroup};
use super::plan::{Version, BATCH_STEP};
use crate::sys::dirfd::Dir;

/// Most spares kept in a node's directory.
pub const MAX_SPARES: usize = 64;

/// A memory group still holding more than this after its job is removed,
/// not kept.
pub const MAX_LEFTOVER: u64 = 2 << 20;

/// Name prefix of a kept group.
const SPARE: &str = "spare_";

/// The hierarchies whose groups are kept (the freezer's first).
const POOLED: [&str; 4] = ["freezer", "memory", "cpuset", "devices"];

/// The job directory's file with the [`Base`] of its groups (for sstat).
pub const BASE_FILE: &str = "cgroup.base";

/// What a kept memory group held when its next job began: subtracted from
/// the usage reported for that job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Base {
    pub mem_bytes: u64,
    pub oom_kills: u64,
}

impl Base {
    pub fn to_text(self) -> String {
        format!("{} {}\n", self.mem_bytes, self.oom_kills)
    }

    /// The text of [`Base::to_text`]; anything else reads as zero.
    pub fn parse(text: &str) -> Base {
        let mut it = text.split_whitespace().map(|w| w.parse().unwrap_or(0));
        Base {
            mem_bytes: it.next().unwrap_or(0),
            oom_kills: it.next().unwrap_or(0),
        }
    }
}

/// (node directory, job group name) of a plan's `drover/<node>/job_<id>`.
fn split(job_rel: &str) -> Option<(&str, &str)> {
    job_rel.rsplit_once('/')
}

/// The mounts of the pooled controllers, each once, the freezer's first.
fn pooled_mounts(cg: &JobCgroup) -> Vec<&Path> {
    let mut out: Vec<&Path> = Vec::new();
    for ctrl in POOLED {
        if let Some(m) = cg.mount(ctrl) {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

fn spares(node: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(node) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(SPARE))
        .collect()
}

/// Remove a spare (no process is ever in one).
fn discard(node: &Dir, spare: &str) {
    let _ = node.rmdir(&format!("{spare}/{BATCH_STEP}"));
    let _ = node.rmdir(spare);
}

/// Remove every spare of a node directory (agent start and clean exit).
pub fn drop_spares(node_dir: &Path) {
    if let Ok(node) = Dir::open(node_dir) {
        for s in spares(node_dir) {
            discard(&node, &s);
        }
    }
}

/// Take one of the node's spares as this job's groups and set its limits.
/// `Ok(None)`: none to take (or not v1). An error leaves the job's groups
/// half set: the caller removes them and makes new ones.
pub(super) fn claim(cg: &JobCgroup) -> Result<Option<(Base, Vec<String>)>, String> {
    let p = &cg.plan;
    let (Version::V1, Some((node_rel, job_name)), Some(freezer)) =
        (p.version, split(&p.job_rel), cg.mount("freezer"))
    else {
        return Ok(None);
    };
    let freezer_node = freezer.join(node_rel);
    let Ok(node) = Dir::open(&freezer_node) else {
        return Ok(None);
    };
    let Some(spare) = spares(&freezer_node)
        .into_iter()
        .find(|s| node.rename(s, job_name).is_ok())
    else {
        return Ok(None);
    };
    // The spare is this job's now, in every hierarchy. Should one not take
    // the job's limits, what is left of it goes too (the caller removes
    // the job's groups).
    let taken = take(cg, node_rel, job_name, &spare);
    if taken.is_err() {
        for mount in pooled_mounts(cg) {
            if let Ok(node) = Dir::open(&mount.join(node_rel)) {
                discard(&node, &spare);
            }
        }
    }
    taken.map(Some)
}

/// The rest of a claim: `spare`'s groups outside the freezer hierarchy
/// renamed to the job's and set up (made where the spare has none, removed
/// where the job needs none).
fn take(
    cg: &JobCgroup,
    node_rel: &str,
    job_name: &str,
    spare: &str,
) -> Result<(Base, Vec<String>), String> {
    let p = &cg.plan;
    let used = cg.job_dirs();
    let mut base = Base::default();
    let mut warn = Vec::new();
    for mount in pooled_mounts(cg).into_iter().skip(1) {
        let node_path = mount.join(node_rel);
        let dir = mount.join(&p.job_rel);
        let node = Dir::open(&node_path)
            .map_err(|e| format!("cannot open {}: {e}", node_path.display()))?;
        let Some(ctrl) = used.iter().find(|(_, d)| *d == dir).map(|(c, _)| *c) else {
            discard(&node, spare);
            continue;
        };
        match node.rename(spare, job_name) {
            Ok(()) => reset(cg, ctrl, &node, job_name, &dir, &mut base, &mut warn)?,
            Err(e) if e.kind() == ErrorKind::NotFound => cg.create_v1(ctrl, &dir, &mut warn)?,
            Err(e) => {
                return Err(format!(
                    "cannot rename {} to {job_name}: {e}",
                    node_path.join(spare).display()
                ))
            }
        }
    }
    Ok((base, warn))
}

/// A claimed group of `ctrl`, `job_name` in `node` (at `dir`): the job's
/// limits written over the last job's.
fn reset(
    cg: &JobCgroup,
    ctrl: &str,
    node: &Dir,
    job_name: &str,
    dir: &Path,
    base: &mut Base,
    warn: &mut Vec<String>,
) -> Result<(), String> {
    let job = node
        .sub(job_name)
        .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
    let step_path = dir.join(BATCH_STEP);
    let step = job
        .sub(BATCH_STEP)
        .map_err(|e| format!("cannot open {}: {e}", step_path.display()))?;
    match ctrl {
        "memory" => {
            cg.memory_limits(&job, dir, true, warn)?;
            // Peaks start again from what the group holds now.
            put(&job, dir, "memory.max_usage_in_bytes", "0")?;
            put(&step, &step_path, "memory.max_usage_in_bytes", "0")?;
            base.mem_bytes = job
                .read("memory.usage_in_bytes")
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .unwrap_or(0);
            base.oom_kills = [&job, &step]
                .iter()
                .filter_map(|d| d.read("memory.oom_control").ok())
                .filter_map(|t| keyed(&t, "oom_kill"))
                .sum();
        }
        "cpuset" => {
            let cpus = cg.plan.cpus.as_deref().unwrap_or_default();
            // The step's CPUs emptied first: a group's CPUs may not leave
            // out its children's.
            put(&step, &step_path, "cpuset.cpus", "\n")?;
            put(&job, dir, "cpuset.cpus", cpus)?;
            put(&step, &step_path, "cpuset.cpus", cpus)?;
        }
        "devices" => cg.deny_devices(&job, dir)?,
        _ => {}
    }
    Ok(())
}

/// At the job's usual end (its processes reaped): keep its groups as a
/// spare of the node when they may be kept. False: remove them.
pub(super) fn keep(cg: &JobCgroup) -> bool {
    let p = &cg.plan;
    let (Version::V1, Some((node_rel, job_name)), Some(freezer)) =
        (p.version, split(&p.job_rel), cg.mount("freezer"))
    else {
        return false;
    };
    let Some(id) = job_name.strip_prefix("job_") else {
        return false;
    };
    let spare = format!("{SPARE}{id}");
    let freezer_node = freezer.join(node_rel);
    if !may_keep(cg, &freezer.join(&p.job_rel)) || spares(&freezer_node).len() >= MAX_SPARES {
        return false;
    }
    // The other hierarchies first, the freezer's last (claims go by it).
    let mut renamed: Vec<Dir> = Vec::new();
    let mut others = || -> Option<()> {
        for (ctrl, dir) in cg.job_dirs() {
            if ctrl == "freezer" {
                continue;
            }
            let node = Dir::open(dir.parent()?).ok()?;
            if ctrl == "devices" && !p.deny.is_empty() {
                node.rmdir(&format!("{job_name}/{BATCH_STEP}")).ok()?;
                node.rmdir(job_name).ok()?;
                continue;
            }
            node.rename(job_name, &spare).ok()?;
            renamed.push(node);
        }
        Dir::open(&freezer_node).ok()?.rename(job_name, &spare).ok()
    };
    if others().is_none() {
        for node in renamed {
            let _ = node.rename(&spare, job_name);
        }
        return false;
    }
    true
}

/// Is the job's freezer group at `dir` empty, thawed and holding only the
/// batch step, with no step group elsewhere and little left in memory?
fn may_keep(cg: &JobCgroup, dir: &Path) -> bool {
    let Ok(job) = Dir::open(dir) else {
        return false;
    };
    let empty = |d: &Dir| d.read("cgroup.procs").is_ok_and(|t| t.trim().is_empty());
    let thawed = job
        .read("freezer.state")
        .is_ok_and(|s| s.trim() == "THAWED");
    if !thawed || !empty(&job) || !job.sub(BATCH_STEP).is_ok_and(|s| empty(&s)) {
        return false;
    }
    let only_batch = std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .all(|e| e.file_name() == BATCH_STEP || !e.file_type().is_ok_and(|t| t.is_dir()))
    });
    // srun steps' cpuacct groups (see `step.rs`) go with `remove`.
    let dirs: Vec<PathBuf> = cg.job_dirs().into_iter().map(|(_, d)| d).collect();
    let step_groups = cg
        .mount("cpuacct")
        .map(|m| m.join(&cg.plan.job_rel))
        .is_some_and(|d| !dirs.contains(&d) && d.exists());
    let leftover = cg
        .dir_of("memory")
        .filter(|d| dirs.contains(d))
        .and_then(|d| std::fs::read_to_string(d.join("memory.usage_in_bytes")).ok())
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    only_batch && !step_groups && leftover <= MAX_LEFTOVER
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::plan::{job_rel, node_rel, Dev, Plan};
    use crate::cgroup::System;
    use drover_conf::CgroupConf;

    /// This machine's v1 hierarchies, when the test may use them (root,
    /// all four pooled controllers mounted).
    fn v1() -> Option<System> {
        let sys = System::detect(&CgroupConf::default()).ok()??;
        let all = POOLED
            .iter()
            .all(|c| sys.v1_mounts.iter().any(|(m, _)| m == c));
        (drover_proto::sys::is_root() && sys.version == Version::V1 && all).then_some(sys)
    }

    fn plan(sys: &System, node: &str, id: u32) -> Plan {
        Plan {
            version: Version::V1,
            root: sys.root.clone(),
            v1_mounts: sys.v1_mounts.clone(),
            job_rel: job_rel(node, 1, id),
            mem_bytes: None,
            memsw_bytes: None,
            mem_request_mb: 0,
            cpus: Some("0".into()),
            deny: Vec::new(),
            devices: true,
        }
    }

    /// Run `sh -c script` in the job's batch step; its output.
    fn run_in(cg: &JobCgroup, script: &str) -> String {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(script);
        drover_proto::sys::join_cgroups_in_child(&mut cmd, cg.join_files());
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    }

    fn read(sys: &System, ctrl: &str, rel: &str, file: &str) -> String {
        let m = &sys.v1_mounts.iter().find(|(c, _)| c == ctrl).unwrap().1;
        std::fs::read_to_string(m.join(rel).join(file))
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    fn exists(sys: &System, ctrl: &str, rel: &str) -> bool {
        let m = &sys.v1_mounts.iter().find(|(c, _)| c == ctrl).unwrap().1;
        m.join(rel).is_dir()
    }

    /// A job's groups kept and taken by the next job: limits, CPUs and
    /// device rules are the new job's, whatever the last one had.
    #[test]
    fn kept_groups_take_the_next_jobs_limits() {
        let Some(sys) = v1() else {
            eprintln!("skipped: needs root and cgroup v1 freezer, memory, cpuset and devices");
            return;
        };
        let node = format!("pooltest{}", std::process::id());
        sys.prepare_node(&node, 1).unwrap();
        let nrel = node_rel(&node, 1);
        let t = tempfile::tempdir().unwrap();
        let dev = |n: u32| {
            let p = t.path().join(format!("fake{n}"));
            let ok = std::process::Command::new("mknod")
                .arg(&p)
                .args(["c", "195", &n.to_string()])
                .status()
                .unwrap()
                .success();
            assert!(ok, "mknod {}", p.display());
            p.display().to_string()
        };
        let (d0, d1) = (dev(0), dev(1));
        let probe = format!("for f in {d0} {d1}; do (exec 3<>$f) 2>&1 && echo open; done");

        // Job 1: a memory limit, CPU 0, GPU 1 denied.
        let mut p1 = plan(&sys, &node, 1);
        p1.mem_bytes = Some(100 << 20);
        p1.deny = vec![Dev {
            major: 195,
            minor: 1,
        }];
        let mut a = JobCgroup::open(p1);
        a.create_or_reuse().unwrap();
        assert_eq!(a.base, Base::default(), "nothing kept yet: made afresh");
        let out = run_in(&a, &probe);
        assert!(out.contains("No such device"), "fake0 allowed: {out}");
        assert!(out.contains("not permitted"), "fake1 denied: {out}");
        a.release().unwrap();
        let spare1 = format!("{nrel}/spare_1");
        for c in ["freezer", "memory", "cpuset"] {
            assert!(!exists(&sys, c, &a.plan.job_rel), "{c}: job_1 renamed");
            assert!(exists(&sys, c, &spare1), "{c}: kept as spare_1");
        }
        assert!(
            !exists(&sys, "devices", &a.plan.job_rel) && !exists(&sys, "devices", &spare1),
            "a devices group with rules is removed, not kept"
        );

        // Job 2 takes it: no memory limit, CPU 1, no device rule.
        let mut p2 = plan(&sys, &node, 2);
        p2.cpus = Some("1".into());
        let mut b = JobCgroup::open(p2);
        b.create_or_reuse().unwrap();
        let rel2 = b.plan.job_rel.clone();
        assert!(!exists(&sys, "freezer", &spare1), "spare taken");
        let lim: u64 = read(&sys, "memory", &rel2, "memory.limit_in_bytes")
            .parse()
            .unwrap();
        assert!(lim > 1 << 60, "job 1's limit lifted: {lim}");
        assert_eq!(read(&sys, "cpuset", &rel2, "cpuset.cpus"), "1");
        let step = format!("{rel2}/{BATCH_STEP}");
        assert_eq!(read(&sys, "cpuset", &step, "cpuset.cpus"), "1");
        assert!(b.base.mem_bytes <= MAX_LEFTOVER, "{:?}", b.base);
        let out = run_in(&b, &format!("{probe}; cat /proc/self/cgroup"));
        assert!(!out.contains("not permitted"), "no device denied: {out}");
        assert!(
            out.contains("memory:/drover/") && out.contains("/job_2/step_batch"),
            "{out}"
        );
        let peak = b.usage().mem_peak_kb.unwrap();
        assert!(
            peak < 64 << 10,
            "job 2's peak counts from its own start: {peak} KiB"
        );
        b.release().unwrap();

        // Job 3 takes job 2's groups, devices included, and denies GPU 0.
        let mut p3 = plan(&sys, &node, 3);
        p3.deny = vec![Dev {
            major: 195,
            minor: 0,
        }];
        let mut c = JobCgroup::open(p3);
        c.create_or_reuse().unwrap();
        assert!(!exists(&sys, "devices", &format!("{nrel}/spare_2")));
        let out = run_in(&c, &probe);
        assert!(
            out.contains(&format!("{d0}: Operation not permitted"))
                && out.contains(&format!("{d1}: No such device")),
            "fake0 denied, fake1 allowed: {out}"
        );
        c.kill_all();
        c.remove().unwrap();

        // A job that leaves a process behind is not kept.
        let mut d = JobCgroup::open(plan(&sys, &node, 4));
        d.create_or_reuse().unwrap();
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        drover_proto::sys::join_cgroups_in_child(&mut cmd, d.join_files());
        let mut child = cmd.spawn().unwrap();
        assert!(!keep(&d), "a process is left");
        let _ = child.kill();
        let _ = child.wait();
        d.kill_all();
        d.release().unwrap();
        assert!(exists(&sys, "freezer", &format!("{nrel}/spare_4")));

        // A spare that cannot take the job's limits goes in every hierarchy.
        let mut p5 = plan(&sys, &node, 5);
        p5.cpus = Some("4095".into());
        let mut e = JobCgroup::open(p5);
        let err = e.create_or_reuse().unwrap_err();
        assert!(err.contains("cpuset.cpus"), "{err}");
        e.remove().unwrap();
        for c in POOLED {
            assert!(
                !exists(&sys, c, &format!("{nrel}/spare_4")),
                "{c}: spare_4 left"
            );
            assert!(!exists(&sys, c, &e.plan.job_rel), "{c}: job_5 left");
        }

        sys.release_node(&node, 1);
        for (_, m) in &sys.v1_mounts {
            assert!(!m.join(&nrel).exists(), "{} left", m.join(&nrel).display());
        }
    }

    #[test]
    fn base_text() {
        let b = Base {
            mem_bytes: 700_416,
            oom_kills: 2,
        };
        assert_eq!(Base::parse(&b.to_text()), b);
        assert_eq!(Base::parse(""), Base::default());
        assert_eq!(
            Base::parse("x 3"),
            Base {
                mem_bytes: 0,
                oom_kills: 3
            }
        );
    }
}
