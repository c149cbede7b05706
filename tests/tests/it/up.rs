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
        (child, lines, export)
    };
    let (child, _lines, export) = start();
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
    // The config is slurm.conf; drover.conf names it too, and SLURM_CONF
    // alone finds the cluster.
    let slurm_conf = cluster.join("slurm.conf");
    assert!(slurm_conf.is_file() && !slurm_conf.is_symlink());
    assert_eq!(
        std::fs::read_link(&conf).unwrap(),
        std::path::PathBuf::from("slurm.conf")
    );
    let o = Command::new(cluster.join("bin").join("sinfo"))
        .args(["-h", "-o", "%D"])
        .env_remove("DROVER_CONF")
        .env("SLURM_CONF", &slurm_conf)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "2");
    // The REST daemon, its address on the export line, a token from scontrol.
    let url = export
        .split_whitespace()
        .find_map(|w| w.strip_prefix("SLURM_RESTD_URL=http://"))
        .unwrap_or_else(|| panic!("no SLURM_RESTD_URL in {export}"))
        .to_string();
    let tok = String::from_utf8(run("scontrol", &["token"]).stdout).unwrap();
    let tok = tok
        .trim()
        .strip_prefix("SLURM_JWT=")
        .expect("SLURM_JWT=")
        .to_string();
    let r = drover_tests::rest::connect_tcp(&url).request(
        "GET",
        "/slurm/v0.0.40/ping",
        &[("X-SLURM-USER-TOKEN", &tok)],
        b"",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The dashboard at the same address.
    let r = drover_tests::rest::connect_tcp(&url).request("GET", "/", &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("<title>Drover dashboard</title>"),
        "{}",
        r.body
    );
    let o = run(
        "sbatch",
        &[
            "--parsable",
            "--wait",
            "-o",
            "out.txt",
            "--mail-type=END",
            "--wrap",
            "echo hello from $SLURMD_NODENAME",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let text = std::fs::read_to_string(cluster.join("out.txt")).unwrap();
    assert!(text.starts_with("hello from node"), "{text}");
    // Its mail is in DIR/mail.log (MailProg is drover-mail).
    let mail = cluster.join("mail.log");
    let want = format!("\nSubject: Slurm Job_id={id} Name=wrap Ended, Run time ");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&mail).is_ok_and(|t| t.contains(&want)) {
        assert!(
            std::time::Instant::now() < deadline,
            "no mail in {}",
            mail.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Ctrl-C stops everything cleanly.
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGINT);
    let mut child = child;
    let st = child.wait().unwrap();
    assert!(st.success(), "drover up exited {st}");
    assert!(!run("scontrol", &["ping"]).status.success());
    // Again: same state.
    let (mut child, _l, _) = start();
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
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGTERM);
    let _ = child.wait();
    let _ = Duration::from_secs(0);
}

/// `drover up` on a fresh directory, its stderr read line by line.
fn spawn_up(cluster: &std::path::Path) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new(drover_tests::bin_dir().join("drover"))
        .args(["up", "--dir", cluster.to_str().unwrap(), "--nodes", "2"])
        .args(["--cpus-per-node", "2", "--mem-per-node", "1000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    for r in [
        Box::new(out) as Box<dyn std::io::Read + Send>,
        Box::new(err) as Box<dyn std::io::Read + Send>,
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
    }
    (child, rx)
}

/// Lines until one contains `needle` (all of them, for the failure message).
fn until(rx: &std::sync::mpsc::Receiver<String>, needle: &str) -> Vec<String> {
    until_all(rx, &[needle])
}

/// Lines until each needle was in one of them: stdout and stderr are read
/// by two threads, so their lines may arrive in either order.
fn until_all(rx: &std::sync::mpsc::Receiver<String>, needles: &[&str]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    loop {
        if needles.iter().all(|n| seen.iter().any(|l| l.contains(n))) {
            return seen;
        }
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) => seen.push(l),
            Err(_) => panic!(
                "no line with each of {needles:?}; got:\n{}",
                seen.join("\n")
            ),
        }
    }
}

/// Wait until no process mentions the cluster directory any more.
fn none_left(cluster: &std::path::Path) {
    let me = cluster.display().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let left = drover_tests::pids_mentioning(&me);
        if left.is_empty() {
            return;
        }
        if std::time::Instant::now() > deadline {
            for p in &left {
                let _ = drover_proto::sys::kill(*p, libc::SIGKILL);
            }
            panic!("processes outlived drover up: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn drover_up_interrupted_during_startup_stops_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c");
    let (mut child, rx) = spawn_up(&cluster);
    // droverdbd is up and droverctld is being started: interrupt now.
    let seen = until(&rx, "starting droverctld");
    assert!(
        seen.iter()
            .any(|l| l.contains("droverdbd listening on 127.0.0.1:")),
        "{seen:?}"
    );
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGINT);
    let st = child.wait().unwrap();
    assert!(!st.success(), "an interrupted start-up is a failure");
    none_left(&cluster);
    // The ports are free again: the same directory comes up.
    let (mut child, rx) = spawn_up(&cluster);
    let seen = until_all(&rx, &["export DROVER_CONF=", "drover up: ready"]);
    assert!(seen.iter().any(|l| l == "drover up: ready"), "{seen:?}");
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
    none_left(&cluster);
}

#[test]
fn drover_up_killed_takes_its_daemons_along() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c");
    let (mut child, rx) = spawn_up(&cluster);
    until(&rx, "starting droverd ");
    // kill -9: no handler runs; the daemons must not live on.
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGKILL);
    let _ = child.wait();
    none_left(&cluster);
}

#[test]
fn drover_up_says_which_daemon_died_and_how() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c");
    let (mut child, rx) = spawn_up(&cluster);
    let seen = until_all(&rx, &["export DROVER_CONF=", "drover up: ready"]);
    for want in [
        "drover up: starting droverdbd",
        "drover up: droverctld listening on 127.0.0.1:",
        "drover up: droverd serving node[1-2]: 2 nodes responding",
        "drover up: ready",
    ] {
        assert!(seen.iter().any(|l| l.starts_with(want)), "{want}: {seen:?}");
    }
    let conf = cluster.join("slurm.conf").display().to_string();
    let ctld: Vec<i32> = drover_tests::pids_mentioning(&conf)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "droverctld")
        })
        .collect();
    assert_eq!(ctld.len(), 1, "{ctld:?}");
    let _ = drover_proto::sys::kill(ctld[0], libc::SIGKILL);
    let seen = until(&rx, "last lines of");
    let want = format!(
        "drover up: error: droverctld (pid {}) was killed by signal 9 (SIGKILL); last lines of {}",
        ctld[0],
        cluster.join("log/droverctld.log").display()
    );
    assert!(
        seen.iter().any(|l| l.starts_with(&want)),
        "{want}\n{seen:?}"
    );
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(1));
    none_left(&cluster);
}

#[test]
fn drover_up_cluster_has_fair_share_and_sprio() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("c");
    let (mut child, rx) = spawn_up(&cluster);
    let seen = until_all(&rx, &["export DROVER_CONF=", "fair-share: user "]);
    assert!(
        seen.iter().any(|l| l.contains("fair-share: user ")),
        "{seen:?}"
    );
    let conf = cluster.join("drover.conf");
    let run = |prog: &str, args: &[&str]| {
        let o = Command::new(cluster.join("bin").join(prog))
            .args(args)
            .env("DROVER_CONF", &conf)
            .current_dir(&cluster)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{prog} {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    let me = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_string();
    let share = run("sshare", &["-n", "-P", "-a", "-o", "Account,User"]);
    assert!(share.lines().any(|l| l == format!("demo|{me}|")), "{share}");
    // Fill the cluster (2 nodes x 2 CPUs), then one more job waits.
    let sb = |args: &[&str]| run("sbatch", args).trim().to_string();
    let big = sb(&["--parsable", "-N", "2", "-n", "4", "--wrap", "sleep 300"]);
    let waiting = sb(&["--parsable", "--wrap", "true"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let prio = loop {
        let p = run("sprio", &["-h", "-l"]);
        if p.lines()
            .any(|l| l.trim_start().starts_with(&format!("{waiting} ")))
        {
            break p;
        }
        assert!(std::time::Instant::now() < deadline, "sprio: {p}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // JOBID PARTITION USER ACCOUNT PRIORITY SITE AGE ASSOC FAIRSHARE ...
    let line = prio
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(&format!("{waiting} ")))
        .unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!((f[2], f[3]), (me.as_str(), "demo"), "{line}");
    let fs: f64 = f[8].parse().unwrap();
    assert!(fs > 0.0, "fair-share factor of a new user: {line}");
    run("scancel", &[&big, &waiting]);
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
    none_left(&cluster);
}

/// Started with a careless umask (0), drover up writes nothing others can
/// change, and nothing holding other users' data that others can read.
#[test]
fn drover_up_files_are_safe_whatever_the_umask() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    // (A name in capitals: the cluster is named in lower case, as Slurm
    // keeps it, so commands reading the file do not warn.)
    let cluster = dir.path().join("Lab");
    let mut child = Command::new(drover_tests::bin_dir().join("drover"));
    child
        .args(["up", "--dir", cluster.to_str().unwrap(), "--nodes", "1"])
        .args(["--cpus-per-node", "1", "--mem-per-node", "500"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    drover_proto::sys::umask_in_child(&mut child, 0);
    let mut child = child.spawn().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    for l in out.lines().map_while(Result::ok) {
        if l.starts_with("export DROVER_CONF=") {
            break;
        }
    }
    let mode = |p: &str| std::fs::metadata(cluster.join(p)).unwrap().mode() & 0o777;
    for p in ["", "bin", "run", "spool"] {
        assert_eq!(mode(p) & 0o022, 0, "{p} writable by others: {:o}", mode(p));
    }
    for p in ["drover.conf", "droverdbd.conf", "cgroup.conf"] {
        assert_eq!(mode(p), 0o644, "{p}");
    }
    for p in ["state", "log", "dbd"] {
        assert_eq!(mode(p), 0o700, "{p}");
    }
    for p in [
        "drover.key",
        "log/droverctld.log",
        "log/droverd.log",
        "log/droverdbd.log",
    ] {
        assert_eq!(mode(p), 0o600, "{p}");
    }
    let conf = std::fs::read_to_string(cluster.join("slurm.conf")).unwrap();
    assert!(conf.contains("\nClusterName=lab\n"), "{conf}");
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
    none_left(&cluster);
}
