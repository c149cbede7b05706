//! One job's cgroups, as the supervisor builds, watches and removes them.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::plan::{Plan, Version, BATCH_STEP};
use super::pool::{self, Base};
use crate::sys::dirfd::Dir;

pub(super) fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value)
        .map_err(|e| format!("cannot write {value:?} to {}: {e}", path.display()))
}

pub(super) fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// A `key value` line of a flat-keyed cgroup file (memory.events, cpu.stat).
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next()? == key).then_some(())?;
        it.next()?.parse().ok()
    })
}

/// v1 cpuset: a new group refuses tasks until `cpuset.cpus` and
/// `cpuset.mems` are set; give every level from the mount down to `rel`
/// its parent's values where it has none.
pub fn cpuset_inherit_path(mount: &Path, rel: &str) -> Result<(), String> {
    let mut parent = mount.to_path_buf();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        let dir = parent.join(part);
        no_load_balance(&dir);
        for f in ["cpuset.cpus", "cpuset.mems"] {
            let cur = read(&dir.join(f)).unwrap_or_default();
            if cur.trim().is_empty() {
                let v = read(&parent.join(f)).unwrap_or_default();
                write(&dir.join(f), v.trim())?;
            }
        }
        parent = dir;
    }
    Ok(())
}

/// A v1 cpuset with `sched_load_balance` on makes every change of its CPUs
/// rebuild the kernel's scheduling domains (global locks, milliseconds).
/// The root cpuset balances over all CPUs already, so Drover's groups turn
/// it off before their CPUs are set. Best effort.
pub(super) fn no_load_balance(dir: &Path) {
    let _ = std::fs::write(dir.join("cpuset.sched_load_balance"), "0");
}

/// v2: enable the controllers Drover uses (those the kernel offers) in
/// `cgroup.subtree_control` of every ancestor of `rel`, top down, so that
/// `rel` gets their interface files.
pub fn v2_enable_down(root: &Path, rel: &str) -> Result<(), String> {
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    let mut dir = root.to_path_buf();
    for part in parts {
        let offered = read(&dir.join("cgroup.controllers")).unwrap_or_default();
        let enabled = read(&dir.join("cgroup.subtree_control")).unwrap_or_default();
        let want: Vec<String> = ["cpu", "cpuset", "memory", "pids"]
            .iter()
            .filter(|c| offered.split_whitespace().any(|o| o == **c))
            .filter(|c| !enabled.split_whitespace().any(|o| o == **c))
            .map(|c| format!("+{c}"))
            .collect();
        if !want.is_empty() {
            write(&dir.join("cgroup.subtree_control"), &want.join(" "))?;
        }
        dir = dir.join(part);
    }
    Ok(())
}

/// Is the group at `dir` (freezer hierarchy for v1) frozen? v1 reports
/// `FREEZING` until every task has stopped; v2 `frozen 1` in cgroup.events.
pub fn is_frozen(version: Version, dir: &Path) -> bool {
    match version {
        Version::V1 => read(&dir.join("freezer.state")).is_some_and(|s| s.trim() == "FROZEN"),
        Version::V2 => read(&dir.join("cgroup.events"))
            .and_then(|t| keyed(&t, "frozen"))
            .is_some_and(|v| v == 1),
    }
}

/// Freeze (suspend) or thaw (resume) the group at `dir` and everything
/// under it. Freezing waits up to `wait` for the kernel to stop every task
/// (a task in an uninterruptible sleep delays it); not being done by then
/// is an error, but the group stays set to freeze.
pub fn set_frozen(
    version: Version,
    dir: &Path,
    frozen: bool,
    wait: Duration,
) -> Result<(), String> {
    let (file, value) = match (version, frozen) {
        (Version::V1, true) => ("freezer.state", "FROZEN"),
        (Version::V1, false) => ("freezer.state", "THAWED"),
        (Version::V2, true) => ("cgroup.freeze", "1"),
        (Version::V2, false) => ("cgroup.freeze", "0"),
    };
    write(&dir.join(file), value)?;
    if !frozen {
        return Ok(());
    }
    let deadline = Instant::now() + wait;
    loop {
        if is_frozen(version, dir) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!("{} is not frozen after {:?}", dir.display(), wait));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Usage read from the cgroup when the job ends (or live, for sstat).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_usec: Option<u64>,
    /// Peak memory of the job, KiB.
    pub mem_peak_kb: Option<u64>,
    /// Current memory, KiB.
    pub mem_now_kb: Option<u64>,
}

/// The cgroups of one job (from its [`Plan`]).
#[derive(Debug, Clone)]
pub struct JobCgroup {
    pub plan: Plan,
    /// What its groups held before the job (kept groups: [`pool`]).
    pub base: Base,
}

impl JobCgroup {
    pub fn open(plan: Plan) -> JobCgroup {
        JobCgroup {
            plan,
            base: Base::default(),
        }
    }

    pub(super) fn mount(&self, ctrl: &str) -> Option<&Path> {
        self.plan
            .v1_mounts
            .iter()
            .find(|(c, _)| c == ctrl)
            .map(|(_, p)| p.as_path())
    }

    /// (controller, job directory) for every hierarchy this job uses.
    pub(super) fn job_dirs(&self) -> Vec<(&str, PathBuf)> {
        match self.plan.version {
            Version::V2 => vec![("", self.plan.root.join(&self.plan.job_rel))],
            Version::V1 => {
                let mut out = Vec::new();
                for (ctrl, mount) in &self.plan.v1_mounts {
                    if self.uses(ctrl)
                        && !out
                            .iter()
                            .any(|(_, p): &(&str, PathBuf)| *p == mount.join(&self.plan.job_rel))
                    {
                        out.push((ctrl.as_str(), mount.join(&self.plan.job_rel)));
                    }
                }
                out
            }
        }
    }

    /// Does the job have a group in the v1 hierarchy of `ctrl`? Every
    /// hierarchy joined costs an attach (slow under concurrency: see
    /// docs/benchmarks.md), so only what is needed: freezer (kill), memory
    /// (limit, OOM counter, peak), cpuset/devices when constrained. CPU
    /// time comes from the supervisor's rusage (it reaps every process of
    /// the job) and /proc while the job runs.
    pub(super) fn uses(&self, ctrl: &str) -> bool {
        match ctrl {
            "freezer" | "memory" => true,
            "cpuset" => self.plan.cpus.is_some(),
            "devices" => self.plan.devices || !self.plan.deny.is_empty(),
            _ => false,
        }
    }

    /// The directory of the hierarchy holding `ctrl` (v2: the one group).
    pub(super) fn dir_of(&self, ctrl: &str) -> Option<PathBuf> {
        match self.plan.version {
            Version::V2 => Some(self.plan.root.join(&self.plan.job_rel)),
            Version::V1 => self.mount(ctrl).map(|m| m.join(&self.plan.job_rel)),
        }
    }

    /// [`JobCgroup::create`], taking a node's kept groups where there
    /// is one (v1, see [`pool`]); a kept group that cannot be set up is
    /// removed (with a warning) and the groups made afresh.
    pub fn create_or_reuse(&mut self) -> Result<Vec<String>, String> {
        let note = match pool::claim(self) {
            Ok(Some((base, warn))) => {
                self.base = base;
                return Ok(warn);
            }
            Ok(None) => None,
            Err(e) => {
                let _ = self.remove();
                Some(format!(
                    "a kept cgroup could not be reused ({e}): made afresh"
                ))
            }
        };
        let mut warn = self.create()?;
        warn.extend(note);
        Ok(warn)
    }

    /// At the job's usual end: keep its groups for the node's next job
    /// where they may be (see [`pool`]), else remove them.
    pub fn release(&self) -> Result<(), String> {
        if pool::keep(self) {
            return Ok(());
        }
        self.remove()
    }

    /// Create the job and step groups and set the limits. Returns warnings
    /// (limits the kernel cannot apply here); an error means the job must
    /// not start.
    pub fn create(&self) -> Result<Vec<String>, String> {
        let mut warn = Vec::new();
        let p = &self.plan;
        match p.version {
            Version::V1 => {
                for (ctrl, dir) in self.job_dirs() {
                    self.create_v1(ctrl, &dir, &mut warn)?;
                }
            }
            Version::V2 => {
                let dir = p.root.join(&p.job_rel);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                v2_enable_down(&p.root, &p.job_rel)?;
                if let Some(m) = p.mem_bytes {
                    let f = dir.join("memory.max");
                    if !f.exists() {
                        return Err(format!(
                            "ConstrainRAMSpace: the memory controller is not available in {}",
                            p.root.display()
                        ));
                    }
                    write(&f, &m.to_string())?;
                    let sw = dir.join("memory.swap.max");
                    match p.memsw_bytes {
                        Some(s) if sw.exists() => write(&sw, &s.saturating_sub(m).to_string())?,
                        Some(_) => warn.push(
                            "ConstrainSwapSpace: the kernel has no swap accounting (memory.swap.max missing)"
                                .to_string(),
                        ),
                        None => {}
                    }
                }
                if let Some(c) = &p.cpus {
                    let f = dir.join("cpuset.cpus");
                    if !f.exists() {
                        return Err(format!(
                            "ConstrainCores: the cpuset controller is not available in {}",
                            p.root.display()
                        ));
                    }
                    write(&f, c)?;
                }
                if !p.deny.is_empty() {
                    super::bpf::attach_deny(&dir, &p.deny)?;
                }
                let step = dir.join(BATCH_STEP);
                std::fs::create_dir_all(&step)
                    .map_err(|e| format!("cannot create {}: {e}", step.display()))?;
            }
        }
        Ok(warn)
    }

    /// One v1 hierarchy's job and step groups with their limits. The
    /// node's directory is opened once and everything below is named
    /// relative to it (see [`Dir`]): no path walk per control file.
    pub(super) fn create_v1(
        &self,
        ctrl: &str,
        dir: &Path,
        warn: &mut Vec<String>,
    ) -> Result<(), String> {
        let p = &self.plan;
        let (Some(node_dir), Some(job_name)) = (dir.parent(), dir.file_name()) else {
            return Err(format!("bad cgroup path {}", dir.display()));
        };
        let job_name = job_name.to_string_lossy();
        let node = match Dir::open(node_dir) {
            Ok(d) => d,
            // Removed behind the agent's back: make the path again.
            Err(_) => {
                std::fs::create_dir_all(node_dir)
                    .map_err(|e| format!("cannot create {}: {e}", node_dir.display()))?;
                if ctrl == "cpuset" {
                    self.cpuset_inherit_node()?;
                }
                Dir::open(node_dir)
                    .map_err(|e| format!("cannot open {}: {e}", node_dir.display()))?
            }
        };
        node.mkdir(&job_name)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let job = node
            .sub(&job_name)
            .map_err(|e| format!("cannot open {}: {e}", dir.display()))?;
        let step_path = dir.join(BATCH_STEP);
        match ctrl {
            "memory" => {
                self.memory_limits(&job, dir, false, warn)?;
                job.mkdir(BATCH_STEP)
                    .map_err(|e| format!("cannot create {}: {e}", step_path.display()))?;
            }
            "cpuset" => {
                // Before the CPUs are set (see `no_load_balance`).
                let _ = job.write("cpuset.sched_load_balance", b"0");
                let cpus = p.cpus.clone().unwrap_or_default();
                let mut mems = node.read("cpuset.mems").unwrap_or_default();
                if mems.trim().is_empty() || put(&job, dir, "cpuset.cpus", &cpus).is_err() {
                    // A level above lost its CPUs or memory nodes (set
                    // once at agent start): give them their parent's
                    // again, then try once more.
                    self.cpuset_inherit_node()?;
                    put(&job, dir, "cpuset.cpus", &cpus)?;
                    mems = node.read("cpuset.mems").unwrap_or_default();
                }
                let mems = mems.trim();
                put(&job, dir, "cpuset.mems", mems)?;
                job.mkdir(BATCH_STEP)
                    .map_err(|e| format!("cannot create {}: {e}", step_path.display()))?;
                let step = job
                    .sub(BATCH_STEP)
                    .map_err(|e| format!("cannot open {}: {e}", step_path.display()))?;
                let _ = step.write("cpuset.sched_load_balance", b"0");
                put(&step, &step_path, "cpuset.cpus", &cpus)?;
                put(&step, &step_path, "cpuset.mems", mems)?;
            }
            "devices" => {
                self.deny_devices(&job, dir)?;
                job.mkdir(BATCH_STEP)
                    .map_err(|e| format!("cannot create {}: {e}", step_path.display()))?;
            }
            _ => job
                .mkdir(BATCH_STEP)
                .map_err(|e| format!("cannot create {}: {e}", step_path.display()))?,
        }
        Ok(())
    }

    /// v1 memory limits on the job's group. A kept group (`reused`) may
    /// hold an earlier job's: each is written, "-1" where this job has
    /// none, swap first lifted so that it never falls below the RAM limit.
    pub(super) fn memory_limits(
        &self,
        job: &Dir,
        dir: &Path,
        reused: bool,
        warn: &mut Vec<String>,
    ) -> Result<(), String> {
        let p = &self.plan;
        let memsw = |v: &str, warn: &mut Vec<String>| match job
            .write("memory.memsw.limit_in_bytes", v.as_bytes())
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if p.memsw_bytes.is_some() {
                    warn.push(
                        "ConstrainSwapSpace: the kernel has no swap accounting (memory.memsw.* missing)"
                            .to_string(),
                    );
                }
                Ok(())
            }
            Err(e) => Err(format!(
                "cannot write {v:?} to {}: {e}",
                dir.join("memory.memsw.limit_in_bytes").display()
            )),
        };
        if reused {
            memsw("-1", &mut Vec::new())?;
        }
        let ram = match p.mem_bytes {
            Some(m) => m.to_string(),
            None if reused => "-1".to_string(),
            None => return Ok(()),
        };
        put(job, dir, "memory.limit_in_bytes", &ram)?;
        match (p.mem_bytes, p.memsw_bytes) {
            (Some(_), Some(s)) => memsw(&s.to_string(), warn),
            _ => Ok(()),
        }
    }

    /// v1 device rules on the job's group (its steps inherit them).
    pub(super) fn deny_devices(&self, job: &Dir, dir: &Path) -> Result<(), String> {
        for d in &self.plan.deny {
            let rule = format!("c {}:{} rwm", d.major, d.minor);
            put(job, dir, "devices.deny", &rule)?;
        }
        Ok(())
    }

    /// v1 cpuset: every level above the job's group gets its parent's CPUs
    /// and memory nodes where it has none.
    fn cpuset_inherit_node(&self) -> Result<(), String> {
        let mount = self.mount("cpuset").unwrap_or(Path::new("/"));
        let parent_rel = Path::new(&self.plan.job_rel)
            .parent()
            .map(|x| x.to_string_lossy().into_owned())
            .unwrap_or_default();
        cpuset_inherit_path(mount, &parent_rel)
    }

    /// The join files of the batch step ([`Version::join_file`]), for the
    /// script's child to write `0` (itself) into before it execs.
    pub fn join_files(&self) -> Vec<CString> {
        let file = self.plan.version.join_file();
        self.job_dirs()
            .into_iter()
            .filter_map(|(_, d)| {
                CString::new(
                    d.join(BATCH_STEP)
                        .join(file)
                        .into_os_string()
                        .into_encoded_bytes(),
                )
                .ok()
            })
            .collect()
    }

    /// How many processes the kernel's OOM killer killed in the job.
    pub fn oom_kills(&self) -> u64 {
        let Some(dir) = self.dir_of("memory") else {
            return 0;
        };
        match self.plan.version {
            // v1 counts a kill only in the group of the killed task (no
            // propagation to ancestors): add up the job's whole tree.
            Version::V1 => {
                let mut total = 0;
                sum_tree(&dir, "memory.oom_control", "oom_kill", &mut total, 0);
                total.saturating_sub(self.base.oom_kills)
            }
            Version::V2 => read(&dir.join("memory.events"))
                .and_then(|t| keyed(&t, "oom_kill"))
                .unwrap_or(0),
        }
    }

    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        match self.plan.version {
            Version::V1 => {
                if let Some(d) = self.dir_of("memory") {
                    // Less what a kept group held before the job.
                    let num = |f: &str| {
                        read(&d.join(f))
                            .and_then(|t| t.trim().parse::<u64>().ok())
                            .map(|b| b.saturating_sub(self.base.mem_bytes) / 1024)
                    };
                    u.mem_peak_kb = num("memory.max_usage_in_bytes");
                    u.mem_now_kb = num("memory.usage_in_bytes");
                }
            }
            Version::V2 => {
                let d = self.plan.root.join(&self.plan.job_rel);
                u.cpu_usec = read(&d.join("cpu.stat")).and_then(|t| keyed(&t, "usage_usec"));
                let num = |f: &str| {
                    read(&d.join(f))
                        .and_then(|t| t.trim().parse::<u64>().ok())
                        .map(|b| b / 1024)
                };
                u.mem_peak_kb = num("memory.peak");
                u.mem_now_kb = num("memory.current");
            }
        }
        u
    }

    /// Every process in the job's groups (job and step directories).
    pub fn pids(&self) -> Vec<i32> {
        let Some(dir) = self.dir_of("freezer") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        collect_pids(&dir, &mut out, 0);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The processes of one group under the job's (`step_batch`,
    /// `step_<id>`) and its sub-groups, sorted (scontrol listpids).
    pub fn group_pids(&self, group: &str) -> Vec<i32> {
        let Some(dir) = self.dir_of("freezer") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        collect_pids(&dir.join(group), &mut out, 0);
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Thaw the job's groups (a suspended job about to be killed: signals
    /// other than SIGKILL reach frozen tasks only once they are thawed).
    pub fn thaw(&self) {
        if let Some(dir) = self.dir_of("freezer") {
            if dir.exists() {
                let _ = set_frozen(self.plan.version, &dir, false, Duration::ZERO);
            }
        }
    }

    /// Kill every process of the job: v2 `cgroup.kill`; v1 freeze the
    /// group (so nothing forks while we look), SIGKILL all, thaw.
    pub fn kill_all(&self) {
        let Some(dir) = self.dir_of("freezer") else {
            return;
        };
        // The usual end: the job's processes are all gone already.
        if self.pids().is_empty() {
            return;
        }
        if self.plan.version == Version::V2 {
            let f = dir.join("cgroup.kill");
            if f.exists() && std::fs::write(&f, "1").is_ok() {
                return;
            }
        }
        let frozen = match self.plan.version {
            Version::V1 => std::fs::write(dir.join("freezer.state"), "FROZEN").is_ok(),
            Version::V2 => std::fs::write(dir.join("cgroup.freeze"), "1").is_ok(),
        };
        if frozen {
            let deadline = Instant::now() + Duration::from_millis(500);
            while Instant::now() < deadline {
                let done = match self.plan.version {
                    Version::V1 => {
                        read(&dir.join("freezer.state")).is_some_and(|s| s.trim() == "FROZEN")
                    }
                    Version::V2 => read(&dir.join("cgroup.events"))
                        .and_then(|t| keyed(&t, "frozen"))
                        .is_some_and(|v| v == 1),
                };
                if done {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        for pid in self.pids() {
            let _ = drover_proto::sys::kill(pid, libc::SIGKILL);
        }
        match self.plan.version {
            Version::V1 => {
                let _ = std::fs::write(dir.join("freezer.state"), "THAWED");
            }
            Version::V2 => {
                let _ = std::fs::write(dir.join("cgroup.freeze"), "0");
            }
        }
    }

    /// Remove the step and job groups (retrying while the last processes
    /// finish exiting).
    pub fn remove(&self) -> Result<(), String> {
        // v1 steps' cpuacct groups (see `step.rs`), when no other part of
        // the job lives in that hierarchy.
        if self.plan.version == Version::V1 {
            if let Some(m) = self.mount("cpuacct") {
                let d = m.join(&self.plan.job_rel);
                if !self.job_dirs().iter().any(|(_, x)| *x == d) {
                    let _ = remove_tree(&d);
                }
            }
        }
        let mut last_err = None;
        for (_, dir) in self.job_dirs() {
            if remove_job_and_batch(&dir) {
                continue;
            }
            let deadline = Instant::now() + Duration::from_secs(2);
            loop {
                match remove_tree(&dir) {
                    Ok(()) => break,
                    Err(e) if Instant::now() < deadline => {
                        let _ = e;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => {
                        last_err = Some(format!("cannot remove {}: {e}", dir.display()));
                        break;
                    }
                }
            }
        }
        match last_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Write a control file of `d` (at path `at`, for the message).
pub(super) fn put(d: &Dir, at: &Path, f: &str, v: &str) -> Result<(), String> {
    d.write(f, v.as_bytes())
        .map_err(|e| format!("cannot write {v:?} to {}: {e}", at.join(f).display()))
}

pub(super) fn sum_tree(dir: &Path, file: &str, key: &str, total: &mut u64, depth: u32) {
    if let Some(v) = read(&dir.join(file)).and_then(|t| keyed(&t, key)) {
        *total += v;
    }
    if depth > 8 {
        return;
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                sum_tree(&e.path(), file, key, total, depth + 1);
            }
        }
    }
}

fn collect_pids(dir: &Path, out: &mut Vec<i32>, depth: u32) {
    if let Some(t) = read(&dir.join("cgroup.procs")) {
        out.extend(t.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    if depth > 8 {
        return;
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_pids(&e.path(), out, depth + 1);
            }
        }
    }
}

/// The usual end: the job's group holds only `step_batch` and no process
/// is left. Two rmdirs relative to the node's directory, no listing; false
/// when that was not enough (other groups below, processes still exiting).
fn remove_job_and_batch(dir: &Path) -> bool {
    let (Some(node), Some(name)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str())) else {
        return false;
    };
    let Ok(node) = Dir::open(node) else {
        return !dir.exists();
    };
    let gone = |r: std::io::Result<()>| match r {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    };
    gone(node.rmdir(&format!("{name}/{BATCH_STEP}"))) && gone(node.rmdir(name))
}

/// rmdir a cgroup directory and its sub-groups, deepest first (cgroup
/// directories are removed with rmdir even though they list files).
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            remove_tree(&e.path())?;
        }
    }
    std::fs::remove_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_files() {
        let t = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed(t, "oom_kill"), Some(3));
        assert_eq!(
            keyed("usage_usec 12\nuser_usec 5\n", "usage_usec"),
            Some(12)
        );
        assert_eq!(keyed("", "oom_kill"), None);
    }
}
