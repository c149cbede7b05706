//! Job mail through a real controller: a fake MailProg records its
//! arguments, environment and body (one file per mail) and the tests check
//! Slurm's subjects, that NONE sends nothing, that a hung MailProg holds up
//! no job, that a mail due when the controller is killed is sent once after
//! the restart, and `drover up`'s mail-to-file program.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

/// Records each call in DIR/mails/<n>.txt: `arg:` lines, `env:` lines, then
/// `body:` and the body (renamed into place when complete).
const RECORDER: &str = "#!/bin/bash\n\
d={DIR}/mails\n\
mkdir -p $d\n\
n=$(date +%s%N)-$$\n\
{ for a in \"$@\"; do printf 'arg:%s\\n' \"$a\"; done; env | sort | sed 's/^/env:/'; echo body:; cat; } > $d/$n.tmp\n\
mv $d/$n.tmp $d/$n.txt\n";

/// A recorded mail.
#[derive(Debug, Clone)]
struct Mail {
    args: Vec<String>,
    env: HashMap<String, String>,
    body: String,
}

impl Mail {
    fn subject(&self) -> &str {
        self.args.get(1).map(String::as_str).unwrap_or("")
    }
    fn env(&self, k: &str) -> &str {
        self.env.get(k).map(String::as_str).unwrap_or("")
    }
}

fn read_mails(dir: &Path) -> Vec<Mail> {
    let mut names: Vec<_> = fs::read_dir(dir.join("mails"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "txt"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .map(|t| {
            let (head, body) = t.split_once("body:\n").unwrap_or((&t, ""));
            let mut m = Mail {
                args: Vec::new(),
                env: HashMap::new(),
                body: body.to_string(),
            };
            for l in head.lines() {
                if let Some(a) = l.strip_prefix("arg:") {
                    m.args.push(a.to_string());
                } else if let Some((k, v)) = l.strip_prefix("env:").and_then(|e| e.split_once('='))
                {
                    m.env.insert(k.to_string(), v.to_string());
                }
            }
            m
        })
        .collect()
}

/// Wait until a recorded mail's subject starts with `prefix`.
fn wait_mail(c: &Cluster, prefix: &str, timeout: Duration) -> Mail {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(m) = read_mails(c.path())
            .into_iter()
            .find(|m| m.subject().starts_with(prefix))
        {
            return m;
        }
        if Instant::now() > deadline {
            panic!(
                "no mail '{prefix}...'; mails: {:?}\n--- ctld\n{}",
                read_mails(c.path())
                    .iter()
                    .map(|m| m.subject().to_string())
                    .collect::<Vec<_>>(),
                c.log_text("droverctld")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn mails_about(c: &Cluster, id: u32) -> Vec<Mail> {
    let tag = format!("Job_id={id} ");
    read_mails(c.path())
        .into_iter()
        .filter(|m| m.subject().contains(&tag))
        .collect()
}

/// Unix seconds of scontrol's `2026-11-25T15:11:46` (any one zone: only
/// differences are used).
fn iso_secs(s: &str) -> i64 {
    let n: Vec<i64> = s
        .split(['-', 'T', ':'])
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    let (y, m, d) = (n[0], n[1], n[2]);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    days * 86400 + n[3] * 3600 + n[4] * 60 + n[5]
}

fn hms(s: i64) -> String {
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn cluster(nodes: u32, cpus: u32, prog: &str) -> Cluster {
    Cluster::start(Spec {
        nodes,
        cpus,
        extra: vec!["MailProg={DIR}/mail.sh".into()],
        files: vec![("mail.sh".into(), prog.into())],
        ..Spec::default()
    })
}

#[test]
fn begin_end_fail_and_time_limit_mails_with_slurms_subjects() {
    let c = cluster(2, 2, RECORDER);
    let ok = c.sbatch(
        &[
            "-J",
            "train",
            "-o",
            "/dev/null",
            "--mail-type=BEGIN,END",
            "--mail-user=alice@example.org",
        ],
        "#!/bin/sh\nsleep 1\n",
    );
    let bad = c.sbatch(
        &["-J", "bad", "-o", "/dev/null", "--mail-type=FAIL"],
        "#!/bin/sh\nexit 3\n",
    );
    let quiet = c.sbatch(
        &["-J", "quiet", "-o", "/dev/null", "--mail-type=NONE"],
        "#!/bin/sh\nexit 1\n",
    );
    let half = c.sbatch(
        &[
            "-J",
            "half",
            "-o",
            "/dev/null",
            "-t",
            "1",
            "--mail-type=TIME_LIMIT_50",
        ],
        "#!/bin/sh\nsleep 300\n",
    );
    c.expect_end(ok, "COMPLETED");
    c.expect_end(bad, "FAILED");
    c.expect_end(quiet, "FAILED");
    let s = ok.to_string();
    let queued = iso_secs(&c.job_field(&s, "StartTime").unwrap())
        - iso_secs(&c.job_field(&s, "SubmitTime").unwrap());

    let begin = wait_mail(
        &c,
        &format!("Slurm Job_id={ok} Name=train Began"),
        Duration::from_secs(30),
    );
    let subject = format!(
        "Slurm Job_id={ok} Name=train Began, Queued time {}",
        hms(queued)
    );
    assert_eq!(begin.args, vec!["-s", &subject, "alice@example.org"]);
    assert_eq!(begin.env("SLURM_JOB_ID"), s);
    assert_eq!(begin.env("SLURM_JOB_NAME"), "train");
    assert_eq!(begin.env("SLURM_JOB_MAIL_TYPE"), "Began");
    assert_eq!(begin.env("SLURM_JOB_STATE"), "RUNNING");
    assert_eq!(begin.env("SLURM_JOB_QUEUED_TIME"), hms(queued));
    assert_eq!(begin.env("SLURM_CLUSTER_NAME"), "test");
    assert_eq!(
        begin.env("SLURM_JOB_USER"),
        c.job_field(&s, "UserId")
            .unwrap()
            .split('(')
            .next()
            .unwrap()
    );
    assert_eq!(begin.env.get("HOME"), None, "only Slurm's variables");

    let end = wait_mail(
        &c,
        &format!("Slurm Job_id={ok} Name=train Ended"),
        Duration::from_secs(30),
    );
    let run = c.job_field(&s, "RunTime").unwrap();
    assert_eq!(
        end.subject(),
        format!("Slurm Job_id={ok} Name=train Ended, Run time {run}, COMPLETED, ExitCode 0")
    );
    assert_eq!(end.env("SLURM_JOB_MAIL_TYPE"), "Ended");
    assert_eq!(end.env("SLURM_JOB_STATE"), "COMPLETED");
    assert_eq!(end.env("SLURM_JOB_EXIT_CODE_MAX"), "0");
    assert_eq!(end.env("SLURM_JOB_RUN_TIME"), run);
    assert!(
        end.body
            .starts_with(&format!("Job ID: {ok}\nCluster: test\n")),
        "{}",
        end.body
    );
    assert!(
        end.body.contains("State: COMPLETED (exit code 0)\n"),
        "{}",
        end.body
    );
    assert!(end.body.contains("CPU Efficiency: "), "{}", end.body);

    let fail = wait_mail(
        &c,
        &format!("Slurm Job_id={bad} Name=bad Failed"),
        Duration::from_secs(30),
    );
    let run = c.job_field(&bad.to_string(), "RunTime").unwrap();
    assert_eq!(
        fail.subject(),
        format!("Slurm Job_id={bad} Name=bad Failed, Run time {run}, FAILED, ExitCode 3")
    );
    assert_eq!(fail.env("SLURM_JOB_EXIT_CODE_MAX"), "3");
    assert!(
        fail.body.contains("State: FAILED (exit code 3)\n"),
        "{}",
        fail.body
    );

    // Half of a one-minute limit: 30 seconds (give or take the tick that sees it).
    let t = wait_mail(
        &c,
        &format!("Slurm Job_id={half} Name=half Reached 50% of time limit, Run time 00:00:"),
        Duration::from_secs(60),
    );
    let secs: i64 = t.env("SLURM_JOB_RUN_TIME")[6..].parse().unwrap();
    assert!((30..=32).contains(&secs), "{}", t.subject());
    c.ok("scancel", &[&half.to_string()]);
    c.wait_done(half);

    // Every mail once; nothing for NONE (its end came before the others' mails).
    assert_eq!(mails_about(&c, ok).len(), 2);
    assert_eq!(mails_about(&c, bad).len(), 1);
    assert_eq!(mails_about(&c, half).len(), 1);
    assert!(mails_about(&c, quiet).is_empty());
}

#[test]
fn arrays_mail_a_summary_or_every_task() {
    let c = cluster(1, 4, RECORDER);
    let a = c.sbatch(
        &[
            "-J",
            "sum",
            "-o",
            "/dev/null",
            "--array=0-2",
            "--mail-type=END",
        ],
        "#!/bin/sh\ntrue\n",
    );
    let t = c.sbatch(
        &[
            "-J",
            "each",
            "-o",
            "/dev/null",
            "--array=0-1",
            "--mail-type=END,ARRAY_TASKS",
        ],
        "#!/bin/sh\ntrue\n",
    );
    for i in 0..3 {
        c.wait_state(&format!("{a}_{i}"), &["COMPLETED"], Duration::from_secs(60));
    }
    let m = wait_mail(
        &c,
        &format!("Slurm Array Summary Job_id={a}_* ({a}) Name=sum Ended"),
        Duration::from_secs(30),
    );
    assert_eq!(
        m.subject(),
        format!("Slurm Array Summary Job_id={a}_* ({a}) Name=sum Ended, COMPLETED, ExitCode [0-0]")
    );
    assert_eq!(m.env("SLURM_JOB_EXIT_CODE_MIN"), "0");
    let summaries = m.body.lines().filter(|l| l.starts_with("Job ID: ")).count();
    assert_eq!(summaries, 3, "every task in the body: {}", m.body);
    for i in 0..2 {
        let id = format!("{t}_{i}");
        c.wait_state(&id, &["COMPLETED"], Duration::from_secs(60));
        let job = c.job_field(&id, "JobId").unwrap();
        let run = c.job_field(&id, "RunTime").unwrap();
        let m = wait_mail(
            &c,
            &format!("Slurm Array Task Job_id={t}_{i} ({job}) Name=each Ended"),
            Duration::from_secs(30),
        );
        assert_eq!(
            m.subject(),
            format!(
                "Slurm Array Task Job_id={t}_{i} ({job}) Name=each Ended, Run time {run}, COMPLETED, ExitCode 0"
            )
        );
        assert_eq!(m.env("SLURM_ARRAY_TASK_ID"), i.to_string());
        assert_eq!(m.env("SLURM_ARRAY_JOB_ID"), t.to_string());
    }
    // One summary, however many tasks.
    let sums = read_mails(c.path())
        .iter()
        .filter(|m| m.subject().contains(&format!("Job_id={a}_")))
        .count();
    assert_eq!(sums, 1);
}

#[test]
fn a_hung_mail_prog_does_not_hold_up_the_next_job() {
    // The first mail never finishes (killed with the controller at the end).
    let prog = "#!/bin/bash\necho \"$2\" >> {DIR}/hung\nexec sleep 600\n";
    let c = cluster(1, 1, prog);
    let first = c.sbatch(
        &["-o", "/dev/null", "--mail-type=BEGIN,END"],
        "#!/bin/sh\ntrue\n",
    );
    let hung = c.path().join("hung");
    c.wait_file(&hung, |t| t.contains(&format!("Job_id={first} ")));
    // The one CPU is free once the first job ends; the second starts while
    // its predecessor's mail is still in MailProg.
    let second = c.sbatch(&["-o", "/dev/null"], "#!/bin/sh\nsleep 300\n");
    c.expect_end(first, "COMPLETED");
    c.wait_state(&second.to_string(), &["RUNNING"], Duration::from_secs(30));
    let t = fs::read_to_string(&hung).unwrap();
    assert_eq!(
        t.lines().count(),
        1,
        "the first mail is still being sent: {t}"
    );
    assert!(t.contains("Began"), "{t}");
    c.ok("scancel", &[&second.to_string()]);
    c.wait_done(second);
}

#[test]
fn a_mail_due_at_a_controller_kill_is_sent_once_after_the_restart() {
    // The first call hangs until the controller dies (MailProg dies with
    // it); later calls record the mail.
    let prog = format!(
        "#!/bin/bash\nif mkdir {{DIR}}/first 2>/dev/null; then exec sleep 600; fi\n{}",
        RECORDER.trim_start_matches("#!/bin/bash\n")
    );
    let mut c = cluster(1, 2, &prog);
    let id = c.sbatch(
        &["-J", "crash", "-o", "/dev/null", "--mail-type=END"],
        "#!/bin/sh\ntrue\n",
    );
    c.expect_end(id, "COMPLETED");
    // The END mail is in MailProg: due and not yet marked sent.
    let first = c.path().join("first");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !first.exists() {
        assert!(Instant::now() < deadline, "MailProg never called");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(read_mails(c.path()).is_empty());
    c.kill_ctld();
    c.start_ctld().unwrap();
    let run = c.job_field(&id.to_string(), "RunTime").unwrap();
    let m = wait_mail(
        &c,
        &format!("Slurm Job_id={id} Name=crash Ended"),
        Duration::from_secs(30),
    );
    assert_eq!(
        m.subject(),
        format!("Slurm Job_id={id} Name=crash Ended, Run time {run}, COMPLETED, ExitCode 0")
    );
    assert!(c
        .log_text("droverctld")
        .contains("job mails were due and not sent"));
    // Mails go out in order: once a later job's mail is there, a second copy
    // of the first would be too.
    let later = c.sbatch(
        &["-J", "later", "-o", "/dev/null", "--mail-type=END"],
        "#!/bin/sh\ntrue\n",
    );
    wait_mail(
        &c,
        &format!("Slurm Job_id={later} Name=later Ended"),
        Duration::from_secs(30),
    );
    assert_eq!(mails_about(&c, id).len(), 1, "exactly one mail");
}

#[test]
fn drover_mail_writes_the_clusters_mail_log() {
    // What `drover up` configures: DIR/bin/drover-mail -> drover.
    let c = Cluster::start(Spec {
        nodes: 1,
        extra: vec!["MailProg={DIR}/bin/drover-mail".into()],
        ..Spec::default()
    });
    std::os::unix::fs::symlink(
        drover_tests::bin_dir().join("drover"),
        c.path().join("bin/drover-mail"),
    )
    .unwrap();
    let id = c.sbatch(
        &[
            "-J",
            "logged",
            "-o",
            "/dev/null",
            "--mail-type=END",
            "--mail-user=bob",
        ],
        "#!/bin/sh\ntrue\n",
    );
    c.expect_end(id, "COMPLETED");
    let log = c.path().join("mail.log");
    let t = c.wait_file(&log, |t| t.contains("\n\n"));
    assert!(t.starts_with("From drover "), "{t}");
    assert!(t.contains("\nTo: bob\n"), "{t}");
    assert!(
        t.contains(&format!(
            "\nSubject: Slurm Job_id={id} Name=logged Ended, Run time "
        )),
        "{t}"
    );
    assert!(t.contains(&format!("\nJob ID: {id}\n")), "{t}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&log).unwrap().permissions().mode() & 0o777,
        0o600
    );
}
