//! `drover up`: the one command for a whole local cluster.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn drover_up_starts_runs_jobs_stops_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c");
    let bin = drover_tests::bin_dir();
    let start = || {
        let mut child = Command::new(bin.join("drover"))
            .args([
                "up",
                "--dir",
                cluster.to_str().unwrap(),
                "--nodes",
                "2",
                "--cpus-per-node",
                "2",
                "--mem-per-node",
                "1000",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut export = String::new();
        for l in lines.by_ref() {
            let l = l.unwrap();
            if l.starts_with("export ") {
                export = l;
                break;
            }
        }
        assert!(export.contains("DROVER_CONF="), "no export line");
        (child, lines)
    };
    let (child, _lines) = start();
    let conf = cluster.join("drover.conf");
    let run = |prog: &str, args: &[&str]| {
        Command::new(cluster.join("bin").join(prog))
            .args(args)
            .env("DROVER_CONF", &conf)
            .current_dir(&cluster)
            .output()
            .unwrap()
    };
    let s = String::from_utf8(run("sinfo", &["-h", "-o", "%D %t"]).stdout).unwrap();
    assert_eq!(s.trim(), "2 idle");
    let o = run(
        "sbatch",
        &[
            "--parsable",
            "--wait",
            "-o",
            "out.txt",
            "--wrap",
            "echo hello from $SLURMD_NODENAME",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let text = std::fs::read_to_string(cluster.join("out.txt")).unwrap();
    assert!(text.starts_with("hello from node"), "{text}");
    // Ctrl-C stops everything cleanly.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut child = child;
    let st = child.wait().unwrap();
    assert!(st.success(), "drover up exited {st}");
    assert!(!run("scontrol", &["ping"]).status.success());
    // Again: same state.
    let (mut child, _l) = start();
    let q = String::from_utf8(run("squeue", &["-h", "-t", "all", "-o", "%i %T"]).stdout).unwrap();
    assert_eq!(q.trim(), format!("{id} COMPLETED"));
    // Accounting (droverdbd on SQLite) kept the job across the restart.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let o = run("sacct", &["-X", "-n", "-P", "-j", &id, "-o", "JobID,State"]);
        let t = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if t == format!("{id}|COMPLETED") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sacct: {t} {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    let _ = Duration::from_secs(0);
}
