use drover_tests::users::{nobody_home, nobody_touches_only_their_jobs};
use drover_tests::{Cluster, Spec};

#[test]
fn users_run_as_themselves_and_touch_only_their_jobs() {
    let c = Cluster::start(Spec::default());
    let home = nobody_home(&c);
    let root_job = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 60\n");
    nobody_touches_only_their_jobs(&c, &home, root_job);
}

/// The `drover` command is linked statically (where it can be); a user that
/// only a name service module knows (sss, ldap, systemd: here a `getent` that answers
/// for one) still resolves, through `getent`, without the C library loading
/// a module into the static process.
#[test]
fn a_user_only_the_name_service_knows_resolves_in_the_static_command() {
    use drover_proto::sys::nss;
    let ldd = std::process::Command::new("ldd")
        .arg(drover_tests::bin_dir().join("drover"))
        .output()
        .expect("ldd");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    // Linked statically wherever the C library's static archives exist
    // (cli/build.rs asks the compiler the same way).
    let statically = said.contains("not a dynamic executable");
    let libc_a = std::process::Command::new("cc")
        .arg("-print-file-name=libc.a")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().starts_with('/'))
        .unwrap_or(false);
    assert_eq!(statically, libc_a, "{said}");

    let c = Cluster::start(Spec::default());
    let fake = c.path().join("fake-getent");
    std::fs::create_dir_all(&fake).unwrap();
    let script = fake.join("getent");
    let log = fake.join("asked");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$*\" >> {}\n", log.display())
            + "case \"$1 $2\" in\n\
         'passwd ldapuser'|'passwd 4242') echo 'ldapuser:*:4242:4242:LDAP:/home/ldapuser:/bin/sh' ;;\n\
         *) exec /usr/bin/getent \"$@\" ;;\nesac\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}:/usr/local/bin:/usr/bin:/bin",
        fake.display(),
        drover_tests::bin_dir().display()
    );
    let squeue = |user: &str| {
        c.cmd("squeue")
            .env("PATH", &path)
            .args(["-h", "-u", user])
            .output()
            .unwrap()
    };
    // Where every passwd source is built into the C library (`files`), the
    // command asks it, and only /etc/passwd counts.
    let conf = std::fs::read_to_string("/etc/nsswitch.conf").unwrap_or_default();
    let route = nss::route_for(statically, nss::sources(&conf, "passwd").as_deref());
    let o = squeue("ldapuser");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if route == nss::Route::Libc {
        assert!(err.contains("Invalid user: ldapuser"), "{err}");
    } else {
        assert!(o.status.success() && !err.contains("Invalid user"), "{err}");
    }
    // Slurm's words for a user no source knows (squeue goes on, as Slurm's).
    let o = squeue("nosuchuser");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Invalid user: nosuchuser"),
        "{o:?}"
    );
    // Users in /etc/passwd resolve without asking getent at all.
    assert!(squeue("root").status.success());
    let asked = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!asked.contains("passwd root"), "{asked}");
    if route != nss::Route::Libc {
        assert!(asked.contains("passwd ldapuser"), "{asked}");
    }
}
