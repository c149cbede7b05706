//! Power saving and cloud nodes end to end: CLOUD nodes whose
//! ResumeProgram starts an agent of their own (an emulated instance) and
//! whose SuspendProgram stops it; idle nodes powered down after SuspendTime;
//! a job on powered-down nodes waits in CONFIGURING, then runs; a node that
//! never comes up goes DOWN and its job runs elsewhere; a controller killed
//! mid-resume neither loses the job nor resumes the node twice; failing
//! programs leave a reason on the node.

use std::fs;
use std::time::{Duration, Instant};

use drover_tests::{bin_dir, free_port, Cluster, Spec};

const WAIT: Duration = Duration::from_secs(60);

/// Resume: start one agent per node (after `delay` seconds, in the
/// background) and note the call; suspend: stop them. The agents' pids are
/// in `DIR/agent-NODE.pid`.
fn scripts(delay: u32) -> Vec<(String, String)> {
    let droverd = bin_dir().join("droverd").display().to_string();
    vec![
        (
            "resume.sh".into(),
            format!(
                "#!/bin/sh\necho \"$1\" >> {{DIR}}/resumed.log\n\
                 for n in $({{DIR}}/bin/scontrol show hostnames \"$1\"); do\n\
                 ( sleep {delay}; exec {droverd} -f {{DIR}}/drover.conf -N $n -D ) \
                 >>{{DIR}}/droverd-$n.log 2>&1 </dev/null &\n\
                 echo $! > {{DIR}}/agent-$n.pid\ndone\n"
            ),
        ),
        (
            "suspend.sh".into(),
            "#!/bin/sh\necho \"$1\" >> {DIR}/suspended.log\n\
             for n in $({DIR}/bin/scontrol show hostnames \"$1\"); do\n\
             [ -f {DIR}/agent-$n.pid ] && kill $(cat {DIR}/agent-$n.pid) && rm {DIR}/agent-$n.pid\n\
             done\nexit 0\n"
                .into(),
        ),
        (
            "resumefail.sh".into(),
            "#!/bin/sh\necho \"$1\" >> {DIR}/resumefail.log\n".into(),
        ),
        ("noop.sh".into(), "#!/bin/sh\nexit 0\n".into()),
        (
            "fail.sh".into(),
            "#!/bin/sh\necho 'cloud quota exceeded' >&2\nexit 3\n".into(),
        ),
        ("hang.sh".into(), "#!/bin/sh\nsleep 600\n".into()),
        // Not executable (no .sh).
        ("noexec".into(), "#!/bin/sh\nexit 0\n".into()),
    ]
}

/// node1 (always on, the harness's agent) and cloud[1-N], CLOUD nodes with
/// a port each, lighter (chosen first).
fn cluster(cloud: u32, delay: u32, extra: &[&str]) -> (Cluster, Vec<u16>) {
    cluster_addr(cloud, delay, extra, true)
}

/// [`cluster`], the cloud nodes' NodeAddr configured or not.
fn cluster_addr(cloud: u32, delay: u32, extra: &[&str], addr: bool) -> (Cluster, Vec<u16>) {
    let node_addr = if addr { "NodeAddr=127.0.0.1 " } else { "" };
    let ports: Vec<u16> = (0..cloud).map(|_| free_port()).collect();
    let mut topo = "NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=2 RealMemory=1000 \
                    Weight=100\n"
        .to_string();
    for (i, p) in ports.iter().enumerate() {
        topo.push_str(&format!(
            "NodeName=cloud{} {node_addr}Port={p} CPUs=2 RealMemory=1000 Weight=1 State=CLOUD\n",
            i + 1
        ));
    }
    topo.push_str("PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n");
    let mut lines: Vec<String> = vec![
        "SlurmdSpoolDir={DIR}/spool-%n".into(),
        "SuspendProgram={DIR}/suspend.sh".into(),
        "ResumeProgram={DIR}/resume.sh".into(),
        "ResumeFailProgram={DIR}/resumefail.sh".into(),
        "SuspendExcNodes=node1".into(),
        "PrivateData=cloud".into(),
        "SuspendTime=5".into(),
        "SuspendTimeout=2".into(),
        "ResumeTimeout=20".into(),
    ];
    lines.extend(extra.iter().map(|s| s.to_string()));
    let c = Cluster::start_any(Spec {
        nodes: 1,
        cpus: 2,
        mem_mb: 1000,
        topology: Some(topo),
        files: scripts(delay),
        extra: lines,
        ..Default::default()
    });
    c.wait_node("node1", "idle");
    (c, ports)
}

trait Power {
    fn node_state(&self, node: &str) -> String;
    fn wait_node(&self, node: &str, state: &str) -> String;
    fn node_field(&self, node: &str, key: &str) -> String;
}

impl Power for Cluster {
    /// sinfo's compact state of one node (`idle~`, `mix#`, ...).
    fn node_state(&self, node: &str) -> String {
        self.ok("sinfo", &["-h", "-N", "-n", node, "-o", "%t"])
            .trim()
            .to_string()
    }

    fn wait_node(&self, node: &str, state: &str) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let s = self.node_state(node);
            if s == state {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "{node} never {state} (last {s}):\n{}\n--- ctld\n{}",
                self.ok("scontrol", &["show", "node", node]),
                self.log_text("droverctld")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn node_field(&self, node: &str, key: &str) -> String {
        let text = self.ok("scontrol", &["show", "node", node]);
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{key}=")).map(str::to_string))
            .unwrap_or_default()
    }
}

/// The emulated instances this test started are stopped with it.
struct Instances(std::path::PathBuf);

impl Drop for Instances {
    fn drop(&mut self) {
        let Ok(dir) = fs::read_dir(&self.0) else {
            return;
        };
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with("agent-") && name.ends_with(".pid") {
                let pid = fs::read_to_string(e.path())
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok());
                if let Some(pid) = pid.filter(|&p| p > 1) {
                    let _ = drover_proto::sys::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

fn lines(c: &Cluster, file: &str) -> Vec<String> {
    fs::read_to_string(c.path().join(file))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn cloud_nodes_resume_for_a_job_and_power_down_when_idle() {
    let (c, _) = cluster(2, 0, &[]);
    let _g = Instances(c.path().to_path_buf());
    // CLOUD nodes start powered down.
    assert_eq!(c.node_state("cloud1"), "idle~");
    assert_eq!(c.node_field("cloud1", "State"), "IDLE+CLOUD+POWERED_DOWN");
    let out = c.path().join("out");
    let id = c.sbatch(
        &["-N2", "-w", "cloud[1-2]", "-o", &out.display().to_string()],
        "#!/bin/sh\necho ran on $SLURM_JOB_NODELIST\n",
    );
    let ids = id.to_string();
    // Waits for its nodes in CONFIGURING (unless they came up already).
    let st = c.wait_state(&ids, &["CONFIGURING", "RUNNING", "COMPLETED"], WAIT);
    assert_ne!(st, "PENDING");
    assert_eq!(c.wait_done(id), "COMPLETED", "{}", c.log_text("droverctld"));
    assert!(fs::read_to_string(&out)
        .unwrap_or_default()
        .contains("ran on cloud[1-2]"));
    assert_eq!(lines(&c, "resumed.log"), vec!["cloud[1-2]".to_string()]);
    // Idle again: powered down after SuspendTime (5 s) and SuspendTimeout.
    c.wait_node("cloud1", "idle~");
    c.wait_node("cloud2", "idle~");
    assert!(lines(&c, "suspended.log")
        .iter()
        .any(|l| l.contains("cloud")));
    // SuspendExcNodes=node1: never powered down although idle all along.
    assert_eq!(c.node_state("node1"), "idle");
    assert!(!lines(&c, "suspended.log")
        .iter()
        .any(|l| l.contains("node1")));
    let log = c.log_text("droverctld");
    assert!(log.contains("power_save: suspending nodes cloud"), "{log}");
    // The agents were stopped by SuspendProgram.
    assert!(!c.path().join("agent-cloud1.pid").exists());
}

#[test]
fn a_node_that_never_resumes_goes_down_and_its_job_runs_elsewhere() {
    let (c, _) = cluster(1, 0, &["ResumeProgram={DIR}/noop.sh", "ResumeTimeout=3"]);
    let id = c.sbatch(&["-n1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let ids = id.to_string();
    c.wait_state(&ids, &["CONFIGURING"], WAIT);
    assert_eq!(c.job_field(&ids, "NodeList").as_deref(), Some("cloud1"));
    assert_eq!(c.ok("squeue", &["-h", "-j", &ids, "-o", "%t"]).trim(), "CF");
    // Its node is allocated and powering up.
    assert_eq!(c.node_state("cloud1"), "mix#");
    assert_eq!(c.node_field("cloud1", "State"), "MIXED+CLOUD+POWERING_UP");
    assert_eq!(c.wait_done(id), "COMPLETED", "{}", c.log_text("droverctld"));
    assert_eq!(c.job_field(&ids, "NodeList").as_deref(), Some("node1"));
    assert_eq!(c.job_field(&ids, "Restarts").as_deref(), Some("1"));
    assert!(c.node_state("cloud1").starts_with("down"));
    let show = c.ok("scontrol", &["show", "node", "cloud1"]);
    assert!(show.contains("Reason=ResumeTimeout reached"), "{show}");
    assert_eq!(lines(&c, "resumefail.log"), vec!["cloud1".to_string()]);
}

#[test]
fn a_cloud_node_without_an_address_is_reached_where_it_registered_from() {
    // The agent listens on every address (its NodeAddr unknown): TLS would
    // be on, and this test has no certificates.
    let (c, _) = cluster_addr(1, 0, &["TLSType=tls/none"], false);
    let _g = Instances(c.path().to_path_buf());
    assert_eq!(c.node_field("cloud1", "NodeAddr"), "cloud1");
    let id = c.sbatch(&["-w", "cloud1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let deadline = Instant::now() + WAIT;
    while c.node_field("cloud1", "NodeAddr") != "127.0.0.1" {
        assert!(
            Instant::now() < deadline,
            "{}",
            c.log_text("droverd-cloud1")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.wait_done(id), "COMPLETED", "{}", c.log_text("droverctld"));
    assert!(c
        .log_text("droverctld")
        .contains("node cloud1: address 127.0.0.1 (learned at registration)"));
}

#[test]
fn controller_killed_mid_resume_keeps_the_job_and_resumes_once() {
    // The instance takes 4 s to come up: the controller dies meanwhile.
    let (mut c, _) = cluster(1, 4, &[]);
    let _g = Instances(c.path().to_path_buf());
    let id = c.sbatch(&["-w", "cloud1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let ids = id.to_string();
    c.wait_state(&ids, &["CONFIGURING"], WAIT);
    let deadline = Instant::now() + WAIT;
    while lines(&c, "resumed.log").is_empty() {
        assert!(Instant::now() < deadline, "ResumeProgram never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    c.kill_ctld();
    c.start_ctld().expect("controller restarts");
    assert_eq!(c.wait_done(id), "COMPLETED", "{}", c.log_text("droverctld"));
    assert_eq!(lines(&c, "resumed.log"), vec!["cloud1".to_string()]);
}

#[test]
fn failing_programs_leave_a_reason_on_the_node() {
    // A missing ResumeProgram: the node is DOWN at once, the job runs elsewhere.
    let (c, _) = cluster(1, 0, &["ResumeProgram={DIR}/missing.sh"]);
    let id = c.sbatch(&["-n1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(c.wait_done(id), "COMPLETED");
    let reason = c.node_field("cloud1", "Reason");
    let show = c.ok("scontrol", &["show", "node", "cloud1"]);
    assert!(
        show.contains("Reason=ResumeProgram failed: cannot run") && show.contains("missing.sh"),
        "{reason}: {show}"
    );
    drop(c);

    // Not executable.
    let (c, _) = cluster(1, 0, &["ResumeProgram={DIR}/noexec"]);
    let id = c.sbatch(&["-n1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(c.wait_done(id), "COMPLETED");
    let show = c.ok("scontrol", &["show", "node", "cloud1"]);
    assert!(show.contains("Permission denied"), "{show}");
    drop(c);

    // Exits non-zero: its exit code and stderr are the reason.
    let (c, _) = cluster(1, 0, &["ResumeProgram={DIR}/fail.sh"]);
    let id = c.sbatch(&["-n1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(c.wait_done(id), "COMPLETED");
    let show = c.ok("scontrol", &["show", "node", "cloud1"]);
    assert!(
        show.contains("ResumeProgram failed: exit code 3: cloud quota exceeded"),
        "{show}"
    );
    assert!(c.log_text("droverctld").contains("cloud quota exceeded"));
    drop(c);

    // Hangs: killed after SuspendTimeout, the node powered down anyway
    // with the reason; the controller is never stuck.
    let (c, _) = cluster(1, 0, &["SuspendProgram={DIR}/hang.sh"]);
    let _g = Instances(c.path().to_path_buf());
    let id = c.sbatch(&["-w", "cloud1", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(c.wait_done(id), "COMPLETED");
    let deadline = Instant::now() + WAIT;
    loop {
        let show = c.ok("scontrol", &["show", "node", "cloud1"]);
        if show.contains("SuspendProgram failed: timed out after 2s") {
            break;
        }
        assert!(Instant::now() < deadline, "{show}");
        std::thread::sleep(Duration::from_millis(100));
    }
    c.ok("scontrol", &["ping"]);
}

#[test]
fn scontrol_powers_nodes_down_and_up() {
    // Without PrivateData=cloud a powered-down CLOUD node is not listed.
    let (c, _) = cluster(1, 0, &["SuspendTime=INFINITE", "PrivateData=jobs"]);
    let _g = Instances(c.path().to_path_buf());
    assert_eq!(c.ok("sinfo", &["-h", "-N", "-o", "%N"]).trim(), "node1");
    c.ok("scontrol", &["update", "NodeName=cloud1", "State=POWER_UP"]);
    c.wait_node("cloud1", "idle");
    assert_eq!(c.node_field("cloud1", "State"), "IDLE+CLOUD");
    assert_eq!(
        c.ok("sinfo", &["-h", "-N", "-o", "%N"]).trim(),
        "cloud1\nnode1"
    );
    c.ok(
        "scontrol",
        &["update", "NodeName=cloud1", "State=POWER_DOWN"],
    );
    let deadline = Instant::now() + WAIT;
    while c.node_field("cloud1", "State") != "IDLE+CLOUD+POWERED_DOWN" {
        assert!(
            Instant::now() < deadline,
            "{}",
            c.node_field("cloud1", "State")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Hidden again from lists, shown when named.
    assert_eq!(c.ok("sinfo", &["-h", "-N", "-o", "%N"]).trim(), "node1");
    assert_eq!(lines(&c, "suspended.log"), vec!["cloud1".to_string()]);
    let out = c.run(
        "scontrol",
        &["update", "NodeName=cloud1", "State=POWER_SIDEWAYS"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid node state specified"));
}

#[test]
fn drover_up_cloud_nodes_resume_for_a_job_and_stop_with_it() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c");
    let mut child = Command::new(bin_dir().join("drover"))
        .args(["up", "--dir", cluster.to_str().unwrap(), "--nodes", "1"])
        .args(["--cpus-per-node", "2", "--mem-per-node", "1000"])
        .args(["--cloud-nodes", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    for l in out.by_ref() {
        let l = l.unwrap();
        said.push(l.clone());
        if l.starts_with("export ") {
            break;
        }
    }
    assert!(
        said.iter()
            .any(|l| l.contains("2 cloud nodes (cloud[1-2], partition cloud)")),
        "{said:?}"
    );
    let conf = cluster.join("slurm.conf");
    let run = |prog: &str, args: &[&str]| {
        let o = Command::new(cluster.join("bin").join(prog))
            .args(args)
            .env("SLURM_CONF", &conf)
            .current_dir(&cluster)
            .output()
            .unwrap();
        assert!(o.status.success(), "{prog} {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(
        run("sinfo", &["-h", "-N", "-p", "cloud", "-o", "%N %t"]),
        "cloud1 idle~\ncloud2 idle~"
    );
    let script = cluster.join("job.sh");
    fs::write(&script, "#!/bin/sh\nhostname >/dev/null\n").unwrap();
    let id = run(
        "sbatch",
        &[
            "--parsable",
            "-p",
            "cloud",
            "-o",
            "/dev/null",
            script.to_str().unwrap(),
        ],
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let st = run("scontrol", &["show", "job", &id]);
        if st.contains("JobState=COMPLETED") {
            assert!(st.contains("NodeList=cloud1"), "{st}");
            break;
        }
        assert!(Instant::now() < deadline, "{st}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        run("sinfo", &["-h", "-N", "-n", "cloud1", "-o", "%t"]),
        "idle"
    );
    // drover up stops the cloud node's agent with the rest.
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGTERM);
    let _ = child.wait();
    let me = cluster.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = drover_tests::pids_mentioning(&me);
        if left.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            for p in &left {
                let _ = drover_proto::sys::kill(*p, libc::SIGKILL);
            }
            panic!("processes outlived drover up: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
