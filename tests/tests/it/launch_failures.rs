//! Launches that cannot go as asked: a working directory that does not
//! exist (Slurm runs the job in /tmp and says so on its stderr), an output
//! file that cannot be opened (the job fails and its accounting record,
//! the `.batch` step included, ends).

use std::time::Duration;

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(60);

fn missing_dir(c: &Cluster) -> String {
    c.path().join("no-such-dir").display().to_string()
}

/// The job ran in /tmp and its stderr carries Slurm's line about it.
fn ran_in_tmp(c: &Cluster, id: u32, out: &std::path::Path, dir: &str) {
    c.expect_end(id, "COMPLETED");
    let text = c.wait_file(out, |t| t.contains("pwd="));
    assert!(text.contains("pwd=/tmp\n"), "{text}");
    assert!(
        text.contains(&format!(
            "slurmstepd: error: couldn't chdir to `{dir}': No such file or directory: going to /tmp instead\n"
        )),
        "{text}"
    );
}

#[test]
fn a_missing_work_dir_at_submit_runs_in_tmp() {
    let c = Cluster::start(Spec::default());
    let dir = missing_dir(&c);
    let out = c.path().join("submit.out");
    let id = c.sbatch(
        &["-D", &dir, "-o", &out.display().to_string()],
        "#!/bin/sh\necho pwd=$(pwd)\n",
    );
    ran_in_tmp(&c, id, &out, &dir);
}

#[test]
fn a_missing_work_dir_set_by_scontrol_update_runs_in_tmp() {
    let c = Cluster::start(Spec::default());
    let dir = missing_dir(&c);
    let out = c.path().join("update.out");
    let id = c.sbatch(
        &["-H", "-o", &out.display().to_string()],
        "#!/bin/sh\necho pwd=$(pwd)\n",
    );
    let ids = id.to_string();
    c.ok(
        "scontrol",
        &["update", &format!("JobId={ids}"), &format!("WorkDir={dir}")],
    );
    assert_eq!(c.job_field(&ids, "WorkDir").as_deref(), Some(dir.as_str()));
    c.ok("scontrol", &["release", &ids]);
    ran_in_tmp(&c, id, &out, &dir);
}

#[test]
fn an_unwritable_output_fails_the_job_and_ends_its_batch_step() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Default::default()
    });
    let id = c.sbatch(&["-o", "/nonexistent/dir/out"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "FAILED");
    let ids = id.to_string();
    let t = c.wait_sacct(
        &["-n", "-P", "-j", &ids, "-o", "JobID,State,End"],
        WAIT,
        |t| t.lines().any(|l| l.starts_with(&format!("{ids}|FAILED|"))),
    );
    let batch = t
        .lines()
        .find(|l| l.starts_with(&format!("{ids}.batch|")))
        .unwrap_or_else(|| panic!("no batch step in {t:?}"));
    let f: Vec<&str> = batch.split('|').collect();
    assert_eq!(f[1], "FAILED", "{t}");
    assert_ne!(f[2], "Unknown", "{t}");
    assert!(!f[2].is_empty(), "{t}");
}

#[test]
fn a_step_in_a_missing_work_dir_runs_in_tmp() {
    let c = Cluster::start(Spec::default());
    let dir = missing_dir(&c);
    let out = c.run("srun", &["-D", &dir, "sh", "-c", "echo pwd=$(pwd)"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "pwd=/tmp\n", "{stderr}");
    assert!(
        stderr.contains(&format!(
            "slurmstepd: error: couldn't chdir to `{dir}': No such file or directory: going to /tmp instead"
        )),
        "{stderr}"
    );
}

/// srun killed after the controller made its step but before the step's
/// launch reached the agent (frozen here): no agent ever runs the step, so
/// the controller must end it itself once the launch fails. It used to stay
/// RUNNING for ever (the call's handler went with srun's connection).
#[test]
fn a_step_whose_srun_dies_before_its_launch_is_ended() {
    use crate::steps::{allocation, srun_cmd};
    use std::process::Stdio;
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-N1"]);
    c.pause_agent(true);
    let mut srun = srun_cmd(&c, job, &["-n1", "sleep", "41.5"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start srun");
    let step = format!("{job}.0");
    let listed = |c: &Cluster| c.ok("squeue", &["-s", "-h", "-o", "%i"]);
    let mut seen = String::new();
    for _ in 0..2400 {
        seen = listed(&c);
        if seen.contains(&step) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen.contains(&step), "step never made: {seen}");
    srun.kill().expect("kill srun");
    let _ = srun.wait();
    c.pause_agent(false);
    for _ in 0..2400 {
        seen = listed(&c);
        if !seen.contains(&step) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(!seen.contains(&step), "step {step} left running: {seen}");
    assert!(
        drover_tests::pids_mentioning("sleep 41.5").is_empty(),
        "a task of the step runs"
    );
}

/// An agent holds a batch launch until the controller has answered its
/// registration, and refuses it UNAVAILABLE after 5 s (the controller tries
/// again): the job list it registers with cannot miss a job launched
/// meanwhile, which the controller would take for lost (NODE_FAIL). Once
/// registered, jobs run.
#[test]
fn an_agent_holds_launches_until_it_has_registered() {
    use drover_proto::auth::{Binding, ClusterKey};
    use drover_proto::node_agent_client::NodeAgentClient;
    use drover_proto::{JobSpec, LaunchRequest};

    let mut c = Cluster::start(Spec::default());
    c.stop_ctld();
    c.kill_agent();
    c.start_agent().unwrap();
    let key = ClusterKey::load(&c.path().join("drover.key")).unwrap();
    let req = LaunchRequest {
        job_id: 9_999,
        node: "node1".into(),
        spec: Some(JobSpec::default()),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = rt.block_on(async {
        // Until the agent listens, each try fails to connect; a credential
        // made in the instant before it started is refused as such (a
        // daemon's client then tries again with a fresh one, as here).
        let mut last = None;
        for _ in 0..1200 {
            let bind = Binding::new("/drover.NodeAgent/Launch", &crate::replay::body(&req));
            let tok = key.issue_daemon("ctl", &bind);
            let ch = crate::replay::with_token(format!("127.0.0.1:{}", c.agent_port), tok);
            match NodeAgentClient::new(ch).launch(req.clone()).await {
                Err(e)
                    if (e.code() == tonic::Code::Unavailable
                        && !e.message().contains("registering"))
                        || (e.code() == tonic::Code::Unauthenticated
                            && e.message().contains(drover_proto::auth::BEFORE_START)) =>
                {
                    last = Some(e);
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                r => return r.map(|_| ()),
            }
        }
        Err(last.expect("tried"))
    });
    let e = answer.expect_err("an unregistered agent must refuse the launch");
    assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
    assert!(
        e.message()
            .contains("this agent is registering with the controller"),
        "{e:?}"
    );
    assert!(
        !c.log_text("droverd").contains("job 9999: started"),
        "the refused job ran"
    );
    c.start_ctld().unwrap();
    let id = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
}
