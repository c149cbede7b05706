//! `squeue --json`'s writer against serde_json's streaming writer (issue
//! 12): the same 10,000 job records rendered by `jsonw` (pretty, as
//! `squeue --json`; compact, as restd's job cache) and by serde_json's
//! `Serializer` with its `PrettyFormatter` / `CompactFormatter` over the
//! same values. Checks the bytes are identical, then prints the median of
//! each. Run: `cargo bench -p drover-cli --bench json_writer` (N=...).
//! docs/benchmarks.md records the runs.

use std::time::Instant;

use drover_cli::json;
use drover_cli::jsonw::{self, J};
use drover_cli::squeue::format::Row;
use drover_proto::{JobInfo, JobState};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// `J` through serde (a newtype: both are foreign to this file).
struct S<'v, 'a>(&'v J<'a>);

impl Serialize for S<'_, '_> {
    fn serialize<Z: Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        match self.0 {
            J::Null => z.serialize_unit(),
            J::Bool(b) => z.serialize_bool(*b),
            J::Int(n) => z.serialize_i64(*n),
            J::Str(s) => z.serialize_str(s),
            J::String(s) => z.serialize_str(s),
            J::Num {
                set,
                infinite,
                number,
            } => {
                let mut m = z.serialize_map(Some(3))?;
                m.serialize_entry("set", set)?;
                m.serialize_entry("infinite", infinite)?;
                m.serialize_entry("number", number)?;
                m.end()
            }
            J::Arr(items) => {
                let mut s = z.serialize_seq(Some(items.len()))?;
                for it in items {
                    s.serialize_element(&S(it))?;
                }
                s.end()
            }
            J::Obj(pairs) => {
                let mut m = z.serialize_map(Some(pairs.len()))?;
                for (k, v) in pairs {
                    m.serialize_entry(k, &S(v))?;
                }
                m.end()
            }
        }
    }
}

/// The `jobs` array, each job's value built as it is written.
struct Jobs<'r, 'a> {
    rows: &'r [Row<'a>],
    now: i64,
    cluster: &'a str,
}

impl Serialize for Jobs<'_, '_> {
    fn serialize<Z: Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        let mut s = z.serialize_seq(Some(self.rows.len()))?;
        for r in self.rows {
            s.serialize_element(&S(&json::job(r, self.now, self.cluster)))?;
        }
        s.end()
    }
}

/// The whole `squeue --json` document.
struct Doc<'r, 'a> {
    jobs: Jobs<'r, 'a>,
    command: &'a [String],
}

impl Serialize for Doc<'_, '_> {
    fn serialize<Z: Serializer>(&self, z: Z) -> Result<Z::Ok, Z::Error> {
        let mut m = z.serialize_map(Some(6))?;
        m.serialize_entry("jobs", &self.jobs)?;
        m.serialize_entry("last_backfill", &S(&J::num(0)))?;
        m.serialize_entry("last_update", &S(&J::num(self.jobs.now)))?;
        m.serialize_entry("meta", &S(&json::meta_j(self.command, self.jobs.cluster)))?;
        m.serialize_entry("errors", &S(&J::Arr(Vec::new())))?;
        m.serialize_entry("warnings", &S(&J::Arr(Vec::new())))?;
        m.end()
    }
}

fn serde_pretty(rows: &[Row<'_>], now: i64, cluster: &str, command: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 24);
    let f = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut z = serde_json::Serializer::with_formatter(&mut out, f);
    let doc = Doc {
        jobs: Jobs { rows, now, cluster },
        command,
    };
    doc.serialize(&mut z).expect("serialize");
    out.push(b'\n');
    out
}

fn jsonw_pretty(rows: &[Row<'_>], now: i64, cluster: &str, command: &[String]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 24);
    json::squeue_to(&mut out, rows, now, cluster, command).expect("write");
    out
}

/// restd's cache: each job compact, one after another.
fn jsonw_compact(rows: &[Row<'_>], now: i64, cluster: &str) -> Vec<u8> {
    let mut s = String::with_capacity(1 << 24);
    for r in rows {
        jsonw::write_compact(&mut s, &json::job(r, now, cluster));
        s.push('\n');
    }
    s.into_bytes()
}

fn serde_compact(rows: &[Row<'_>], now: i64, cluster: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 24);
    for r in rows {
        serde_json::to_writer(&mut out, &S(&json::job(r, now, cluster))).expect("serialize");
        out.push(b'\n');
    }
    out
}

fn jobs(n: u32) -> Vec<JobInfo> {
    (1..=n)
        .map(|id| {
            let state = match id % 4 {
                0 => JobState::Running,
                1 => JobState::Pending,
                2 => JobState::Completed,
                _ => JobState::Failed,
            };
            JobInfo {
                job_id: id,
                name: format!("job \"{id}\"\tx"),
                user_name: format!("user{}", id % 50),
                user_id: 1000 + id % 50,
                group_name: "users".into(),
                group_id: 100,
                partition: if id % 3 == 0 { "gpu" } else { "debug" }.into(),
                account: format!("acct{}", id % 7),
                state: state as i32,
                state_reason: "Priority".into(),
                num_nodes: 1 + id % 4,
                num_cpus: 1 + id % 32,
                num_tasks: 1 + id % 8,
                cpus_per_task: 1,
                time_limit: 60 + id % 600,
                priority: 4_294_901_756 - id,
                submit_time: 1_700_000_000 + i64::from(id),
                start_time: 1_700_000_100 + i64::from(id),
                nodes: format!("n[{}-{}]", id % 100, id % 100 + 3),
                work_dir: format!("/home/user{}/run/{id}", id % 50),
                batch_flag: true,
                ..Default::default()
            }
        })
        .collect()
}

/// This process's user+system CPU time, ms (10 ms ticks; the load of the
/// shared machine moves wall time far more than this).
fn cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    (f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0)) * 10.0
}

/// Median wall and CPU ms over 9 runs.
fn median_ms(mut f: impl FnMut() -> usize) -> (f64, f64) {
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..9 {
        let (t, c) = (Instant::now(), cpu_ms());
        std::hint::black_box(f());
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        cpu.push(cpu_ms() - c);
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    (wall[4], cpu[4])
}

fn main() {
    let n: u32 = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let infos = jobs(n);
    let rows: Vec<Row<'_>> = infos.iter().map(Row::new).collect();
    let (now, cluster) = (1_700_001_000, "cluster");
    let command = vec!["squeue".to_string(), "--json".to_string()];
    let a = jsonw_pretty(&rows, now, cluster, &command);
    let b = serde_pretty(&rows, now, cluster, &command);
    assert!(a == b, "pretty outputs differ");
    assert!(
        jsonw_compact(&rows, now, cluster) == serde_compact(&rows, now, cluster),
        "compact outputs differ"
    );
    println!(
        "{n} jobs, {} bytes pretty; outputs identical; load {}",
        a.len(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    // One variant alone, once (for callgrind: ONLY=none is the set-up).
    if let Ok(only) = std::env::var("ONLY") {
        let len = match only.as_str() {
            "jsonw_pretty" => jsonw_pretty(&rows, now, cluster, &command).len(),
            "serde_pretty" => serde_pretty(&rows, now, cluster, &command).len(),
            "jsonw_compact" => jsonw_compact(&rows, now, cluster).len(),
            "serde_compact" => serde_compact(&rows, now, cluster).len(),
            _ => 0,
        };
        println!("{only}: {len} bytes");
        return;
    }
    // Twice, alternating, as the machine's load swings.
    for round in 1..=2 {
        let jp = median_ms(|| jsonw_pretty(&rows, now, cluster, &command).len());
        let sp = median_ms(|| serde_pretty(&rows, now, cluster, &command).len());
        let sc = median_ms(|| serde_compact(&rows, now, cluster).len());
        let jc = median_ms(|| jsonw_compact(&rows, now, cluster).len());
        let tree = median_ms(|| {
            rows.iter()
                .map(|r| match json::job(r, now, cluster) {
                    J::Obj(p) => p.len(),
                    _ => 0,
                })
                .sum()
        });
        println!(
            "round {round} (median wall / CPU ms): pretty jsonw {:.0}/{:.0}, serde {:.0}/{:.0} \
             (CPU serde/jsonw {:.3}); compact jsonw {:.0}/{:.0}, serde {:.0}/{:.0} ({:.3}); \
             building the values alone {:.0}/{:.0}",
            jp.0,
            jp.1,
            sp.0,
            sp.1,
            sp.1 / jp.1,
            jc.0,
            jc.1,
            sc.0,
            sc.1,
            sc.1 / jc.1,
            tree.0,
            tree.1
        );
    }
}
