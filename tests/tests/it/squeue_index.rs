//! squeue's filters answered by the controller's indexes (`-t`, `-u`, `-p`)
//! print exactly the rows of the whole listing filtered here, through
//! starts, ends, cancels, requeues, array splits and PrivateData.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

const NOBODY: u32 = 65534;
const FMT: &str = "%i %t %P %U";

/// squeue's arguments and which rows of the full listing they keep.
type Case<'a> = (Vec<&'static str>, Box<dyn Fn(&String) -> bool + 'a>);
/// A case's arguments, the rows squeue printed and the rows wanted.
type Outcome = (Vec<&'static str>, Vec<String>, Vec<String>);

fn cluster(extra: &[&str]) -> Cluster {
    Cluster::start(Spec {
        nodes: 2,
        cpus: 2,
        extra: extra.iter().map(|s| s.to_string()).collect(),
        topology: Some(
            "NodeName=node[1-2] NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=2 RealMemory=2000\n\
             PartitionName=a Nodes=node1 Default=YES MaxTime=UNLIMITED State=UP\n\
             PartitionName=b Nodes=node2 MaxTime=UNLIMITED State=UP\n"
                .into(),
        ),
        ..Spec::default()
    })
}

/// Rows of `squeue -h -o FMT` run as `uid` with `args`.
fn rows(c: &Cluster, uid: u32, args: &[&str]) -> Vec<String> {
    let mut a = vec!["-h", "-o", FMT, "--sort=i"];
    a.extend_from_slice(args);
    let o = c.run_as(uid, "squeue", &a);
    assert!(
        o.status.success(),
        "squeue {a:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every filtered listing equals the full one (`-t all`) filtered here.
/// Jobs change state while the commands run (a requeued job completing,
/// array tasks starting): a round counts only when the full listing is
/// the same before and after it.
fn check(c: &Cluster, uid: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let before = rows(c, uid, &["-t", "all"]);
        let got = filtered(c, uid, &before);
        if rows(c, uid, &["-t", "all"]) == before {
            for (args, have, want) in got {
                assert_eq!(have, want, "squeue {args:?} as {uid}; all: {before:#?}");
            }
            return;
        }
        assert!(Instant::now() < deadline, "the queue never settled");
    }
}

/// Each case's rows, with the rows of `all` it should keep.
fn filtered(c: &Cluster, uid: u32, all: &[String]) -> Vec<Outcome> {
    let active = ["PD", "R", "CG", "S", "CF"];
    let field = |r: &String, i: usize| r.split(' ').nth(i).unwrap_or("").to_string();
    let cases: Vec<Case> = vec![
        (vec![], Box::new(|r| active.contains(&field(r, 1).as_str()))),
        (vec!["-t", "R"], Box::new(|r| field(r, 1) == "R")),
        (vec!["-t", "PD"], Box::new(|r| field(r, 1) == "PD")),
        (
            vec!["-t", "CD,CA"],
            Box::new(|r| ["CD", "CA"].contains(&field(r, 1).as_str())),
        ),
        (
            vec!["-p", "b"],
            Box::new(|r| {
                active.contains(&field(r, 1).as_str()) && field(r, 2).split(',').any(|p| p == "b")
            }),
        ),
        (
            vec!["-t", "all", "-p", "a"],
            Box::new(|r| field(r, 2).split(',').any(|p| p == "a")),
        ),
        (
            vec!["-u", "nobody"],
            Box::new(|r| {
                active.contains(&field(r, 1).as_str()) && field(r, 3) == NOBODY.to_string()
            }),
        ),
        (
            vec!["-u", "root", "-t", "PD,R"],
            Box::new(|r| ["PD", "R"].contains(&field(r, 1).as_str()) && field(r, 3) == "0"),
        ),
    ];
    cases
        .into_iter()
        .map(|(args, keep)| {
            let want: Vec<String> = all.iter().filter(|r| keep(r)).cloned().collect();
            let have = rows(c, uid, &args);
            (args, have, want)
        })
        .collect()
}

fn submit_as(c: &Cluster, uid: u32, args: &[&str]) -> String {
    let mut a = vec!["--parsable", "-o", "/dev/null", "-D", "/tmp"];
    a.extend_from_slice(args);
    let o = c.run_as(uid, "sbatch", &a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn filtered_squeue_equals_the_filtered_full_listing() {
    let c = cluster(&["MinJobAge=600"]);
    let t = Duration::from_secs(30);
    // Running, pending, an array (tasks split off as they start), another
    // user's jobs, a job that may run in either partition.
    let r1 = c.sbatch(&["-p", "a", "-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    let short = c.sbatch(&["-p", "b", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let arr = c.sbatch(
        &["-p", "a", "-a", "0-5", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 60\n",
    );
    let _held = c.sbatch(&["-p", "b", "-H", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let theirs = submit_as(&c, NOBODY, &["-p", "a,b", "--wrap", "sleep 60"]);
    let _their_held = submit_as(&c, NOBODY, &["-p", "b", "-H", "--wrap", "true"]);
    c.wait_state(&r1.to_string(), &["RUNNING"], t);
    c.wait_state(&short.to_string(), &["COMPLETED"], t);
    check(&c, 0);

    // A cancel, a requeue, more array tasks split off as CPUs free up.
    c.ok("scancel", &[&theirs]);
    c.wait_state(&theirs, &["CANCELLED"], t);
    c.ok("scontrol", &["requeue", &r1.to_string()]);
    check(&c, 0);
    c.ok("scancel", &[&format!("{arr}_0")]);
    check(&c, 0);
    check(&c, NOBODY);
    c.ok("scancel", &["-u", "root"]);
    c.ok("scancel", &["-u", "nobody"]);
    check(&c, 0);
}

#[test]
fn private_data_filtered_squeue_shows_only_ones_own_jobs() {
    let c = cluster(&["PrivateData=jobs"]);
    let mine = c.sbatch(&["-p", "b", "-H", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    let theirs = submit_as(&c, NOBODY, &["-p", "b", "-H", "--wrap", "true"]);
    let ids = |uid, args: &[&str]| -> Vec<String> {
        rows(&c, uid, args)
            .iter()
            .map(|r| r.split(' ').next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(ids(NOBODY, &["-t", "PD"]), vec![theirs.clone()]);
    assert_eq!(ids(NOBODY, &["-p", "b"]), vec![theirs.clone()]);
    assert!(ids(NOBODY, &["-u", "root"]).is_empty());
    assert_eq!(
        ids(0, &["-t", "PD", "-p", "b"]),
        vec![mine.to_string(), theirs]
    );
    check(&c, NOBODY);
    check(&c, 0);
}
