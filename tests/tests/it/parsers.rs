//! The workspace's one hostlist, memory-size and time parser, through the
//! real commands and the real controller: every command and daemon reads
//! these texts the same way.

use drover_tests::{Cluster, Spec};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn hostlists_sizes_and_times_read_alike_everywhere() {
    let c = Cluster::start(Spec::default());

    // Hostlists: a suffix after the number, the user's order kept or sorted.
    let h = c.ok("scontrol", &["show", "hostlist", "c01-ib,c02-ib,c03-ib"]);
    assert_eq!(h.trim(), "c[01-03]-ib");
    let h = c.ok("scontrol", &["show", "hostnames", "c[01-02]-ib,x"]);
    assert_eq!(h, "c01-ib\nc02-ib\nx\n");
    let h = c.ok("scontrol", &["show", "hostlist", "x,n2,n1"]);
    assert_eq!(h.trim(), "x,n[1-2]");
    let h = c.ok("scontrol", &["show", "hostlistsorted", "n10,x,n2,n1"]);
    assert_eq!(h.trim(), "n[1-2,10],x");

    // Memory sizes: Slurm's K/M/G/T, and P refused by sbatch and by the
    // controller alike.
    let script = c.script("hold.sh", "#!/bin/sh\ntrue\n");
    let script = script.display().to_string();
    let o = c.run("sbatch", &["--mem=1P", "-o", "/dev/null", &script]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("invalid memory constraint 1P"),
        "{}",
        stderr(&o)
    );
    let id = c.sbatch(
        &["--begin=now+1hour", "--mem=1G", "-o", "/dev/null"],
        "#!/bin/sh\ntrue\n",
    );
    let job = format!("JobId={id}");
    assert_eq!(
        c.job_field(&id.to_string(), "MinMemoryNode").as_deref(),
        Some("1G")
    );
    let o = c.run("scontrol", &["update", &job, "MinMemoryNode=1P"]);
    assert!(!o.status.success(), "1P accepted");
    assert!(
        stderr(&o).contains("Invalid MinMemoryNode value: 1P"),
        "{}",
        stderr(&o)
    );
    c.ok("scontrol", &["update", &job, "MinMemoryNode=2048K"]);
    assert_eq!(
        c.job_field(&id.to_string(), "MinMemoryNode").as_deref(),
        Some("2M")
    );

    // Times: now+N with a unit in the controller; an absurd count is
    // refused (it used to overflow the controller's arithmetic).
    let reason = || c.job_field(&id.to_string(), "Reason");
    assert_eq!(reason().as_deref(), Some("BeginTime"));
    c.ok("scontrol", &["update", &job, "StartTime=now+2hours"]);
    let o = c.run(
        "scontrol",
        &["update", &job, "StartTime=now+999999999999999999weeks"],
    );
    assert!(!o.status.success(), "absurd StartTime accepted");
    assert!(
        stderr(&o).contains("Invalid StartTime value"),
        "{}",
        stderr(&o)
    );
    // The controller is still there and kept the valid StartTime; `now`
    // lets the job run.
    assert_eq!(reason().as_deref(), Some("BeginTime"));
    c.ok("scontrol", &["update", &job, "StartTime=now"]);
    assert_eq!(c.wait_done(id), "COMPLETED");
}
