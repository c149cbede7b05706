//! `drover install` into a temporary prefix: binaries, command links and
//! systemd units in place, an upgrade over them, a foreign command left
//! alone; the units checked by `systemd-analyze verify` where it exists.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

fn install(args: &[&str]) -> std::process::Output {
    Command::new(drover_tests::bin_dir().join("drover"))
        .arg("install")
        .args(args)
        .output()
        .expect("drover install")
}

#[test]
fn drover_install_puts_binaries_links_and_units_in_place() {
    let d = tempfile::tempdir().unwrap();
    let prefix = d.path().join("usr");
    let units = d.path().join("units");
    let args = [
        "--prefix",
        prefix.to_str().unwrap(),
        "--unit-dir",
        units.to_str().unwrap(),
    ];
    for round in ["install", "upgrade"] {
        let o = install(&args);
        assert!(
            o.status.success(),
            "{round}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    for (dir, name) in [
        ("bin", "drover"),
        ("sbin", "droverctld"),
        ("sbin", "droverd"),
        ("sbin", "droverdbd"),
    ] {
        let p = prefix.join(dir).join(name);
        let m = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o755, "{}", p.display());
    }
    for c in drover_tests::COMMANDS {
        let link = prefix.join("bin").join(c);
        assert_eq!(std::fs::read_link(&link).unwrap().to_str(), Some("drover"));
    }
    // The links are the commands.
    let o = Command::new(prefix.join("bin/sbatch"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "slurm 23.11.0");
    let o = Command::new(prefix.join("sbin/droverd"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(o.status.success());
    for d in ["droverctld", "droverd", "droverdbd"] {
        let u = std::fs::read_to_string(units.join(format!("{d}.service"))).unwrap();
        let exec = format!("ExecStart={}/sbin/{d} -D", prefix.display());
        assert!(u.contains(&exec), "{u}");
    }
    // A foreign command in the way stops the install before it replaces
    // anything, and says which file.
    let squeue = prefix.join("bin/squeue");
    std::fs::remove_file(&squeue).unwrap();
    std::fs::write(&squeue, "#!/bin/sh\necho other\n").unwrap();
    let o = install(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains(&format!(
            "{} exists and is not a link to drover",
            squeue.display()
        )),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&squeue).unwrap(),
        "#!/bin/sh\necho other\n"
    );

    let have = Command::new("systemd-analyze").arg("--version").output();
    if !have.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: systemd-analyze verify (no systemd-analyze here)");
        return;
    }
    let mut cmd = Command::new("systemd-analyze");
    cmd.arg("verify");
    for d in ["droverctld", "droverd", "droverdbd"] {
        cmd.arg(units.join(format!("{d}.service")));
    }
    let o = cmd.output().unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    eprintln!("systemd-analyze verify: {}\n{text}", o.status);
    assert!(o.status.success(), "{text}");
}

/// `--destdir`: everything is written under the staging directory, and the
/// units and links name the final paths (how a package is built).
#[test]
fn drover_install_stages_under_a_destdir() {
    let d = tempfile::tempdir().unwrap();
    let o = install(&["--destdir", d.path().to_str().unwrap(), "--prefix", "/usr"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.path().join("usr/sbin/droverd").is_file());
    assert_eq!(
        std::fs::read_link(d.path().join("usr/bin/srun"))
            .unwrap()
            .to_str(),
        Some("drover")
    );
    let unit =
        std::fs::read_to_string(d.path().join("etc/systemd/system/droverd.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/sbin/droverd -D"), "{unit}");
}
