//! The droversim binary on the committed traces (sim/testdata): same input,
//! same output; dependencies and arrays as the core runs them; --compare
//! shows a policy change; --plot writes an SVG; bad lines are named.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(f: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(f)
        .display()
        .to_string()
}

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_droversim"))
        .args(args)
        .output()
        .expect("droversim runs")
}

fn ok(args: &[&str]) -> String {
    let o = sim(args);
    assert!(
        o.status.success(),
        "droversim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// CSV rows by trace id: (id, start, end, state, fields).
fn rows(csv: &str) -> Vec<Vec<String>> {
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("id,trace_id,user,account,partition,submit,start,end,wait,run,cpus,state,reason")
    );
    lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

fn row<'a>(rows: &'a [Vec<String>], trace_id: &str) -> &'a Vec<String> {
    rows.iter()
        .find(|r| r[1] == trace_id)
        .unwrap_or_else(|| panic!("no row for trace job {trace_id}"))
}

fn num(v: &str) -> i64 {
    v.parse()
        .unwrap_or_else(|_| panic!("'{v}' is not a number"))
}

fn tmp(name: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("temp dir");
    let p = d.path().join(name);
    (d, p)
}

#[test]
fn same_input_same_output() {
    let conf = data("slurm.conf");
    for w in [
        vec!["--sacct", &data("small.sacct")][..].to_vec(),
        vec!["--swf", &data("small.swf")],
        vec!["--synthetic", "150", "--seed", "3"],
    ] {
        let mut a = vec!["-c", conf.as_str(), "--csv", "-"];
        a.extend(w.iter().map(|s| &**s));
        let first = ok(&a);
        let second = ok(&a);
        assert_eq!(first, second, "two runs of {w:?} differ");
        assert!(first.contains("wait mean"), "{first}");
    }
    // Another seed is another workload.
    let a = ok(&[
        "-c",
        &conf,
        "--synthetic",
        "150",
        "--seed",
        "3",
        "--csv",
        "-",
    ]);
    let b = ok(&[
        "-c",
        &conf,
        "--synthetic",
        "150",
        "--seed",
        "4",
        "--csv",
        "-",
    ]);
    assert_ne!(a, b);
}

#[test]
fn dependencies_and_arrays_run_as_the_core_says() {
    let (_d, csv) = tmp("jobs.csv");
    ok(&[
        "-c",
        &data("slurm.conf"),
        "--sacct",
        &data("small.sacct"),
        "--csv",
        &csv.display().to_string(),
    ]);
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let r = rows(&text);
    // 101 afterok:100 starts once 100 has completed.
    let (a, b) = (row(&r, "100"), row(&r, "101"));
    assert_eq!(a[11], "COMPLETED");
    assert!(
        num(&b[6]) >= num(&a[7]),
        "101 started {} before 100 ended {}",
        b[6],
        a[7]
    );
    // 102 fails: 103 (afterok:102) never starts and is cancelled when the
    // trace's owner cancelled it; 104 (afternotok:102) runs after 102.
    let (f, never, after) = (row(&r, "102"), row(&r, "103"), row(&r, "104"));
    assert_eq!(f[11], "FAILED");
    assert_eq!((never[6].as_str(), never[11].as_str()), ("", "CANCELLED"));
    assert!(num(&after[6]) >= num(&f[7]));
    // The array 110 is one submission: tasks A_0..A_3 of one array id, the
    // ids the core gives; each runs its trace run time (1200 s).
    let tasks: Vec<&Vec<String>> = r.iter().filter(|x| x[1].starts_with("110_")).collect();
    assert_eq!(tasks.len(), 4, "{text}");
    let array_id = tasks[0][0].split('_').next().unwrap().to_string();
    for t in &tasks {
        let (id, task) = t[0].split_once('_').expect("A_T id");
        assert_eq!(id, array_id);
        assert_eq!(t[1], format!("110_{task}"));
        assert_eq!((t[9].as_str(), t[11].as_str()), ("1200", "COMPLETED"));
    }
    // 130 ran into its one-hour limit: the core's time limit ended it.
    let g = row(&r, "130");
    assert_eq!((g[11].as_str(), g[9].as_str()), ("TIMEOUT", "3600"));
    // 122 (1 CPU, 10 min) was backfilled beside 120 while 121 (every CPU)
    // waited for 120 to end. As in Slurm, the event-driven pass stops at
    // 121 (first in its partition and blocked), so 122 starts at the next
    // backfill cycle: within one bf_interval (30 s), ahead of 121.
    let (bf, big) = (row(&r, "122"), row(&r, "121"));
    assert!(num(&bf[8]) < 30, "122 waited {} s", bf[8]);
    assert!(num(&bf[6]) < num(&big[6]), "122 was not backfilled: {bf:?}");
    assert!(num(&big[6]) >= num(&row(&r, "120")[7]));
}

#[test]
fn compare_shows_the_policy_change() {
    let out = ok(&[
        "-c",
        &data("slurm.conf"),
        "--sacct",
        &data("small.sacct"),
        "--compare",
        &data("builtin.conf"),
    ]);
    let head = out.lines().next().expect("header");
    assert!(
        head.contains("slurm.conf") && head.contains("builtin.conf"),
        "{head}"
    );
    // Without backfill job 122 waits behind 121: eve's mean wait grows.
    let line = out
        .lines()
        .find(|l| l.starts_with("user eve: wait mean"))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert!(line.contains('+'), "no difference: {line}");
    assert_ne!(cells[cells.len() - 1], "=", "{line}");
}

#[test]
fn plot_is_an_svg() {
    let (_d, svg) = tmp("run.svg");
    ok(&[
        "-c",
        &data("slurm.conf"),
        "--sacct",
        &data("small.sacct"),
        "--plot",
        &svg.display().to_string(),
    ]);
    let text = std::fs::read_to_string(&svg).expect("svg written");
    check_xml(&text);
    assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    for label in [
        "pending jobs",
        "running CPUs",
        "running GPUs",
        "utilisation %",
    ] {
        assert!(text.contains(label), "no panel {label}");
    }
    assert!(text.matches("<polyline").count() >= 5);
}

/// A lean well-formedness check: tags balance, attributes are quoted,
/// text holds no raw `<` or `&` outside entities.
fn check_xml(s: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        assert!(!text.contains('>'), "stray '>' in text: {text}");
        for (k, _) in text.match_indices('&') {
            let ent = &text[k..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| ent.starts_with(e)),
                "bad entity: {ent}"
            );
        }
        let close = rest[open..].find('>').expect("unclosed tag") + open;
        let tag = &rest[open + 1..close];
        assert!(
            tag.matches('"').count().is_multiple_of(2),
            "unbalanced quotes: {tag}"
        );
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().expect("tag name");
            stack.push(name.to_string());
        }
        rest = &rest[close + 1..];
    }
    assert!(rest.trim().is_empty(), "text after the root: {rest}");
    assert!(stack.is_empty(), "unclosed: {stack:?}");
}

#[test]
fn bad_lines_are_named_skipped_or_refused() {
    let (d, trace) = tmp("bad.sacct");
    let good = std::fs::read_to_string(data("small.sacct")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(
        3,
        "999|x|y|batch|normal|not-a-date|||1|1|||1|COMPLETED|0:0|",
    );
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let t = trace.display().to_string();
    let o = sim(&["-c", &data("slurm.conf"), "--sacct", &t]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{t}:4: Submit 'not-a-date' is not a time")),
        "{err}"
    );
    assert!(err.contains("1 malformed line(s) skipped"), "{err}");
    let o = sim(&[
        "-c",
        &data("slurm.conf"),
        "--sacct",
        &t,
        "--bad-lines",
        "refuse",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(":4: Submit") && err.contains("--bad-lines refuse"),
        "{err}"
    );
    // Options and files are named when wrong.
    let o = sim(&["-c", &data("slurm.conf"), "--synthetic", "ten"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("option --synthetic: 'ten' is not a number")
    );
    let missing = d.path().join("nope.conf").display().to_string();
    let o = sim(&["-c", &missing, "--synthetic", "5"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope.conf"));
    let o = sim(&["-c", &data("slurm.conf")]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("a workload is needed"));
}

#[test]
fn preemption_requeues_and_the_job_runs_again() {
    // ann's job fills both nodes in the low partition; ben's arrives in the
    // high one (PreemptType=preempt/partition_prio, PreemptMode=REQUEUE):
    // ann's is requeued, runs again after ben's, for its whole run time.
    let out = ok(&[
        "-c",
        &data("preempt.conf"),
        "--sacct",
        &data("preempt.sacct"),
        "--csv",
        "-",
    ]);
    let r = rows(out.split("\njobs ").next().expect("csv"));
    let (low, high) = (row(&r, "1"), row(&r, "2"));
    assert_eq!(high[8], "0", "{out}");
    assert_eq!(num(&low[6]), num(&high[7]), "{out}");
    assert_eq!((low[9].as_str(), low[11].as_str()), ("3600", "COMPLETED"));
}

/// Power saving: idle nodes power down after SuspendTime; a job needing
/// them waits for their resume (RESUME_SECS in the simulation) and runs.
#[test]
fn powered_down_nodes_resume_for_jobs() {
    let run = |conf: &str| {
        let (_d, csv) = tmp("jobs.csv");
        ok(&[
            "-c",
            &data(conf),
            "--swf",
            &data("power.swf"),
            "--csv",
            csv.to_str().unwrap(),
        ]);
        rows(&std::fs::read_to_string(&csv).expect("csv written"))
    };
    let (with, without) = (run("power.conf"), run("slurm.conf"));
    assert_eq!(with.len(), without.len());
    for r in &with {
        assert!(r[11] != "PENDING" && num(&r[7]) > 0, "never ran: {r:?}");
    }
    // The second job comes after the cluster sat idle past SuspendTime:
    // it waits for a node's resume (30 s in the simulation); without power
    // saving it starts at once.
    assert_eq!(num(&row(&without, "2")[8]), 0, "{without:?}");
    assert_eq!(num(&row(&with, "2")[8]), 30, "{with:?}");
    assert_eq!(num(&row(&with, "1")[8]), 0, "{with:?}");
}

/// A pending array task cancelled inside its meta record leaves no record
/// in the core (as Slurm), yet every trace job gets its row: once, as
/// CANCELLED, never started; the last pending task too.
#[test]
fn cancelled_pending_array_tasks_keep_their_rows() {
    let d = tempfile::tempdir().expect("temp dir");
    let conf = d.path().join("slurm.conf");
    std::fs::write(
        &conf,
        "ClusterName=t\nSlurmctldHost=ctl\nNodeName=n1 CPUs=2 RealMemory=1000\n\
         PartitionName=p Nodes=n1 Default=YES MaxTime=UNLIMITED\n",
    )
    .expect("conf written");
    let trace = d.path().join("t.sacct");
    let day = "2026-01-05T";
    let line = |id: &str, submit: &str, start: &str, end: &str, state: &str| {
        format!("{id}|alice|p|{day}{submit}|{start}|{day}{end}|02:00:00|2|{state}\n")
    };
    let mut text = String::from("JobID|User|Partition|Submit|Start|End|Timelimit|ReqCPUS|State\n");
    text += &line(
        "1",
        "10:00:00",
        &format!("{day}10:00:00"),
        "11:00:00",
        "COMPLETED",
    );
    text += &line(
        "2_0",
        "10:00:10",
        &format!("{day}11:00:00"),
        "11:10:00",
        "COMPLETED",
    );
    text += &line("2_1", "10:00:10", "Unknown", "10:05:00", "CANCELLED");
    text += &line(
        "2_2",
        "10:00:10",
        &format!("{day}11:10:00"),
        "11:20:00",
        "COMPLETED",
    );
    text += &line("3_0", "10:00:20", "Unknown", "10:06:00", "CANCELLED");
    text += &line("3_1", "10:00:20", "Unknown", "10:07:00", "CANCELLED");
    std::fs::write(&trace, text).expect("trace written");
    let out = d.path().join("jobs.csv");
    ok(&[
        "-c",
        &conf.display().to_string(),
        "--sacct",
        &trace.display().to_string(),
        "--csv",
        &out.display().to_string(),
    ]);
    let csv = std::fs::read_to_string(&out).expect("csv written");
    let r = rows(&csv);
    let mut ids: Vec<&str> = r.iter().map(|x| x[1].as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["1", "2_0", "2_1", "2_2", "3_0", "3_1"], "{csv}");
    for t in ["2_1", "3_0", "3_1"] {
        let x = row(&r, t);
        assert_eq!((x[6].as_str(), x[11].as_str()), ("", "CANCELLED"), "{x:?}");
    }
    assert_eq!(row(&r, "2_2")[11], "COMPLETED");
}
