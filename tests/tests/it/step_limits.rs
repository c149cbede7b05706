//! Steps inside a job's cgroup: `srun --mem` is the step's own memory limit
//! (inside the job's), an OOM in a step is reported like Slurm's
//! slurmstepd does and recorded OUT_OF_MEMORY, and a step's memory peak
//! reaches sacct.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn srun_mem_limits_the_step_and_an_oom_is_reported() {
    let root = drover_proto::sys::geteuid() == 0;
    if !root || !Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists() {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let c = Cluster::start(Spec {
        nodes: 1,
        accounting: Some("sqlite".into()),
        files: vec![("cgroup.conf".into(), "ConstrainRAMSpace=yes\n".into())],
        ..Spec::default()
    });
    let id = c.sbatch(
        &["--mem=1500M", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    let sid = id.to_string();
    c.wait_state(&sid, &["RUNNING"], WAIT);
    let srun = |args: &[&str]| {
        let mut cmd = c.cmd("srun");
        cmd.env("SLURM_JOB_ID", &sid)
            .args(args)
            .stdin(Stdio::null());
        cmd.output().unwrap()
    };
    // 256 MiB (twice, while perl copies it) in a 32 MiB step of a 1.5 GiB job: the step's limit kills it.
    let o = srun(&[
        "--mem=32M",
        "perl",
        "-e",
        "$x = 'a' x 268435456; print \"survived\\n\"",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(137), "{err}");
    assert!(!text(&o.stdout).contains("survived"));
    assert!(
        err.contains(&format!(
            "Detected 1 oom_kill event in StepId={id}.0. Some of the step tasks have been OOM Killed."
        )),
        "{err}"
    );
    // The same allocation without a step limit has room for it.
    let o = srun(&["perl", "-e", "$x = 'a' x 268435456; print \"survived\\n\""]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "survived\n");
    // More than the job holds on the node: refused at once.
    let o = srun(&["--mem=2G", "true"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("Memory required by task is not available"),
        "{}",
        text(&o.stderr)
    );
    // A step that burns CPU: its time is counted (v1: the step's cpuacct
    // group; v2: cpu.stat).
    let o = srun(&[
        "perl",
        "-e",
        "my $i = 0; $i++ while $i < 20_000_000; print \"spun\\n\"",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = c.wait_sacct(
        &[
            "-j",
            &sid,
            "-P",
            "-n",
            "-o",
            "JobID,State,ExitCode,MaxRSS,TotalCPU",
        ],
        WAIT,
        |t| t.contains(&format!("{id}.2|COMPLETED")),
    );
    let cpu = t
        .lines()
        .find(|l| l.starts_with(&format!("{id}.2|")))
        .and_then(|l| l.rsplit('|').next())
        .unwrap_or_default()
        .to_string();
    // 20 million increments take a good part of a second (mm:ss.mmm).
    let secs: f64 = cpu
        .rsplit(':')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    assert!(secs >= 0.2 || cpu.matches(':').count() > 1, "{t}");
    assert!(t.contains(&format!("{id}.0|OUT_OF_MEMORY|0:125|")), "{t}");
    // The second step's peak (its 256 MiB string) is its MaxRSS.
    let rss = t
        .lines()
        .find(|l| l.starts_with(&format!("{id}.1|")))
        .and_then(|l| l.split('|').nth(3))
        .unwrap_or_default()
        .to_string();
    // sacct picks the unit (K, M, G).
    let (num, unit) = rss.split_at(rss.trim_end_matches(char::is_alphabetic).len());
    let kib = num.parse::<f64>().unwrap_or(0.0)
        * match unit {
            "M" => 1024.0,
            "G" => 1024.0 * 1024.0,
            _ => 1.0,
        };
    let kib = kib as u64;
    assert!(kib >= 256 * 1024, "{t}");
    c.ok("scancel", &[&sid]);
}
