//! Configless hosts and login hosts, each a network namespace of its own
//! (see drover_tests::hosts): agents told only the controller's address,
//! `scontrol reconfigure` reaching them, and a login host that is no node
//! running the commands. Skipped, with a printed reason, where the machine
//! cannot make namespaces.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

fn configless(nodes: u32, other_hosts: &[&str]) -> Option<Cluster> {
    Cluster::start_hosts(Spec {
        nodes,
        cpus: 2,
        slurmd_timeout: 10,
        configless: true,
        other_hosts: other_hosts.iter().map(|s| s.to_string()).collect(),
        extra: vec!["SlurmctldParameters=enable_configless".into()],
        files: vec![("gres.conf".into(), "# no GRES on these nodes\n".into())],
        ..Default::default()
    })
}

fn wait_until(what: &str, secs: u64, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ok() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

/// Agents with no config file run a job over two hosts (its script and
/// srun find the cached config through SLURM_CONF), and a Prolog added
/// to the controller's config (in a file it Includes, which the agents
/// never see) reaches them with `scontrol reconfigure`.
#[test]
fn configless_agents_run_jobs_and_follow_reconfigure() {
    let Some(c) = configless(2, &[]) else { return };
    for h in ["node1", "node2"] {
        let cached = c.conf_cache(h).join("drover.conf");
        let text = std::fs::read_to_string(&cached).unwrap();
        assert!(text.contains("enable_configless"), "{text}");
        assert_eq!(mode(&cached), 0o644, "{}", cached.display());
        assert_eq!(mode(&c.conf_cache(h)), 0o755);
        assert!(c.conf_cache(h).join("gres.conf").exists());
        let log = c.log_text(&format!("droverd-{h}"));
        assert!(log.contains("configless:"), "{log}");
    }
    let out = c.path().join("configless.out");
    let id = c.sbatch(
        &["-N2", "-n2", "-c1", "-o", out.to_str().unwrap()],
        "#!/bin/sh\necho conf=$SLURM_CONF\nsrun -l hostname | sort\n",
    );
    c.expect_end(id, "COMPLETED");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("/run/conf/drover.conf"), "{text}");
    assert!(
        text.contains("0: node1") && text.contains("1: node2"),
        "{text}"
    );

    // A Prolog appears in the controller's file only.
    let prolog = c.path().join("prolog.sh");
    std::fs::write(
        &prolog,
        format!(
            "#!/bin/sh\ntouch {}/prolog-ran-on-$(hostname)\n",
            c.path().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&prolog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let included = c.path().join("prolog.conf");
    std::fs::write(&included, format!("Prolog={}\n", prolog.display())).unwrap();
    let mut conf = std::fs::read_to_string(&c.conf).unwrap();
    conf = conf.replacen(
        "SlurmctldParameters",
        "Include prolog.conf\nSlurmctldParameters",
        1,
    );
    std::fs::write(&c.conf, conf).unwrap();
    c.ok("scontrol", &["reconfigure"]);
    for h in ["node1", "node2"] {
        // It re-reads, then registers again (the controller compares
        // the new config digest).
        wait_until(&format!("{h} re-reads its config"), 30, || {
            let log = c.log_text(&format!("droverd-{h}"));
            log.contains("reconfigured from")
                && log
                    .split("reconfigured from")
                    .nth(1)
                    .is_some_and(|after| after.contains("registered 1 node(s)"))
        });
        let cached = std::fs::read_to_string(c.conf_cache(h).join("drover.conf")).unwrap();
        assert!(
            cached.contains(&format!("Prolog={}", prolog.display())) && !cached.contains("Include"),
            "{cached}"
        );
    }
    for h in ["node1", "node2"] {
        let id = c.sbatch(&["-w", h, "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
        c.expect_end(id, "COMPLETED");
        let marker = c.path().join(format!("prolog-ran-on-{h}"));
        assert!(marker.exists(), "the new Prolog did not run on {h}");
    }
    let log = c.log_text("droverctld");
    assert!(
        log.contains("reconfigure: asking 2 agent(s) to re-read their config"),
        "{log}"
    );
}

/// A host that is no node runs `droverd --login` (configless): the
/// commands typed there find the cached config and get credentials for
/// the caller's own uid from its auth socket: sbatch, squeue and scancel
/// work, as root and as another user, who may not cancel root's job.
#[test]
fn a_login_host_that_is_no_node_runs_the_commands() {
    let Some(mut c) = configless(1, &["login"]) else {
        return;
    };
    c.start_login_host("login").unwrap();
    wait_until("the login host caches the config", 30, || {
        c.conf_cache("login").join("drover.conf").exists()
    });
    wait_until("the login host serves its auth socket", 30, || {
        c.log_text("droverd-login")
            .contains("serving the auth socket")
    });
    let on_login = |uid: u32, prog: &str, args: &[&str]| {
        let mut cmd = c.cmd_configless("login", prog);
        cmd.args(args);
        if uid != 0 {
            cmd.current_dir("/");
            // After the switch into the host's namespaces (Command::uid
            // would drop root before it).
            drover_tests::sys::become_in_child(&mut cmd, uid);
        }
        let o = cmd.output().unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
        )
    };
    let submit = |uid: u32| {
        let (ok, text) = on_login(uid, "sbatch", &["-o", "/dev/null", "--wrap", "sleep 300"]);
        assert!(ok, "{text}");
        text.trim()
            .strip_prefix("Submitted batch job ")
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let mine = submit(0);
    let theirs = submit(65534);
    for id in [&mine, &theirs] {
        c.wait_state(id, &["RUNNING", "PENDING"], Duration::from_secs(30));
    }
    let (ok, q) = on_login(0, "squeue", &["-h", "-o", "%i %u"]);
    assert!(ok, "{q}");
    assert!(q.contains(&format!("{mine} root")), "{q}");
    assert!(q.contains(&format!("{theirs} nobody")), "{q}");
    // The login host is no node.
    let (ok, nodes) = on_login(0, "sinfo", &["-h", "-N", "-o", "%N"]);
    assert!(ok && nodes.trim() == "node1", "{nodes}");
    // nobody may not cancel root's job; root may cancel both.
    let (ok, text) = on_login(65534, "scancel", &[&mine]);
    assert!(!ok && text.contains("Access/permission denied"), "{text}");
    let (ok, text) = on_login(0, "scancel", &[&mine, &theirs]);
    assert!(ok, "{text}");
    for id in [&mine, &theirs] {
        c.wait_state(id, &["CANCELLED"], Duration::from_secs(30));
    }

    // SIGHUP refreshes the login host's copy with what the controller
    // runs on: a file edited but not applied by reconfigure is not served.
    let refreshed = |c: &Cluster| {
        c.log_text("droverd-login")
            .matches("configless: config refreshed")
            .count()
    };
    let conf = std::fs::read_to_string(&c.conf).unwrap();
    std::fs::write(&c.conf, conf.replace("MinJobAge=300", "MinJobAge=301")).unwrap();
    let cached = c.conf_cache("login").join("drover.conf");
    for (round, reconfigure) in [(1, false), (2, true)] {
        if reconfigure {
            c.ok("scontrol", &["reconfigure"]);
        }
        c.signal_host_agent("login", libc::SIGHUP);
        wait_until("the login host fetches the config again", 30, || {
            refreshed(&c) == round
        });
        let text = std::fs::read_to_string(&cached).unwrap();
        assert_eq!(text.contains("MinJobAge=301"), reconfigure, "{text}");
    }
}

/// A configless agent that the controller refuses (configless mode not
/// enabled) stops at once and says why, naming the key to set.
#[test]
fn a_configless_agent_refused_by_the_controller_says_why() {
    let Some(mut c) = Cluster::start_hosts(Spec {
        nodes: 1,
        cpus: 2,
        ..Default::default()
    }) else {
        return;
    };
    c.signal_host_agent("node1", libc::SIGTERM);
    c.start_host_agent_configless("node1").unwrap();
    wait_until("the agent reports the refusal", 30, || {
        c.log_text("droverd-node1").contains("refused the config")
    });
    let log = c.log_text("droverd-node1");
    assert!(
        log.contains(&format!(
            "droverd: configless: the controller at {} refused the config: configless mode is not enabled on the controller (SlurmctldParameters=enable_configless)",
            c.conf_server()
        )),
        "{log}"
    );
    assert!(!c.conf_cache("node1").join("drover.conf").exists());
}

/// A configless node cut off while the config changes misses the
/// reconfigure; when it is back and the controller asks it to register
/// again, it fetches the config first and runs the new Prolog.
#[test]
fn a_configless_node_that_missed_a_reconfigure_fetches_the_config_when_back() {
    let Some(c) = Cluster::start_hosts(Spec {
        nodes: 2,
        cpus: 2,
        slurmd_timeout: 4,
        configless: true,
        extra: vec![
            "SlurmctldParameters=enable_configless".into(),
            "ReturnToService=1".into(),
        ],
        ..Default::default()
    }) else {
        return;
    };
    let state = |c: &Cluster| {
        let o = c.run("sinfo", &["-h", "-N", "-n", "node2", "-o", "%T"]);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let net = c.net.as_ref().unwrap();
    net.set_link("node2", false);
    wait_until("node2 is down", 40, || state(&c).starts_with("down"));
    let prolog = c.path().join("prolog.sh");
    std::fs::write(
        &prolog,
        format!("#!/bin/sh\ntouch {}/back-$(hostname)\n", c.path().display()),
    )
    .unwrap();
    std::fs::set_permissions(&prolog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = std::fs::read_to_string(&c.conf).unwrap();
    std::fs::write(
        &c.conf,
        conf.replacen(
            "KillWait=",
            &format!("Prolog={}\nKillWait=", prolog.display()),
            1,
        ),
    )
    .unwrap();
    c.ok("scontrol", &["reconfigure"]);
    assert!(c
        .log_text("droverctld")
        .contains("reconfigure: asking 1 agent(s)"));
    net.set_link("node2", true);
    wait_until("node2 is back", 40, || state(&c) == "idle");
    let cached = std::fs::read_to_string(c.conf_cache("node2").join("drover.conf")).unwrap();
    assert!(cached.contains("Prolog="), "{cached}");
    let id = c.sbatch(&["-w", "node2", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.expect_end(id, "COMPLETED");
    assert!(c.path().join("back-node2").exists(), "no Prolog on node2");
}
