//! `drover install`: the binaries, the command links and the systemd units
//! put in place, as a package would. Binaries are copied next to a
//! temporary name and renamed over the old ones, so running daemons keep
//! their (old) file and an upgrade never sees half a binary.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const USAGE: &str = "\
Usage: drover install [--prefix DIR] [--unit-dir DIR] [--no-units] [--from DIR]
                      [--destdir DIR]

  --prefix DIR    install under DIR: DIR/bin/drover and the command links
                  (sbatch, squeue, ...), DIR/sbin/droverctld, droverd,
                  droverdbd (default /usr/local)
  --unit-dir DIR  where the systemd units go (default /etc/systemd/system)
  --no-units      install no systemd unit
  --from DIR      the built binaries (default: the directory of this drover)
  --destdir DIR   write everything under DIR, as packagers stage a package:
                  the paths inside the units and links stay those without DIR
";

/// The daemons, installed in `sbin`.
pub const DAEMONS: [&str; 3] = ["droverctld", "droverd", "droverdbd"];

/// The systemd units (templates: `@BINDIR@`, `@SBINDIR@`).
pub const UNITS: [(&str, &str); 3] = [
    (
        "droverctld.service",
        include_str!("../../dist/systemd/droverctld.service"),
    ),
    (
        "droverd.service",
        include_str!("../../dist/systemd/droverd.service"),
    ),
    (
        "droverdbd.service",
        include_str!("../../dist/systemd/droverdbd.service"),
    ),
];

#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub from: Option<PathBuf>,
    pub prefix: PathBuf,
    pub unit_dir: Option<PathBuf>,
    pub destdir: Option<PathBuf>,
}

/// The command line (pure).
pub fn parse(args: &[String]) -> Result<Option<Plan>, String> {
    let mut plan = Plan {
        from: None,
        prefix: PathBuf::from("/usr/local"),
        unit_dir: Some(PathBuf::from("/etc/systemd/system")),
        destdir: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("option {flag} needs a directory"))
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--prefix" => plan.prefix = PathBuf::from(value()?),
            "--unit-dir" => plan.unit_dir = Some(PathBuf::from(value()?)),
            "--from" => plan.from = Some(PathBuf::from(value()?)),
            "--destdir" => plan.destdir = Some(PathBuf::from(value()?)),
            "--no-units" => plan.unit_dir = None,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(Some(plan))
}

/// Where `path` is written: under the staging directory, if any (pure).
pub fn staged(destdir: Option<&Path>, path: &Path) -> PathBuf {
    match destdir {
        Some(d) => d.join(path.strip_prefix("/").unwrap_or(path)),
        None => path.to_path_buf(),
    }
}

/// A unit with the installed paths filled in (pure).
pub fn unit_text(template: &str, bindir: &Path, sbindir: &Path) -> String {
    template
        .replace("@BINDIR@", &bindir.display().to_string())
        .replace("@SBINDIR@", &sbindir.display().to_string())
}

pub fn run(args: &[String]) -> i32 {
    let plan = match parse(args) {
        Ok(Some(p)) => p,
        Ok(None) => {
            print!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("drover install: error: {e}\n{USAGE}");
            return 2;
        }
    };
    match install(&plan) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("drover install: error: {e}");
            1
        }
    }
}

fn install(plan: &Plan) -> Result<(), String> {
    let from = match &plan.from {
        Some(d) => d.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this program: {e}"))?
            .parent()
            .map(Path::to_path_buf)
            .ok_or("cannot find this program's directory")?,
    };
    for name in std::iter::once("drover").chain(DAEMONS) {
        if !from.join(name).is_file() {
            return Err(format!(
                "{name} not found in {} (build with `cargo build --release --workspace --bins`, or name the directory with --from)",
                from.display()
            ));
        }
    }
    // The paths the installed files name, and where they are written.
    let bindir = plan.prefix.join("bin");
    let sbindir = plan.prefix.join("sbin");
    let dest = |p: &Path| staged(plan.destdir.as_deref(), p);
    let (bin_out, sbin_out) = (dest(&bindir), dest(&sbindir));
    for d in [&bin_out, &sbin_out] {
        fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    // The links first: a foreign command in the way stops everything
    // before anything was replaced.
    for c in crate::COMMANDS {
        check_link(&bin_out.join(c))?;
    }
    copy_binary(&from.join("drover"), &bin_out.join("drover"))?;
    // The simulator `drover sim` runs is optional: copied beside drover
    // when it was built.
    if from.join("droversim").is_file() {
        copy_binary(&from.join("droversim"), &bin_out.join("droversim"))?;
    }
    for d in DAEMONS {
        copy_binary(&from.join(d), &sbin_out.join(d))?;
    }
    for c in crate::COMMANDS {
        let link = bin_out.join(c);
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink("drover", &link)
            .map_err(|e| format!("cannot link {}: {e}", link.display()))?;
    }
    println!(
        "Installed drover and {} command links in {}, {} in {}",
        crate::COMMANDS.len(),
        bin_out.display(),
        DAEMONS.join(", "),
        sbin_out.display()
    );
    if let Some(dir) = plan.unit_dir.as_deref().map(dest) {
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        for (name, template) in UNITS {
            let p = dir.join(name);
            write_replacing(&p, unit_text(template, &bindir, &sbindir).as_bytes(), 0o644)?;
        }
        println!(
            "Installed the systemd units in {}; run `systemctl daemon-reload`",
            dir.display()
        );
    }
    println!(
        "Next: `drover keygen` (then copy /etc/drover/drover.key, mode 0600, to every host), \
         write /etc/drover/drover.conf, and `systemctl enable --now` the daemons of each host \
         (see the admin guide, \"Installing on several hosts\")"
    );
    Ok(())
}

/// A command's path must be free or a link (ours, from an earlier install).
fn check_link(path: &Path) -> Result<(), String> {
    match fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_symlink() => Err(format!(
            "{} exists and is not a link to drover (another batch system's command?): \
             remove it or install with another --prefix",
            path.display()
        )),
        _ => Ok(()),
    }
}

fn copy_binary(from: &Path, to: &Path) -> Result<(), String> {
    let bytes = fs::read(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    write_replacing(to, &bytes, 0o755)
}

/// Write `dir/.NAME.new`, then rename it over `path`.
fn write_replacing(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.new"));
    fs::write(&tmp, bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot set the mode of {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| format!("cannot install {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options() {
        let p = parse(&args(&[])).unwrap().unwrap();
        assert_eq!(p.prefix, PathBuf::from("/usr/local"));
        assert_eq!(p.unit_dir, Some(PathBuf::from("/etc/systemd/system")));
        let p = parse(&args(&["--prefix=/opt/d", "--no-units", "--from", "/b"]))
            .unwrap()
            .unwrap();
        assert_eq!(p.prefix, PathBuf::from("/opt/d"));
        assert_eq!(p.unit_dir, None);
        assert_eq!(p.from, Some(PathBuf::from("/b")));
        assert_eq!(parse(&args(&["--help"])).unwrap(), None);
        let p = parse(&args(&["--destdir", "/tmp/pkg"])).unwrap().unwrap();
        assert_eq!(p.destdir, Some(PathBuf::from("/tmp/pkg")));
        assert_eq!(
            staged(p.destdir.as_deref(), Path::new("/usr/local/bin")),
            PathBuf::from("/tmp/pkg/usr/local/bin")
        );
        assert_eq!(
            staged(None, Path::new("/usr/local/bin")),
            PathBuf::from("/usr/local/bin")
        );
        for bad in [&["--prefix"][..], &["--prefix="], &["--bogus"], &["x"]] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn units_name_the_installed_daemons() {
        for (name, t) in UNITS {
            let u = unit_text(t, Path::new("/p/bin"), Path::new("/p/sbin"));
            assert!(!u.contains('@'), "{name}: {u}");
            let daemon = name.trim_end_matches(".service");
            assert!(
                u.contains(&format!("ExecStart=/p/sbin/{daemon} -D")),
                "{name}: {u}"
            );
            assert!(u.contains("Type=notify"), "{name}");
            assert!(u.contains("LimitNOFILE="), "{name}");
        }
        let agent = unit_text(UNITS[1].1, Path::new("/b"), Path::new("/s"));
        assert!(agent.contains("Delegate=yes") && agent.contains("KillMode=process"));
    }
}
