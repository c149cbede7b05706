//! Least privilege: a job's processes (batch script and step tasks) hold
//! none of root's (every uid and gid the user's, exactly the user's groups,
//! no capability but the bounding set, which stays as Slurm leaves it, and
//! no `no_new_privs`, as in Slurm); the controller and droverdbd run as an
//! unprivileged `SlurmUser`, and refuse a state directory that is not its.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use drover_tests::{bin_dir, unique, Cluster, Spec};

const NOBODY: u32 = 65534;

/// `Key:` of a /proc/PID/status text, its values split on white space.
fn status_field(status: &str, key: &str) -> Vec<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}:")))
        .unwrap_or_else(|| panic!("no {key} line in:\n{status}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn nobody_name() -> String {
    drover_proto::sysdb::passwd_by_uid(NOBODY)
        .map(|p| p.name)
        .expect("a user 65534")
}

/// What a job of nobody's must show in its /proc/self/status.
fn assert_unprivileged(what: &str, status: &str) {
    let n = NOBODY.to_string();
    assert_eq!(status_field(status, "Uid"), vec![n.clone(); 4], "{what}");
    assert_eq!(status_field(status, "Gid"), vec![n.clone(); 4], "{what}");
    let mut want: Vec<String> = drover_proto::sys::grouplist(&nobody_name(), NOBODY)
        .iter()
        .map(u32::to_string)
        .collect();
    let mut groups = status_field(status, "Groups");
    want.sort();
    groups.sort();
    assert_eq!(groups, want, "{what}: exactly the user's groups");
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(
            status_field(status, set),
            vec!["0000000000000000".to_string()],
            "{what}: {set}"
        );
    }
    // The bounding set stays the daemons' (here this test's), as Slurm
    // leaves it, and no_new_privs stays off: set-user-ID programs work.
    let ours = std::fs::read_to_string("/proc/self/status").unwrap();
    assert_eq!(
        status_field(status, "CapBnd"),
        status_field(&ours, "CapBnd"),
        "{what}"
    );
    assert_eq!(status_field(status, "NoNewPrivs"), vec!["0"], "{what}");
}

#[test]
fn jobs_run_with_no_privilege_left() {
    if !drover_proto::sys::is_root() {
        eprintln!("needs root (jobs run as another user)");
        return;
    }
    let c = Cluster::start(Spec::default());
    // A batch script.
    let out = std::env::temp_dir().join(format!("drover-privs-{}.out", unique()));
    let o = c.run_as(
        NOBODY,
        "sbatch",
        &[
            "--parsable",
            "-D",
            "/tmp",
            "-o",
            out.to_str().unwrap(),
            "--wrap",
            "cat /proc/self/status",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id: u32 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    c.expect_end(id, "COMPLETED");
    let status = c.wait_file(&out, |t| t.contains("NoNewPrivs"));
    let _ = std::fs::remove_file(&out);
    assert_unprivileged("batch script", &status);
    // A step's task.
    let o = c.run_as(
        NOBODY,
        "srun",
        &["-N1", "-D", "/tmp", "cat", "/proc/self/status"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_unprivileged("step task", &String::from_utf8_lossy(&o.stdout));
}

#[test]
fn controller_and_dbd_run_as_slurm_user() {
    if !drover_proto::sys::is_root() {
        eprintln!("needs root (the daemons switch from root to SlurmUser)");
        return;
    }
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        slurm_user: Some(nobody_name()),
        ..Spec::default()
    });
    for (name, pid) in c.daemon_pids() {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let want = if name == "droverd" { 0 } else { NOBODY };
        assert_eq!(
            status_field(&status, "Uid"),
            vec![want.to_string(); 4],
            "{name}"
        );
        if want != 0 {
            assert_eq!(
                status_field(&status, "CapEff"),
                vec!["0000000000000000"],
                "{name}"
            );
        }
    }
    // Its state directory was made for it.
    let state = std::fs::metadata(c.path().join("state")).unwrap();
    assert_eq!((state.uid(), state.mode() & 0o777), (NOBODY, 0o700));
    // Jobs run and are accounted.
    let id = c.sbatch(&[], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let o = c.run(
            "sacct",
            &["-n", "-X", "-P", "-j", &id.to_string(), "-o", "JobID,State"],
        );
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        if text.trim() == format!("{id}|COMPLETED") {
            break;
        }
        assert!(Instant::now() < deadline, "not accounted: {text:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A lone controller's files in `dir`: its config (SlurmUser nobody), key
/// (0600) and `state` directory (made, owned by root).
fn lone_controller(dir: &Path) -> (PathBuf, PathBuf) {
    let state = dir.join("state");
    std::fs::create_dir(&state).unwrap();
    let key = dir.join("drover.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef-test-key\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let conf = dir.join("drover.conf");
    std::fs::write(
        &conf,
        format!(
            "ClusterName=t\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={}\n\
             SlurmUser={}\nStateSaveLocation={}\nAuthKeyFile={}\n\
             AuthInfo=socket={}/auth.sock\n\
             NodeName=n1 NodeAddr=127.0.0.1 CPUs=1 RealMemory=100\n\
             PartitionName=p Nodes=ALL Default=YES\n",
            drover_tests::free_port(),
            nobody_name(),
            state.display(),
            key.display(),
            dir.display()
        ),
    )
    .unwrap();
    (conf, state)
}

#[test]
fn a_state_directory_of_another_user_is_refused() {
    if !drover_proto::sys::is_root() {
        eprintln!("needs root (the daemon starts as root)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (conf, state) = lone_controller(dir.path());
    let name = nobody_name();
    let o = Command::new(bin_dir().join("droverctld"))
        .arg("-f")
        .arg(&conf)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "droverctld: error: StateSaveLocation {} is owned by root(0), not SlurmUser {name}({NOBODY})",
            state.display()
        )),
        "{err}"
    );
}

/// Started as SlurmUser itself, the controller just runs (as that user).
#[test]
fn started_as_slurm_user_it_just_runs() {
    if !drover_proto::sys::is_root() {
        eprintln!("needs root (to make files for another user)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (conf, state) = lone_controller(dir.path());
    let key = dir.path().join("drover.key");
    for p in [dir.path(), state.as_path(), key.as_path()] {
        std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let log = dir.path().join("ctld.log");
    let mut child = Command::new(bin_dir().join("droverctld"))
        .arg("-f")
        .arg(&conf)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .uid(NOBODY)
        .gid(NOBODY)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("listening on") {
            break;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("droverctld exited {st}: {text}");
        }
        assert!(Instant::now() < deadline, "droverctld not up: {text}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(status_field(&status, "Uid"), vec![NOBODY.to_string(); 4]);
}
