//! `drover sim` through the multi-call binary: it runs `droversim` from
//! beside `drover`, with the arguments as given and its exit status.

use std::process::Command;

use drover_tests::bin_dir;

fn testdata(f: &str) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf();
    root.join("sim/testdata").join(f).display().to_string()
}

#[test]
fn drover_sim_runs_the_simulator() {
    let drover = bin_dir().join("drover");
    let out = Command::new(&drover)
        .args([
            "sim",
            "-c",
            &testdata("slurm.conf"),
            "--sacct",
            &testdata("small.sacct"),
            "--csv",
            "-",
        ])
        .output()
        .expect("drover sim runs");
    assert!(
        out.status.success(),
        "drover sim: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("id,trace_id,user,"), "{text}");
    assert!(text.contains(",110_3,carol,"), "{text}");
    assert!(text.contains("\nwait mean"), "{text}");
    // The simulator's own refusals come back with its exit status.
    let bad = Command::new(&drover)
        .args(["sim", "-c", &testdata("slurm.conf"), "--no-such-option"])
        .output()
        .expect("drover sim runs");
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown option '--no-such-option'"));
    // --help is the simulator's usage.
    let help = Command::new(&drover)
        .args(["sim", "--help"])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: drover sim"));
}

#[test]
fn installed_drover_sim_finds_its_simulator() {
    let d = tempfile::tempdir().expect("temp dir");
    let prefix = d.path().join("usr");
    let o = Command::new(bin_dir().join("drover"))
        .args(["install", "--prefix", prefix.to_str().expect("utf-8 path")])
        .output()
        .expect("drover install");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(prefix.join("bin/droversim").is_file());
    let out = Command::new(prefix.join("bin/drover"))
        .args([
            "sim",
            "-c",
            &testdata("slurm.conf"),
            "--swf",
            &testdata("small.swf"),
        ])
        .output()
        .expect("installed drover sim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("jobs "));
}
