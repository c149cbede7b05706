//! Files holding other users' data (controller state, accounting, spool)
//! are private whatever the daemons' umask, older loose files are tightened
//! at start-up, and paths a user names for a step's I/O are opened with the
//! user's rights, never root's.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use drover_tests::{unique, Cluster, Spec};

const NOBODY: u32 = 65534;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

/// Every directory and regular file under `dir`.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if out[i].is_dir() && !out[i].is_symlink() {
            // (A directory may be renamed away meanwhile: nothing below.)
            let mut more: Vec<PathBuf> = std::fs::read_dir(&out[i])
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            out.append(&mut more);
        }
        i += 1;
    }
    out
}

/// Can another user read `path`?
fn nobody_reads(path: &Path) -> bool {
    Command::new("cat")
        .arg(path)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn assert_private_tree(dir: &Path) {
    for p in tree(dir) {
        // A file listed may be gone already: the daemons write new state
        // beside the old (`*.tmp`) and rename it into place.
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("{}: {e}", p.display()),
        };
        if m.is_dir() {
            assert_eq!(m.mode() & 0o7777, 0o700, "{}", p.display());
        } else if m.is_file() {
            assert_eq!(m.mode() & 0o7777, 0o600, "{}", p.display());
            assert!(!nobody_reads(&p), "{} readable by nobody", p.display());
        }
    }
}

#[test]
fn state_accounting_and_spool_are_private_whatever_the_umask() {
    let mut c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        umask: Some(0),
        ..Default::default()
    });
    let secret = format!("s3cret-{}", unique());
    let id = c.sbatch_env(
        &["-o", "/dev/null", "-J", "private-job"],
        "#!/bin/sh\nsleep 300\n",
        &[("API_TOKEN", secret.as_str())],
    );
    c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(30));

    // The controller's state holds the job's environment: only root reads it.
    let state = c.path().join("state");
    let holds_secret = tree(&state).iter().any(|p| {
        p.is_file()
            && std::fs::read(p)
                .map(|b| b.windows(secret.len()).any(|w| w == secret.as_bytes()))
                .unwrap_or(false)
    });
    assert!(holds_secret, "the test's secret is not in the state files");
    assert_private_tree(&state);

    // Accounting: the database and its companions.
    let db = c.path().join("dbd/acct.db");
    c.wait_sacct(
        &["-n", "-X", "-j", &id.to_string()],
        Duration::from_secs(30),
        |t| t.contains(&id.to_string()),
    );
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", db.display()));
        if p.exists() {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
            assert!(!nobody_reads(&p), "{} readable by nobody", p.display());
        }
    }

    // The spool: the job directory is 0711 and only the user's script is
    // not root's 0600.
    let job_dir = c.path().join(format!("spool/job{id}"));
    assert_eq!(mode(&job_dir), 0o711);
    for p in tree(&job_dir).into_iter().skip(1) {
        let m = std::fs::symlink_metadata(&p).unwrap();
        if !m.is_file() {
            continue;
        }
        if p.ends_with("script") {
            assert_eq!(mode(&p), 0o700, "{}", p.display());
        } else {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
            assert!(!nobody_reads(&p), "{} readable by nobody", p.display());
        }
    }

    // Files an older version left readable are tightened at start-up.
    c.kill_ctld();
    for p in tree(&state) {
        let loose = if p.is_dir() { 0o755 } else { 0o644 };
        match std::fs::set_permissions(&p, std::fs::Permissions::from_mode(loose)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("{}: {e}", p.display()),
            _ => {}
        }
    }
    let status = job_dir.join("launch.pb");
    std::fs::set_permissions(&status, std::fs::Permissions::from_mode(0o644)).unwrap();
    c.stop_agent();
    c.start_ctld().unwrap();
    c.start_agent().unwrap();
    c.wait_state(&id.to_string(), &["RUNNING"], Duration::from_secs(30));
    assert_private_tree(&state);
    assert!(c.log_text("droverctld").contains("tightened"));
    assert_eq!(mode(&status), 0o600);
    assert!(c.log_text("droverd").contains("tightened"));
    c.ok("scancel", &[&id.to_string()]);
}

#[test]
fn step_io_paths_are_opened_with_the_users_rights() {
    let c = Cluster::start(Spec::default());
    let home = c.path().join("nobody-home");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(NOBODY), Some(NOBODY)).unwrap();
    // Root's files in a directory nobody may not write to.
    let vault = c.path().join("vault");
    std::fs::create_dir(&vault).unwrap();
    std::fs::set_permissions(&vault, std::fs::Permissions::from_mode(0o755)).unwrap();
    let secret = vault.join("secret");
    std::fs::write(&secret, "root-only-content\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let target = vault.join("target");
    std::fs::write(&target, "root's file\n").unwrap();

    // -i: the task must not get root's file as its input.
    let o = c.run_as(
        NOBODY,
        "srun",
        &[
            "-D",
            home.to_str().unwrap(),
            "-i",
            secret.to_str().unwrap(),
            "cat",
        ],
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("root-only-content"),
        "srun -i read a file its user cannot"
    );
    // -o: neither removed, truncated nor given away.
    c.run_as(
        NOBODY,
        "srun",
        &[
            "-D",
            home.to_str().unwrap(),
            "-o",
            target.to_str().unwrap(),
            "echo",
            "forged",
        ],
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root's file\n");
    assert_eq!(std::fs::metadata(&target).unwrap().uid(), 0);
    // In the user's own directory the same options work.
    let mine = home.join("out.txt");
    let o = c.run_as(
        NOBODY,
        "srun",
        &[
            "-D",
            home.to_str().unwrap(),
            "-o",
            mine.to_str().unwrap(),
            "echo",
            "mine",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "mine\n");
    assert_eq!(std::fs::metadata(&mine).unwrap().uid(), NOBODY);
}
