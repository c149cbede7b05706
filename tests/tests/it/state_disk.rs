//! A full disk under StateSaveLocation (a small tmpfs, filled by a file):
//! new submissions are refused with Slurm's words for a job that could not
//! be saved, the controller log names the directory, every job acknowledged
//! before is kept (across a controller restart too), and submissions are
//! taken again once there is room.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

/// A tmpfs mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::Builder::new()
            .prefix("drover-it-tmpfs-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a daemon being killed may still hold a file open.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Write `path` until the file system says it is full.
fn fill(path: &Path) -> u64 {
    let mut f = std::fs::File::create(path).expect("create filler");
    let chunk = vec![0x5au8; 64 * 1024];
    let mut n = 0u64;
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(k) => n += k as u64,
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    let _ = f.sync_all();
    n
}

fn until(what: &str, timeout: Duration, f: impl Fn() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_full_state_disk_refuses_submissions_and_keeps_jobs() {
    let disk = match Tmpfs::mount("32m") {
        Ok(t) => t,
        Err(why) => {
            eprintln!("SKIPPED (full StateSaveLocation): cannot mount a tmpfs: {why}");
            return;
        }
    };
    let state: PathBuf = disk.path().join("state");
    let mut c = Cluster::start(Spec {
        nodes: 1,
        cpus: 4,
        extra: vec![format!("StateSaveLocation={}", state.display())],
        ..Spec::default()
    });
    let done = c.path().join("done");
    let running = c.sbatch(
        &["-o", "/dev/null"],
        &format!("#!/bin/sh\nsleep 3\necho ran >> {}\n", done.display()),
    );
    let held = c.sbatch(&["-o", "/dev/null", "-H"], "#!/bin/sh\ntrue\n");
    c.wait_state(&running.to_string(), &["RUNNING"], Duration::from_secs(20));

    let filler = disk.path().join("filler");
    let filled = fill(&filler);
    assert!(filled > 0);
    let o = c.run("sbatch", &["-o", "/dev/null", "--wrap", "echo never"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success(),
        "sbatch succeeded on a full disk: {err}"
    );
    assert_eq!(
        err.trim(),
        "sbatch: error: Batch job submission failed: I/O error writing script/environment to file"
    );
    assert!(
        o.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&o.stdout)
    );
    let log = c.log_text("droverctld");
    assert!(
        log.contains(&format!("StateSaveLocation {} is full", state.display())),
        "{log}"
    );
    // The running job ends while the disk is full; its end waits for room.
    c.wait_file(&done, |t| t == "ran\n");
    // Reads are served meanwhile.
    let q = c.ok("squeue", &["-h", "-o", "%i", "-j", &held.to_string()]);
    assert_eq!(q.trim(), held.to_string());

    std::fs::remove_file(&filler).unwrap();
    // The state log writer tries again every second; submissions are taken
    // once it has caught up.
    until("a submission to be taken", Duration::from_secs(15), || {
        c.run("sbatch", &["-o", "/dev/null", "--wrap", "true"])
            .status
            .success()
    });
    let after = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert!(after > held);
    assert_eq!(c.wait_done(running), "COMPLETED");
    until(
        "the log to say there is room",
        Duration::from_secs(10),
        || {
            c.log_text("droverctld").contains(&format!(
                "StateSaveLocation {} has room again",
                state.display()
            ))
        },
    );

    // Everything acknowledged is on disk: a controller killed now has it all.
    c.kill_ctld();
    c.start_ctld().unwrap();
    assert_eq!(c.wait_done(running), "COMPLETED");
    assert_eq!(c.wait_done(after), "COMPLETED");
    assert_eq!(
        c.job_field(&held.to_string(), "Reason").as_deref(),
        Some("JobHeldUser")
    );
    c.ok("scontrol", &["release", &held.to_string()]);
    assert_eq!(c.wait_done(held), "COMPLETED");
    let ran = std::fs::read_to_string(&done).unwrap();
    assert_eq!(ran, "ran\n", "the job ran once");
}
