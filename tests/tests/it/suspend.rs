//! Job suspend/resume (`scontrol suspend|resume`) and `PreemptMode=SUSPEND`:
//! the job's processes really stop (frozen cgroup, or SIGSTOP without
//! cgroups), suspended time does not count towards the time limit, and a
//! job suspended by preemption resumes when its CPUs are free again.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

const T: Duration = Duration::from_secs(30);

/// A script that appends a line to `file` every 0.1 s, forever or `n` times.
fn counter(file: &Path, n: Option<u32>) -> String {
    let f = file.display();
    match n {
        None => format!("#!/bin/sh\nwhile true; do echo x >> {f}; sleep 0.1; done\n"),
        Some(n) => format!(
            "#!/bin/sh\ni=0\nwhile [ $i -lt {n} ]; do i=$((i+1)); echo x >> {f}; sleep 0.1; done\n"
        ),
    }
}

fn lines(file: &Path) -> usize {
    std::fs::read_to_string(file).map_or(0, |t| t.lines().count())
}

/// Wait until `file` has grown by `by` lines.
fn grows(file: &Path, by: usize) {
    let start = lines(file);
    let deadline = Instant::now() + T;
    while lines(file) < start + by {
        assert!(
            Instant::now() < deadline,
            "{} stopped growing at {} lines",
            file.display(),
            lines(file)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until none of `files` has changed for a second (the stop reached
/// the processes), then require that they stay so for another second.
fn stopped(files: &[PathBuf]) {
    let deadline = Instant::now() + T;
    let mut last: Vec<usize> = files.iter().map(|f| lines(f)).collect();
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_secs(1) {
        assert!(
            Instant::now() < deadline,
            "{files:?} never stopped growing: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
        let now: Vec<usize> = files.iter().map(|f| lines(f)).collect();
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        let now: Vec<usize> = files.iter().map(|f| lines(f)).collect();
        assert_eq!(now, last, "a suspended job went on");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn squeue_state(c: &Cluster, id: u32) -> String {
    c.ok("squeue", &["-h", "-j", &id.to_string(), "-o", "%t"])
        .trim()
        .to_string()
}

fn scontrol(c: &Cluster, args: &[&str]) -> (bool, String) {
    let o = c.run("scontrol", args);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn freezer_state(c: &Cluster, node: &str, id: u32) -> Option<String> {
    let p = format!(
        "/sys/fs/cgroup/freezer/drover/{node}_{}/job_{id}/freezer.state",
        c.agent_port
    );
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn wait_reason(c: &Cluster, id: u32, want: &str) {
    let deadline = Instant::now() + T;
    loop {
        let r = c.job_field(&id.to_string(), "Reason").unwrap_or_default();
        if r == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "job {id}: reason {r}, want {want}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn time_field(c: &Cluster, id: u32, key: &str) -> i64 {
    let v = c.job_field(&id.to_string(), key).unwrap_or_default();
    let o = std::process::Command::new("date")
        .args(["-d", &v, "+%s"])
        .output()
        .expect("date");
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{key}={v:?} is not a time"))
}

#[test]
fn suspend_stops_the_job_resume_continues_it_cancel_ends_it() {
    let c = Cluster::start(Spec::default());
    let count = c.path().join("count");
    let id = c.sbatch(&["--time=10", "-o", "/dev/null"], &counter(&count, None));
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], T);
    grows(&count, 3);

    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(ok, "{err}");
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("SUSPENDED"));
    assert_eq!(squeue_state(&c, id), "S");
    assert_ne!(c.job_field(&sid, "SuspendTime").as_deref(), Some("None"));
    let run_before = c.job_field(&sid, "RunTime");
    stopped(std::slice::from_ref(&count));
    // RunTime stands still while suspended (it is SecsPreSuspend).
    assert_eq!(c.job_field(&sid, "RunTime"), run_before);
    // With cgroups (root, v1 here) the job's group is frozen.
    if let Some(s) = freezer_state(&c, "node1", id) {
        assert_eq!(s, "FROZEN");
    }
    // Twice is an error, as in Slurm.
    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(!ok && err.contains("Job is not running"), "{err}");

    // srun in a suspended job waits for the resume (Slurm retries too).
    let mut srun = c
        .cmd("srun")
        .env("SLURM_JOB_ID", &sid)
        .args(["--overlap", "-n1", "echo", "step-ran"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("srun");
    let suspended_for = 2;
    std::thread::sleep(Duration::from_secs(suspended_for));
    assert!(srun.try_wait().unwrap().is_none(), "srun did not wait");
    let (ok, err) = scontrol(&c, &["resume", &sid]);
    assert!(ok, "{err}");
    let o = srun.wait_with_output().unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("step-ran"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("RUNNING"));
    grows(&count, 3);
    if let Some(s) = freezer_state(&c, "node1", id) {
        assert_eq!(s, "THAWED");
    }
    // The end of the time limit moved on by the time suspended.
    let (start, end) = (
        time_field(&c, id, "StartTime"),
        time_field(&c, id, "EndTime"),
    );
    let moved = end - start - 600;
    assert!(
        (suspended_for as i64..=suspended_for as i64 + 10).contains(&moved),
        "EndTime moved by {moved}s"
    );

    // Suspended again, then cancelled: thawed and killed.
    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(ok, "{err}");
    stopped(std::slice::from_ref(&count));
    c.ok("scancel", &[&sid]);
    c.expect_end(id, "CANCELLED");
    let (ok, err) = scontrol(&c, &["resume", &sid]);
    assert!(
        !ok && err.contains("Job/step already completing or completed"),
        "{err}"
    );
}

#[test]
fn suspend_is_for_operators_and_running_jobs_only() {
    let c = Cluster::start(Spec::default());
    // A job of user nobody: not even its owner may suspend it.
    let o = c.run_as(
        65534,
        "sbatch",
        &["-D", "/tmp", "-o", "/dev/null", "--wrap", "sleep 300"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .last()
        .unwrap()
        .to_string();
    c.wait_state(&theirs, &["RUNNING"], T);
    let o = c.run_as(65534, "scontrol", &["suspend", &theirs]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("slurm_suspend error: Access/permission denied"),
        "{err}"
    );
    assert_eq!(c.job_field(&theirs, "JobState").as_deref(), Some("RUNNING"));
    // Root may; then the owner may not resume it either.
    let (ok, err) = scontrol(&c, &["suspend", &theirs]);
    assert!(ok, "{err}");
    let o = c.run_as(65534, "scontrol", &["resume", &theirs]);
    assert!(!o.status.success());
    let (ok, err) = scontrol(&c, &["resume", &theirs]);
    assert!(ok, "{err}");
    let (ok, err) = scontrol(&c, &["resume", &theirs]);
    assert!(!ok && err.contains("Job is not suspended"), "{err}");

    // A pending job.
    let held = c.sbatch(&["-H", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let (ok, err) = scontrol(&c, &["suspend", &held.to_string()]);
    assert!(!ok && err.contains("Job is pending execution"), "{err}");
    c.ok("scancel", &[&theirs, &held.to_string()]);
}

#[test]
fn suspended_time_does_not_count_towards_the_time_limit() {
    let c = Cluster::start(Spec::default());
    let count = c.path().join("count");
    // About 45 s of work under a 1-minute limit, suspended for 20 s: it
    // would be killed at 60 s if the suspension counted.
    let id = c.sbatch(
        &["--time=1", "-o", "/dev/null"],
        &format!(
            "#!/bin/sh\ni=0\nwhile [ $i -lt 180 ]; do i=$((i+1)); echo x >> {}; sleep 0.25; done\n",
            count.display()
        ),
    );
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], T);
    grows(&count, 8);
    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(ok, "{err}");
    stopped(std::slice::from_ref(&count));
    std::thread::sleep(Duration::from_secs(18));
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("SUSPENDED"));
    let (ok, err) = scontrol(&c, &["resume", &sid]);
    assert!(ok, "{err}");
    let got = c.wait_state(
        &sid,
        &["COMPLETED", "TIMEOUT", "FAILED", "CANCELLED"],
        Duration::from_secs(120),
    );
    assert_eq!(
        got,
        "COMPLETED",
        "{}",
        c.ok("scontrol", &["show", "job", &sid])
    );
    assert_eq!(lines(&count), 180);
}

#[test]
fn suspension_survives_controller_and_agent_restarts() {
    let mut c = Cluster::start(Spec::default());
    let count = c.path().join("count");
    let id = c.sbatch(&["-o", "/dev/null"], &counter(&count, None));
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], T);
    grows(&count, 3);
    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(ok, "{err}");
    stopped(std::slice::from_ref(&count));

    c.kill_ctld();
    c.start_ctld().expect("controller restarts");
    c.wait_state(&sid, &["SUSPENDED"], T);
    c.kill_agent();
    c.start_agent().expect("agent restarts");
    stopped(std::slice::from_ref(&count));
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("SUSPENDED"));

    let (ok, err) = scontrol(&c, &["resume", &sid]);
    assert!(ok, "{err}");
    grows(&count, 3);
    c.ok("scancel", &[&sid]);
    c.expect_end(id, "CANCELLED");
}

#[test]
fn steps_are_stopped_too_without_cgroups() {
    let c = Cluster::start(Spec {
        files: vec![("cgroup.conf".into(), "CgroupPlugin=disabled\n".into())],
        ..Spec::default()
    });
    let dir = c.path().display().to_string();
    let id = c.sbatch(
        &["-N2", "-n2", "-o", "/dev/null"],
        &format!(
            "#!/bin/sh\nsrun -N2 -n2 sh -c 'while true; do echo x >> {dir}/step.$SLURM_PROCID; sleep 0.1; done' &\n\
             while true; do echo x >> {dir}/batch; sleep 0.1; done\n"
        ),
    );
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], T);
    let files: Vec<PathBuf> = ["batch", "step.0", "step.1"]
        .iter()
        .map(|f| c.path().join(f))
        .collect();
    for f in &files {
        grows(f, 3);
    }
    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(ok, "{err}");
    stopped(&files);
    let (ok, err) = scontrol(&c, &["resume", &sid]);
    assert!(ok, "{err}");
    for f in &files {
        grows(f, 3);
    }
    let (ok, err) = scontrol(&c, &["suspend", &sid]);
    assert!(ok, "{err}");
    stopped(&files);
    c.ok("scancel", &[&sid]);
    c.expect_end(id, "CANCELLED");
}

#[test]
fn preempt_mode_suspend_lends_the_cpus_and_resumes_the_victim() {
    let c = Cluster::start(Spec {
        nodes: 1,
        extra: vec![
            "PreemptType=preempt/partition_prio".into(),
            "PreemptMode=SUSPEND".into(),
        ],
        topology: Some(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000\n\
             PartitionName=low Nodes=ALL Default=YES PriorityTier=1 MaxTime=UNLIMITED State=UP\n\
             PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED State=UP\n"
                .into(),
        ),
        ..Spec::default()
    });
    let count = c.path().join("count");
    // 4 CPUs and 3000 MB: the preemptor gets the CPUs, not the memory.
    let low = c.sbatch(
        &["-p", "low", "-n", "4", "--mem=3000", "-o", "/dev/null"],
        &counter(&count, Some(80)),
    );
    let slow = low.to_string();
    c.wait_state(&slow, &["RUNNING"], T);
    grows(&count, 3);
    // A high job that would need the victim's memory preempts nothing:
    // suspending frees CPUs, not memory.
    let greedy = c.sbatch(
        &["-p", "high", "-n", "1", "--mem=1500", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    wait_reason(&c, greedy, "Resources");
    assert_eq!(c.job_field(&slow, "JobState").as_deref(), Some("RUNNING"));
    c.ok("scancel", &[&greedy.to_string()]);
    let flag = c.path().join("high.go");
    let high = c.sbatch(
        &["-p", "high", "-n", "2", "--mem=1000", "-o", "/dev/null"],
        &format!(
            "#!/bin/sh\nwhile [ ! -e {} ]; do sleep 0.1; done\n",
            flag.display()
        ),
    );
    c.wait_state(&high.to_string(), &["RUNNING"], T);
    assert_eq!(c.job_field(&slow, "JobState").as_deref(), Some("SUSPENDED"));
    stopped(std::slice::from_ref(&count));
    let before = lines(&count);
    // Two CPUs are free but lent by the suspended job: a lower job waits.
    let other = c.sbatch(
        &["-p", "low", "-n", "1", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    let sother = other.to_string();
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        assert_eq!(c.job_field(&sother, "JobState").as_deref(), Some("PENDING"));
        std::thread::sleep(Duration::from_millis(100));
    }
    // A job that needs the suspended job's memory does not preempt anything.
    let big = c.sbatch(
        &["-p", "high", "-n", "1", "--mem=1000", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        c.job_field(&big.to_string(), "JobState").as_deref(),
        Some("PENDING")
    );
    c.ok("scancel", &[&big.to_string()]);

    // The preemptor ends: the victim resumes (before the lower job) and
    // completes; then the lower job runs.
    std::fs::write(&flag, "").unwrap();
    c.expect_end(high, "COMPLETED");
    c.expect_end(low, "COMPLETED");
    assert_eq!(lines(&count), 80);
    assert!(before < 80);
    c.expect_end(other, "COMPLETED");
    let (ls, os) = (
        time_field(&c, low, "EndTime"),
        time_field(&c, other, "StartTime"),
    );
    assert!(
        os >= ls,
        "the lower job started at {os}, the victim ended at {ls}"
    );
}

#[test]
fn accounting_operators_may_suspend_any_job() {
    let c = Cluster::start(Spec {
        nodes: 1,
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    c.ok("sacctmgr", &["-i", "add", "account", "ops"]);
    c.ok(
        "sacctmgr",
        &[
            "-i",
            "add",
            "user",
            "nobody",
            "account=ops",
            "AdminLevel=Operator",
        ],
    );
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 300\n");
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], T);
    // The controller learns the operator from accounting shortly.
    let deadline = Instant::now() + T;
    loop {
        let o = c.run_as(65534, "scontrol", &["suspend", &sid]);
        if o.status.success() {
            break;
        }
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(err.contains("Access/permission denied"), "{err}");
        assert!(Instant::now() < deadline, "operator never allowed: {err}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("SUSPENDED"));
    let o = c.run_as(65534, "scontrol", &["resume", &sid]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(c.job_field(&sid, "JobState").as_deref(), Some("RUNNING"));
    c.ok("scancel", &[&sid]);
}

#[test]
fn qos_preemption_with_suspend() {
    let c = Cluster::start(Spec {
        nodes: 1,
        accounting: Some("sqlite".into()),
        extra: vec![
            "PreemptType=preempt/qos".into(),
            "PreemptMode=SUSPEND".into(),
        ],
        ..Spec::default()
    });
    c.ok(
        "sacctmgr",
        &["-i", "add", "qos", "urgent", "Preempt=normal"],
    );
    let count = c.path().join("count");
    let low = c.sbatch(&["-n", "4", "-o", "/dev/null"], &counter(&count, Some(60)));
    let slow = low.to_string();
    c.wait_state(&slow, &["RUNNING"], T);
    let flag = c.path().join("urgent.go");
    let script = format!(
        "#!/bin/sh\nwhile [ ! -e {} ]; do sleep 0.1; done\n",
        flag.display()
    );
    // The controller learns the new QOS from accounting shortly.
    let deadline = Instant::now() + T;
    let high = loop {
        let p = c.script(&format!("urgent-{}.sh", drover_tests::unique()), &script);
        let o = c.run(
            "sbatch",
            &[
                "--parsable",
                "--qos=urgent",
                "-n",
                "4",
                "-o",
                "/dev/null",
                p.to_str().unwrap(),
            ],
        );
        if o.status.success() {
            break String::from_utf8_lossy(&o.stdout).trim().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    c.wait_state(&high, &["RUNNING"], T);
    assert_eq!(c.job_field(&slow, "JobState").as_deref(), Some("SUSPENDED"));
    stopped(std::slice::from_ref(&count));
    std::fs::write(&flag, "").unwrap();
    c.wait_state(&high, &["COMPLETED"], T);
    c.expect_end(low, "COMPLETED");
    assert_eq!(lines(&count), 60);
}

#[test]
fn preempt_mode_suspend_lends_gpus() {
    if !drover_tests::can_bind_devices() {
        return;
    }
    let devs = tempfile::tempdir().unwrap();
    drover_tests::fake_gpus(devs.path(), 2);
    let d = devs.path().display().to_string();
    let c = Cluster::start(Spec {
        nodes: 1,
        extra: vec![
            "GresTypes=gpu".into(),
            "PreemptType=preempt/partition_prio".into(),
            "PreemptMode=SUSPEND".into(),
        ],
        topology: Some(
            "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Gres=gpu:2\n\
             PartitionName=low Nodes=ALL Default=YES PriorityTier=1 MaxTime=UNLIMITED State=UP\n\
             PartitionName=high Nodes=ALL PriorityTier=10 MaxTime=UNLIMITED State=UP\n"
                .into(),
        ),
        files: vec![(
            "gres.conf".into(),
            format!("NodeName=node1 Name=gpu File={d}/nvidia[0-1]\n"),
        )],
        ..Spec::default()
    });
    let count = c.path().join("count");
    // One CPU but both GPUs: only the GPUs make the preemption necessary.
    let low = c.sbatch(
        &["-p", "low", "-n", "1", "--gres=gpu:2", "-o", "/dev/null"],
        &counter(&count, Some(60)),
    );
    let slow = low.to_string();
    c.wait_state(&slow, &["RUNNING"], T);
    let out = c.path().join("high.out");
    let high = c.sbatch(
        &[
            "-p",
            "high",
            "-n",
            "1",
            "--gres=gpu:1",
            "-o",
            out.to_str().unwrap(),
        ],
        "#!/bin/sh\necho gpus=$CUDA_VISIBLE_DEVICES\nsleep 1\n",
    );
    c.wait_state(&high.to_string(), &["RUNNING"], T);
    assert_eq!(c.job_field(&slow, "JobState").as_deref(), Some("SUSPENDED"));
    c.expect_end(high, "COMPLETED");
    assert!(std::fs::read_to_string(&out).unwrap().contains("gpus=0"));
    c.expect_end(low, "COMPLETED");
    assert_eq!(lines(&count), 60);
}
