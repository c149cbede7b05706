//! User-set strings cannot drive the terminal or forge output lines: a job
//! named with an escape sequence and a newline prints with `?` in their
//! place in sacct (table and parsable), squeue and scontrol, while the JSON
//! output keeps the real name, escaped.

use std::time::{Duration, Instant};

use drover_tests::{Cluster, Spec};

const NAME: &str = "\x1b[31mred\nFORGED|1|COMPLETED";
const SHOWN: &str = "?[31mred?FORGED|1|COMPLETED";

fn no_controls(what: &str, text: &str) {
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{what} printed a control character: {text:?}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("FORGED")),
        "{what} printed a forged line: {text:?}"
    );
}

#[test]
fn control_characters_in_names_print_as_question_marks() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    let id = c.sbatch(
        &[
            "-J",
            NAME,
            "--comment",
            "a\x1b]0;title\x07b",
            "-o",
            "/dev/null",
        ],
        "#!/bin/sh\ntrue\n",
    );
    let ids = id.to_string();
    let q = c.ok("squeue", &["-h", "-t", "all", "-o", "%j"]);
    no_controls("squeue", &q);
    let s = c.ok("scontrol", &["show", "job", &ids]);
    no_controls("scontrol", &s);
    assert!(s.contains(&format!("JobName={SHOWN}")), "{s}");
    c.expect_end(id, "COMPLETED");

    // sacct, once the record has reached the accounting daemon.
    let deadline = Instant::now() + Duration::from_secs(60);
    let parsable = loop {
        let o = c.ok(
            "sacct",
            &[
                "-j",
                &ids,
                "-X",
                "-n",
                "-P",
                "-o",
                "JobID,JobName,Comment,State",
            ],
        );
        if o.contains("COMPLETED") {
            break o;
        }
        assert!(Instant::now() < deadline, "no sacct record: {o:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    no_controls("sacct -P", &parsable);
    assert_eq!(parsable.lines().count(), 1, "{parsable:?}");
    assert!(
        parsable.contains(SHOWN) && parsable.contains("a?]0;title?b"),
        "{parsable:?}"
    );
    let table = c.ok("sacct", &["-j", &ids, "-X", "-o", "JobID,JobName%60,State"]);
    no_controls("sacct", &table);
    assert!(table.contains(SHOWN), "{table:?}");
    // JSON keeps the real string, escaped.
    let json = c.ok("sacct", &["-j", &ids, "--json"]);
    assert!(
        json.contains(r#""\u001b[31mred\nFORGED|1|COMPLETED""#),
        "{json}"
    );
}

/// `scontrol show hostnames ... | head`: a closed standard output ends the
/// command by SIGPIPE, quietly, as in Slurm (the handler that keeps socket
/// writes from killing the command must not change this).
#[test]
fn a_closed_stdout_ends_a_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(drover_tests::bin_dir().join("drover"))
        .args(["scontrol", "show", "hostnames", "n[1-900000]"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("scontrol");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("scontrol");
    assert_eq!(o.status.signal(), Some(libc::SIGPIPE), "{:?}", o.status);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
