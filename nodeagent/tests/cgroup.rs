//! The cgroup code against the real kernel: memory limits and the OOM
//! counter, cpusets, device denial (v1 `devices.deny` and the v2 BPF
//! program), killing everything, removal. Needs root and cgroups, as on
//! the CI machine; elsewhere each test says why it did nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use drover_conf::CgroupConf;
use drover_nodeagent::cgroup::job::JobCgroup;
use drover_nodeagent::cgroup::{char_dev, Dev, Plan, System, Version};

fn root() -> bool {
    drover_proto::sys::is_root()
}

fn system(plugin: &str, mountpoint: &str) -> Option<System> {
    if !root() {
        eprintln!("not root: cgroup test skipped");
        return None;
    }
    let conf = CgroupConf {
        cgroup_plugin: plugin.into(),
        cgroup_mountpoint: mountpoint.into(),
        ..Default::default()
    };
    match System::detect(&conf) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("no usable cgroups here ({e}): test skipped");
            None
        }
    }
}

/// A plan for a fresh job group under a per-test scope.
fn plan(sys: &System, job: u32) -> Plan {
    let port = 40000 + (std::process::id() % 20000) as u16;
    sys.prepare_node("cgtest", port).expect("prepare node");
    let inputs = sys.plan_inputs(port, 0, 1, &[], &|_| None);
    let mut p = Plan::build(
        &inputs,
        &drover_proto::LaunchRequest {
            job_id: job,
            node: "cgtest".into(),
            ..Default::default()
        },
    );
    p.mem_bytes = None;
    p
}

/// Run `sh -c script` inside the job's batch step.
fn run_in(cg: &JobCgroup, script: &str) -> Output {
    let files = cg.join_files();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(script);
    drover_proto::sys::join_cgroups_in_child(&mut cmd, files);
    cmd.output().expect("run sh in cgroup")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn job_dirs_gone(p: &Plan) -> bool {
    match p.version {
        Version::V2 => !p.root.join(&p.job_rel).exists(),
        Version::V1 => p
            .v1_mounts
            .iter()
            .all(|(_, m)| !m.join(&p.job_rel).exists()),
    }
}

/// Remove the per-test node directory once no other test of this run uses it.
fn cleanup_scope(p: &Plan) {
    let scope = Path::new(&p.job_rel).parent().unwrap().to_path_buf();
    let bases: Vec<PathBuf> = match p.version {
        Version::V2 => vec![p.root.clone()],
        Version::V1 => p.v1_mounts.iter().map(|(_, m)| m.clone()).collect(),
    };
    for b in bases {
        let _ = std::fs::remove_dir(b.join(&scope));
    }
}

#[test]
fn memory_limit_kills_and_is_counted() {
    let Some(sys) = system("autodetect", "/sys/fs/cgroup") else {
        return;
    };
    if sys.version == Version::V2 && !sys.root.join("cgroup.controllers").exists() {
        return;
    }
    let mut p = plan(&sys, 910_001);
    p.mem_bytes = Some(32 << 20);
    p.mem_request_mb = 32;
    let cg = JobCgroup::open(p.clone());
    if let Err(e) = cg.create() {
        if sys.version == Version::V2 {
            eprintln!("v2 without a memory controller: {e}");
            return;
        }
        panic!("create: {e}");
    }
    assert_eq!(cg.oom_kills(), 0);
    // 128 MiB of touched memory in a 32 MiB group: the kernel kills it.
    let o = run_in(&cg, r#"perl -e '$x = "a" x 134217728; print "survived\n"'"#);
    assert!(
        !text(&o).contains("survived") || cg.oom_kills() > 0,
        "{}",
        text(&o)
    );
    assert!(cg.oom_kills() >= 1, "OOM counter: {}", cg.oom_kills());
    let u = cg.usage();
    assert!(u.mem_peak_kb.unwrap_or(0) > 1024, "{u:?}");
    assert!(u.mem_peak_kb.unwrap_or(u64::MAX) <= 33 * 1024, "{u:?}");
    cg.kill_all();
    cg.remove().expect("remove");
    assert!(job_dirs_gone(&p));
    cleanup_scope(&p);
}

#[test]
fn cpuset_limits_affinity() {
    let Some(sys) = system("cgroup/v1", "/sys/fs/cgroup") else {
        return;
    };
    if !sys.v1_mounts.iter().any(|(c, _)| c == "cpuset") {
        return;
    }
    let mut p = plan(&sys, 910_002);
    p.cpus = Some("0".into());
    let cg = JobCgroup::open(p.clone());
    cg.create().expect("create");
    let o = run_in(&cg, "grep Cpus_allowed_list /proc/self/status");
    assert!(text(&o).contains("Cpus_allowed_list:\t0\n"), "{}", text(&o));
    cg.remove().expect("remove");
    assert!(job_dirs_gone(&p));
    cleanup_scope(&p);
}

/// Fake GPUs: char 195:N nodes in a temp dir (no driver: opening an
/// allowed one fails with ENXIO, a denied one with EPERM).
fn fake_gpus(dir: &Path, n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("nvidia{i}"));
            drover_proto::sys::mknod_char(&p, 195, i)
                .unwrap_or_else(|e| panic!("mknod {}: {e}", p.display()));
            p
        })
        .collect()
}

fn check_devices(sys: &System, job: u32) {
    let d = tempfile::tempdir().unwrap();
    let gpus = fake_gpus(d.path(), 2);
    assert_eq!(
        char_dev(gpus[1].to_str().unwrap()),
        Some(Dev {
            major: 195,
            minor: 1
        })
    );
    let mut p = plan(sys, job);
    p.deny = vec![Dev {
        major: 195,
        minor: 0,
    }];
    let cg = JobCgroup::open(p.clone());
    cg.create().expect("create");
    let o = run_in(
        &cg,
        &format!(
            "cat {} 2>&1; cat {} 2>&1; cat /dev/null && echo null-ok",
            gpus[0].display(),
            gpus[1].display()
        ),
    );
    let out = text(&o);
    assert!(out.contains("nvidia0: Operation not permitted"), "{out}");
    assert!(out.contains("nvidia1: No such device or address"), "{out}");
    assert!(out.contains("null-ok"), "{out}");
    cg.remove().expect("remove");
    assert!(job_dirs_gone(&p));
    // Outside the group both open as far as the missing driver allows.
    let o = Command::new("cat").arg(&gpus[0]).output().unwrap();
    assert!(
        text(&o).contains("No such device or address"),
        "{}",
        text(&o)
    );
}

#[test]
fn v1_devices_deny_unallocated_gpus() {
    let Some(sys) = system("cgroup/v1", "/sys/fs/cgroup") else {
        return;
    };
    if !sys.v1_mounts.iter().any(|(c, _)| c == "devices") {
        return;
    }
    check_devices(&sys, 910_003);
}

#[test]
fn v2_bpf_program_denies_unallocated_gpus() {
    let v2 = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .find_map(|m| system("cgroup/v2", m).filter(|s| s.version == Version::V2));
    let Some(sys) = v2 else {
        return;
    };
    check_devices(&sys, 910_004);
}

#[test]
fn kill_all_gets_double_forked_daemons() {
    let Some(sys) = system("autodetect", "/sys/fs/cgroup") else {
        return;
    };
    let p = plan(&sys, 910_005);
    let cg = JobCgroup::open(p.clone());
    cg.create().expect("create");
    // A daemon that escapes its parent (setsid + double fork).
    let o = run_in(
        &cg,
        "(setsid sh -c 'sleep 300 & sleep 300' >/dev/null 2>&1 &) ; echo started",
    );
    assert!(text(&o).contains("started"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while cg.pids().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pids = cg.pids();
    assert!(pids.len() >= 2, "daemons in the group: {pids:?}");
    cg.kill_all();
    // The sleepers are our grandchildren's children: init reaps them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !cg.pids().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(cg.pids().is_empty(), "left: {:?}", cg.pids());
    cg.remove().expect("remove");
    assert!(job_dirs_gone(&p));
    cleanup_scope(&p);
}

/// Suspend/resume: freezing the job group stops everything in it (and in
/// its step groups), thawing lets it go on, and a frozen job can be killed.
fn check_freeze(sys: &System, job: u32) {
    use drover_nodeagent::cgroup::job::{is_frozen, set_frozen};
    use std::time::{Duration, Instant};
    let p = plan(sys, job);
    let port = 40000 + (std::process::id() % 20000) as u16;
    let dir = sys.freezer_dir("cgtest", port, job).expect("freezer dir");
    let cg = JobCgroup::open(p.clone());
    cg.create().expect("create");
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("count");
    let o = run_in(
        &cg,
        &format!(
            "(while true; do echo x >> {}; sleep 0.02; done) >/dev/null 2>&1 & echo started",
            f.display()
        ),
    );
    assert!(text(&o).contains("started"));
    let lines = || std::fs::read_to_string(&f).map_or(0, |t| t.lines().count());
    let grows = |from: usize| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while lines() < from + 3 {
            assert!(Instant::now() < deadline, "not counting");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    grows(0);
    set_frozen(sys.version, &dir, true, Duration::from_secs(5)).expect("freeze");
    assert!(is_frozen(sys.version, &dir));
    let at = lines();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(lines(), at, "a frozen job went on");
    set_frozen(sys.version, &dir, false, Duration::ZERO).expect("thaw");
    assert!(!is_frozen(sys.version, &dir));
    grows(at);
    // Frozen again, then killed (the kill of a suspended job).
    set_frozen(sys.version, &dir, true, Duration::from_secs(5)).expect("freeze");
    cg.thaw();
    cg.kill_all();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cg.pids().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(cg.pids().is_empty(), "left: {:?}", cg.pids());
    cg.remove().expect("remove");
    assert!(job_dirs_gone(&p));
    cleanup_scope(&p);
}

#[test]
fn freezing_suspends_and_thawing_resumes() {
    if let Some(sys) = system("autodetect", "/sys/fs/cgroup") {
        check_freeze(&sys, 910_006);
    }
    let v2 = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
        .into_iter()
        .find_map(|m| system("cgroup/v2", m).filter(|s| s.version == Version::V2));
    if let Some(sys) = v2 {
        check_freeze(&sys, 910_007);
    }
}
