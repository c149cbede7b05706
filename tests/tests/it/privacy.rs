//! `PrivateData` enforced by the controller: another user does not see
//! root's jobs (squeue, scontrol show job/step) or node information when the
//! configuration says so, and sees them when it does not.

use std::process::Output;

use drover_tests::{Cluster, Spec};

const NOBODY: u32 = 65534;

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn cluster(private: Option<&str>) -> Cluster {
    Cluster::start(Spec {
        extra: private
            .map(|p| vec![format!("PrivateData={p}")])
            .unwrap_or_default(),
        ..Spec::default()
    })
}

#[test]
fn private_jobs_and_nodes_are_hidden_from_other_users() {
    let c = cluster(Some("jobs,nodes"));
    let name = "rootsecret";
    let id = c.sbatch(&["-J", name, "-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    c.wait_state(
        &id.to_string(),
        &["RUNNING"],
        std::time::Duration::from_secs(20),
    );
    let ids = id.to_string();

    // nobody's listing has nothing of root's job.
    let (out, err) = text(&c.run_as(NOBODY, "squeue", &["-a", "-t", "all"]));
    assert!(!out.contains(name) && !out.contains(&ids), "{out}{err}");
    let (out, _) = text(&c.run_as(NOBODY, "squeue", &["-s", "-h"]));
    assert!(!out.contains(&ids), "steps of root's job shown: {out}");
    // Naming it is refused, as Slurm does.
    let o = c.run_as(NOBODY, "scontrol", &["show", "job", &ids]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(!out.contains(name), "{out}");
    assert!(err.contains("Access/permission denied"), "{err}");
    let (out, _) = text(&c.run_as(NOBODY, "scontrol", &["show", "job"]));
    assert!(!out.contains(name), "{out}");
    // PrivateData=nodes: node information is refused.
    let o = c.run_as(NOBODY, "scontrol", &["show", "node", "node1"]);
    let (out, err) = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(err.contains("Access/permission denied"), "{err}");

    // Their own job they see; root sees everything.
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "--parsable",
            "-J",
            "mine",
            "-o",
            "/dev/null",
            "-D",
            "/tmp",
            "--wrap",
            "sleep 60",
        ],
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let (out, _) = text(&c.run_as(NOBODY, "squeue", &["-h", "-o", "%j"]));
    assert_eq!(out.trim(), "mine");
    let all = c.ok("squeue", &["-h", "-o", "%j"]);
    assert!(all.contains(name) && all.contains("mine"), "{all}");
    c.ok("scontrol", &["show", "node", "node1"]);
    c.ok("scancel", &["-u", "root"]);
    c.ok("scancel", &["-u", "nobody"]);
}

#[test]
fn without_private_data_other_users_see_all_jobs() {
    let c = cluster(None);
    let id = c.sbatch(
        &["-J", "rootpublic", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 60\n",
    );
    let ids = id.to_string();
    let (out, err) = text(&c.run_as(NOBODY, "squeue", &["-h", "-o", "%i %j"]));
    assert!(out.contains(&format!("{ids} rootpublic")), "{out}{err}");
    let o = c.run_as(NOBODY, "scontrol", &["show", "job", &ids]);
    assert!(o.status.success());
    assert!(text(&o).0.contains("JobName=rootpublic"));
    let o = c.run_as(NOBODY, "scontrol", &["show", "node", "node1"]);
    assert!(o.status.success(), "{}", text(&o).1);
    c.ok("scancel", &[&ids]);
}
