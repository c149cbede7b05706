//! The `drover` binary's commands that need no controller (this file also
//! makes `cargo test --workspace` build the binary the integration tests use).

use std::process::Command;

fn drover(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_drover"))
        .args(args)
        .env("DROVER_CONF", "/nonexistent/drover.conf")
        .output()
        .unwrap()
}

#[test]
fn hostnames_and_hostlist() {
    let o = drover(&["scontrol", "show", "hostnames", "gpu[01-03,07],cpu5"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "gpu01\ngpu02\ngpu03\ngpu07\ncpu5\n"
    );
    let o = drover(&["scontrol", "show", "hostlist", "n1,n2,n3,n10"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "n[1-3,10]");
}

#[test]
fn missing_config_is_a_clear_error() {
    let o = drover(&["squeue"]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.starts_with("squeue: error: ") && e.contains("/nonexistent/drover.conf"),
        "{e}"
    );
}

#[test]
fn unknown_command_and_version() {
    let o = drover(&["version"]);
    assert!(o.status.success());
    let o = drover(&["no-such-command"]);
    assert!(!o.status.success());
}
