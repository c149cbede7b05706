//! droverctld's start-up errors, through the real binary.

use std::process::Command;

fn ctld() -> Command {
    Command::new(env!("CARGO_BIN_EXE_droverctld"))
}

#[test]
fn bad_config_is_reported_with_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("slurm.conf");
    std::fs::write(&conf, "ClusterName=x\nSlurmctldPort=notaport\n").unwrap();
    let o = ctld().arg("-f").arg(&conf).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("{}:2", conf.display())), "{e}");
    assert!(e.contains("SlurmctldPort"), "{e}");
}

#[test]
fn missing_or_open_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("drover.conf");
    let key = dir.path().join("k");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=x\nAuthKeyFile={}\nStateSaveLocation={}/s\n",
            key.display(),
            dir.path().display()
        ),
    )
    .unwrap();
    let o = ctld().arg("-f").arg(&conf).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cluster key"));
    std::fs::write(&key, "0123456789abcdef0123456789abcdef").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let o = ctld().arg("-f").arg(&conf).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("chmod 600"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn version_and_usage() {
    let o = ctld().arg("-V").output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("drover "));
    let o = ctld().arg("--bogus").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
