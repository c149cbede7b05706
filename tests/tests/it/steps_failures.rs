//! Job steps when something goes (issue 6): a lost node, a cancelled
//! step, a controller that restarts or dies mid-call.

use std::process::Stdio;
use std::time::Duration;

use drover_tests::{Cluster, Spec};

use super::steps::{allocation, srun_cmd, text};

#[test]
fn srun_reports_a_lost_node() {
    let mut c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let job = allocation(&c, &["-n1"]);
    // srun writes the task's line only once its step is fully launched.
    let out = c.path().join("lost.out");
    let child = srun_cmd(
        &c,
        job,
        &["-n1", "sh", "-c", "echo ready; exec sleep 43.75"],
    )
    .stdin(Stdio::null())
    .stdout(std::fs::File::create(&out).unwrap())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    c.wait_file(&out, |t| t.contains("ready"));
    c.kill_agent();
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("srun: error: node1: connection to the node lost"),
        "{err}"
    );
    // Clean up the task: it outlives its agent (as tasks outlive slurmd).
    for pid in drover_tests::pids_mentioning("sleep 43.75") {
        let _ = drover_proto::sys::kill(pid, libc::SIGKILL);
    }
}

#[test]
fn scancel_ends_one_step_not_the_job() {
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n2"]);
    let child = srun_cmd(&c, job, &["-n1", "sleep", "47.25"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let step = format!("{job}.0");
    let mut seen = String::new();
    for _ in 0..400 {
        seen = c.ok("squeue", &["-s", "-h", "-o", "%i"]);
        if seen.contains(&step) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen.contains(&step), "{seen}");
    c.ok("scancel", &[&step]);
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(143), "{err}");
    assert!(err.contains("task 0: Terminated"), "{err}");
    // The job runs on; the step is gone.
    assert_eq!(
        c.job_field(&job.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    assert!(!c.ok("squeue", &["-s", "-h", "-o", "%i"]).contains(&step));
    // Cancelling it again (already ended, as scancel says quietly) leaves
    // the job alone.
    c.ok("scancel", &[&step]);
    assert_eq!(
        c.job_field(&job.to_string(), "JobState").as_deref(),
        Some("RUNNING")
    );
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn running_steps_survive_a_controller_restart() {
    let mut c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n1"]);
    let go = c.path().join("go");
    let started = c.path().join("started");
    let script = format!(
        "echo up > {}; while [ ! -e {} ]; do sleep 0.02; done; echo finished",
        started.display(),
        go.display()
    );
    let child = srun_cmd(&c, job, &["-n1", "-J", "survivor", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let step = format!("{job}.0 survivor");
    let listed = |c: &Cluster| c.ok("squeue", &["-s", "-h", "-o", "%i %j"]).contains(&step);
    // The task runs: the step was made and launched.
    c.wait_file(&started, |t| t == "up\n");
    assert!(listed(&c));
    c.kill_ctld();
    c.start_ctld().unwrap();
    // The step is still known, its I/O never went through the controller,
    // and its end (reported by the agent) is taken after the restart.
    assert!(listed(&c), "step lost in the restart");
    std::fs::write(&go, "").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "finished\n");
    wait_step_gone(&c, &step);
    c.ok("scancel", &[&job.to_string()]);
}

fn wait_step_gone(c: &Cluster, step: &str) {
    for _ in 0..400 {
        if !c.ok("squeue", &["-s", "-h", "-o", "%i %j"]).contains(step) {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("step {step} end not recorded");
}

/// The controller dies while srun waits for its step (made, logged, its
/// launch not answered yet): srun asks again when the controller is back and
/// gets the same step, and the tasks start once, not twice.
#[test]
fn srun_gets_its_step_from_a_controller_that_died_mid_call() {
    let mut c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n1"]);
    let runs = c.path().join("runs");
    let script = format!("echo run >> {}; echo done", runs.display());
    // A frozen agent holds the launch, so the controller dies mid-call.
    c.pause_agent(true);
    let child = srun_cmd(&c, job, &["-n1", "-J", "retried", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let step = format!("{job}.0 retried");
    let mut seen = String::new();
    for _ in 0..400 {
        seen = c.ok("squeue", &["-s", "-h", "-o", "%i %j"]);
        if seen.contains(&step) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen.contains(&step), "{seen}");
    c.kill_ctld();
    c.start_ctld().unwrap();
    c.pause_agent(false);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "done\n");
    wait_step_gone(&c, &step);
    // One step, run once.
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    let steps = c.ok("squeue", &["-s", "-h", "-o", "%i"]);
    assert!(!steps.contains(&format!("{job}.1")), "{steps}");
    c.ok("scancel", &[&job.to_string()]);
}

/// srun started while the controller is down waits for it (up to
/// MessageTimeout) instead of failing at once.
#[test]
fn srun_waits_for_a_restarting_controller() {
    let mut c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n1"]);
    c.kill_ctld();
    let child = srun_cmd(&c, job, &["-n1", "echo", "hello"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.start_ctld().unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "hello\n");
    c.ok("scancel", &[&job.to_string()]);
}
