//! What a run measured: the per-job CSV, the summary, and two summaries
//! side by side (`--compare`). Pure: outcomes in, text out.

use std::collections::BTreeMap;
use std::fmt::Write;

use drover_proto::JobState;

use crate::engine::{JobOut, Outcomes};

/// Bounded slowdown's threshold (seconds): runs shorter count as this long.
pub const TAU: f64 = 10.0;

/// The per-job table: one row per job (array task), by job id.
pub fn csv(out: &Outcomes) -> String {
    let mut s = String::with_capacity(out.jobs.len() * 80 + 100);
    s.push_str("id,trace_id,user,account,partition,submit,start,end,wait,run,cpus,state,reason\n");
    for j in &out.jobs {
        let opt = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{}",
            field(&j.id),
            field(&j.trace_id),
            field(&j.user),
            field(&j.account),
            field(&j.partition),
            j.submit,
            opt(j.start),
            opt(j.end),
            opt(j.start.map(|st| st - j.submit)),
            j.run,
            j.cpus,
            j.state.long_name(),
            field(&j.reason),
        );
    }
    s
}

/// A CSV field, quoted when it holds a separator.
fn field(v: &str) -> String {
    if v.contains([',', '"', '\n']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_string()
    }
}

/// How a metric is shown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Count,
    Secs,
    Pct,
    Ratio,
}

/// One line of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: Unit,
}

fn m(name: impl Into<String>, value: f64, unit: Unit) -> Metric {
    Metric {
        name: name.into(),
        value,
        unit,
    }
}

/// Sorted values' quantile (nearest rank); 0 for none.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[k - 1]
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The summary's metrics, in the order printed.
pub fn summary(out: &Outcomes) -> Vec<Metric> {
    let mut v = Vec::new();
    let count = |s: JobState| out.jobs.iter().filter(|j| j.state == s).count() as f64;
    let started: Vec<&JobOut> = out.jobs.iter().filter(|j| j.start.is_some()).collect();
    v.push(m("jobs", out.jobs.len() as f64, Unit::Count));
    v.push(m("started", started.len() as f64, Unit::Count));
    for s in [
        JobState::Completed,
        JobState::Failed,
        JobState::Timeout,
        JobState::Cancelled,
        JobState::Preempted,
    ] {
        v.push(m(format!("state {}", s.long_name()), count(s), Unit::Count));
    }
    let never = out.jobs.iter().filter(|j| !j.state.is_final()).count();
    v.push(m(
        "never started (pending at the end)",
        never as f64,
        Unit::Count,
    ));
    v.push(m(
        "refused at submit",
        out.refused.len() as f64,
        Unit::Count,
    ));
    let span = (out.t_end - out.t0).max(1) as f64;
    v.push(m("makespan", span, Unit::Secs));
    if out.total_cpus > 0 {
        v.push(m(
            "utilisation (CPU)",
            100.0 * out.busy_cpu_secs / (out.total_cpus as f64 * span),
            Unit::Pct,
        ));
    }
    if out.total_gpus > 0 {
        v.push(m(
            "utilisation (GPU)",
            100.0 * out.busy_gpu_secs / (out.total_gpus as f64 * span),
            Unit::Pct,
        ));
    }
    let mut waits: Vec<f64> = started
        .iter()
        .map(|j| (j.start.unwrap_or(j.submit) - j.submit) as f64)
        .collect();
    waits.sort_by(f64::total_cmp);
    v.push(m("wait mean", mean(&waits), Unit::Secs));
    v.push(m("wait median", quantile(&waits, 0.5), Unit::Secs));
    v.push(m("wait p95", quantile(&waits, 0.95), Unit::Secs));
    v.push(m(
        "wait max",
        waits.last().copied().unwrap_or(0.0),
        Unit::Secs,
    ));
    let slow: Vec<f64> = started
        .iter()
        .map(|j| {
            let wait = (j.start.unwrap_or(j.submit) - j.submit) as f64;
            let run = j.run as f64;
            ((wait + run) / run.max(TAU)).max(1.0)
        })
        .collect();
    v.push(m(
        "bounded slowdown mean (tau 10 s)",
        mean(&slow),
        Unit::Ratio,
    ));
    for (what, key) in [
        (
            "user",
            (|j: &JobOut| j.user.clone()) as fn(&JobOut) -> String,
        ),
        ("partition", |j: &JobOut| j.partition.clone()),
    ] {
        let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for j in &started {
            by.entry(key(j))
                .or_default()
                .push((j.start.unwrap_or(j.submit) - j.submit) as f64);
        }
        for (k, mut w) in by {
            w.sort_by(f64::total_cmp);
            v.push(m(format!("{what} {k}: jobs"), w.len() as f64, Unit::Count));
            v.push(m(format!("{what} {k}: wait mean"), mean(&w), Unit::Secs));
            v.push(m(
                format!("{what} {k}: wait median"),
                quantile(&w, 0.5),
                Unit::Secs,
            ));
        }
    }
    for (k, s) in out.shares.iter().enumerate() {
        let f: Vec<f64> = s.users.iter().map(|u| u.1).collect();
        let (lo, hi) = f
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
                (a.min(*x), b.max(*x))
            });
        let spread = if f.is_empty() { 0.0 } else { hi - lo };
        v.push(m(
            format!(
                "fair-share spread at {}/4 (max-min FairShare over users)",
                k + 1
            ),
            spread,
            Unit::Ratio,
        ));
    }
    v.push(m("scheduling passes", out.passes as f64, Unit::Count));
    v
}

fn show(x: f64, unit: Unit) -> String {
    match unit {
        Unit::Count => format!("{x:.0}"),
        Unit::Secs => format!("{x:.1} s"),
        Unit::Pct => format!("{x:.2} %"),
        Unit::Ratio => format!("{x:.3}"),
    }
}

/// The summary as text: one `name: value` line per metric.
pub fn render(metrics: &[Metric], out: &Outcomes) -> String {
    let w = metrics.iter().map(|x| x.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for x in metrics {
        let _ = writeln!(s, "{:<w$}  {}", x.name, show(x.value, x.unit));
    }
    for (line, id, why) in out.refused.iter().take(5) {
        let at = if *line > 0 {
            format!("trace line {line}, ")
        } else {
            String::new()
        };
        let _ = writeln!(s, "refused: {at}job {id}: {why}");
    }
    if out.refused.len() > 5 {
        let _ = writeln!(s, "refused: ... and {} more", out.refused.len() - 5);
    }
    if out.deps_dropped > 0 {
        let _ = writeln!(
            s,
            "dependencies on jobs outside the trace or already forgotten (MinJobAge), dropped: {}",
            out.deps_dropped
        );
    }
    s
}

/// Two summaries side by side: metric, A, B, B - A, change.
pub fn compare(a: &[Metric], b: &[Metric], name_a: &str, name_b: &str) -> String {
    let mut names: Vec<&str> = a.iter().map(|x| x.name.as_str()).collect();
    for x in b {
        if !names.contains(&x.name.as_str()) {
            names.push(&x.name);
        }
    }
    let find = |v: &[Metric], n: &str| v.iter().find(|x| x.name == n).cloned();
    let rows: Vec<[String; 5]> = names
        .iter()
        .map(|n| {
            let (x, y) = (find(a, n), find(b, n));
            let unit = x.as_ref().or(y.as_ref()).map_or(Unit::Count, |m| m.unit);
            let cell = |v: &Option<Metric>| v.as_ref().map_or("-".into(), |m| show(m.value, unit));
            let (diff, pct) = match (&x, &y) {
                (Some(x), Some(y)) => {
                    let d = y.value - x.value;
                    let sign = if d > 0.0 { "+" } else { "" };
                    let pct = if x.value != 0.0 && d != 0.0 {
                        format!("{sign}{:.1} %", 100.0 * d / x.value.abs())
                    } else if d == 0.0 {
                        "=".into()
                    } else {
                        String::new()
                    };
                    (format!("{sign}{}", show(d, unit)), pct)
                }
                _ => (String::new(), String::new()),
            };
            [n.to_string(), cell(&x), cell(&y), diff, pct]
        })
        .collect();
    let head = [
        "metric".to_string(),
        name_a.to_string(),
        name_b.to_string(),
        "difference".into(),
        "change".into(),
    ];
    let mut w = [0usize; 5];
    for r in rows.iter().chain(std::iter::once(&head)) {
        for (k, c) in r.iter().enumerate() {
            w[k] = w[k].max(c.len());
        }
    }
    let mut s = String::new();
    for r in std::iter::once(&head).chain(rows.iter()) {
        let _ = writeln!(
            s,
            "{:<a$}  {:>b$}  {:>c$}  {:>d$}  {:>e$}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            a = w[0],
            b = w[1],
            c = w[2],
            d = w[3],
            e = w[4]
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, user: &str, submit: i64, start: i64, end: i64) -> JobOut {
        JobOut {
            id: id.into(),
            trace_id: id.into(),
            user: user.into(),
            account: String::new(),
            partition: "batch".into(),
            submit,
            start: Some(start),
            end: Some(end),
            run: end - start,
            cpus: 1,
            state: JobState::Completed,
            reason: String::new(),
        }
    }

    #[test]
    fn waits_slowdown_and_utilisation() {
        let out = Outcomes {
            jobs: vec![
                job("1", "a", 0, 0, 100),
                job("2", "b", 0, 100, 105),
                job("3", "b", 10, 110, 130),
            ],
            total_cpus: 2,
            busy_cpu_secs: 125.0,
            t0: 0,
            t_end: 130,
            ..Default::default()
        };
        let s = summary(&out);
        let get = |n: &str| s.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(get("jobs"), 3.0);
        assert_eq!(get("wait mean"), 200.0 / 3.0);
        assert_eq!(get("wait median"), 100.0);
        assert_eq!(get("wait max"), 100.0);
        // (0+100)/100=1, (100+5)/10=10.5, (100+20)/20=6
        assert!((get("bounded slowdown mean (tau 10 s)") - 17.5 / 3.0).abs() < 1e-9);
        assert!((get("utilisation (CPU)") - 100.0 * 125.0 / 260.0).abs() < 1e-9);
        assert_eq!(get("user b: wait mean"), 100.0);
        let text = compare(&s, &s, "a.conf", "b.conf");
        assert!(text.lines().next().unwrap().contains("a.conf"));
        assert!(text.contains("wait mean"));
    }

    #[test]
    fn csv_quotes_separators() {
        let mut j = job("1", "a,b", 0, 5, 10);
        j.reason = "x\"y".into();
        let out = Outcomes {
            jobs: vec![j],
            ..Default::default()
        };
        let c = csv(&out);
        assert_eq!(
            c.lines().nth(1).unwrap(),
            "1,1,\"a,b\",,batch,0,5,10,5,5,1,COMPLETED,\"x\"\"y\""
        );
    }
}
