//! Commands served by the node agents themselves: `scontrol listpids`,
//! `sbcast`, `sattach`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use drover_tests::{pids_mentioning, Cluster, Spec};

use crate::steps::{srun_cmd, text};

const NOBODY: u32 = 65534;

/// Poll `f` until it returns Some, for up to 30 s.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The rows of `scontrol listpids` as (pid, job, step, localid, globalid).
fn rows(out: &str) -> Vec<(i32, u32, String, String, String)> {
    out.lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Some((
                w.first()?.parse().ok()?,
                w.get(1)?.parse().ok()?,
                w.get(2)?.to_string(),
                w.get(3)?.to_string(),
                w.get(4)?.to_string(),
            ))
        })
        .collect()
}

#[test]
fn scontrol_listpids_shows_batch_and_step_processes_to_their_owner() {
    let c = Cluster::start(Spec::default());
    // Nothing runs yet.
    let o = c.run("scontrol", &["listpids"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stdout),
        "PID      JOBID    STEPID   LOCALID GLOBALID\n"
    );
    assert_eq!(text(&o.stderr), "No job steps exist on this node.\n");

    let job = c.sbatch(
        &["-o", "/dev/null", "-N2", "-n4"],
        "#!/bin/sh\nsleep 301.25 &\nwait\n",
    );
    let js = job.to_string();
    c.wait_state(&js, &["RUNNING"], Duration::from_secs(60));
    let sleep = wait_for("the batch job's sleep", || {
        pids_mentioning("301.25").first().copied()
    });
    let out = wait_for("listpids to show the sleep", || {
        let o = c.run("scontrol", &["listpids", &js]);
        let out = text(&o.stdout);
        rows(&out).iter().any(|r| r.0 == sleep).then_some(out)
    });
    let r = rows(&out);
    // The script is task 0 of the batch step; its sleep is not a task.
    assert!(
        r.iter()
            .any(|x| x.1 == job && x.2 == "batch" && x.3 == "0" && x.4 == "0"),
        "{out}"
    );
    assert!(
        r.contains(&(sleep, job, "batch".into(), "-".into(), "-".into())),
        "{out}"
    );
    // An srun step's tasks carry their ranks.
    let mut step = srun_cmd(&c, job, &["-n2", "-N1", "sleep", "302.5"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let out = wait_for("the step's two tasks", || {
        let o = c.run("scontrol", &["listpids", &format!("{job}.0"), "node1"]);
        let t = text(&o.stdout);
        (o.status.success() && rows(&t).len() == 2).then_some(t)
    });
    let mut ranks: Vec<(String, String)> = rows(&out)
        .into_iter()
        .map(|x| {
            assert_eq!((x.1, x.2.as_str()), (job, "0"), "{out}");
            (x.3, x.4)
        })
        .collect();
    ranks.sort();
    assert_eq!(
        ranks,
        vec![("0".into(), "0".into()), ("1".into(), "1".into())],
        "{out}"
    );
    for (pid, ..) in rows(&out) {
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(text(&cmd).contains("302.5"), "pid {pid} is not a task");
    }
    // The whole job: both steps.
    let all = c.ok("scontrol", &["listpids", &js]);
    let steps: Vec<String> = rows(&all).into_iter().map(|x| x.2).collect();
    assert!(
        steps.contains(&"batch".to_string()) && steps.contains(&"0".to_string()),
        "{all}"
    );

    // Another user sees none of it.
    let o = c.run_as(NOBODY, "scontrol", &["listpids", &js]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        "scontrol: error: Access/permission denied\n"
    );
    let o = c.run_as(NOBODY, "scontrol", &["listpids"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "No job steps exist on this node.\n");
    // Slurm's words for what is not there.
    let o = c.run("scontrol", &["listpids", "999999"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "Job 999999 does not exist on this node.\n");
    let o = c.run("scontrol", &["listpids", &format!("{job}.7")]);
    assert_eq!(
        text(&o.stderr),
        format!("StepId={job}.7 does not exist on this node.\n")
    );
    let o = c.run("scontrol", &["listpids", "x1"]);
    assert_eq!(text(&o.stderr), "\"x1\" does not look like a jobid\n");
    let o = c.run("scontrol", &["listpids", &js, "nosuchnode"]);
    assert_eq!(
        text(&o.stderr),
        "scontrol: error: node nosuchnode is not in the configuration\n"
    );
    let _ = step.kill();
    let _ = step.wait();
    c.ok("scancel", &[&js]);
}
