//! Counters and histograms a daemon keeps about itself (RPCs served, the
//! scheduler's passes, state-log fsyncs, accounting records in flight),
//! and the Prometheus text exposition (format 0.0.4) they are written in.
//! Lock-free atomics except the per-method RPC table (a short mutex).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Bucket upper bounds, seconds: 100 µs to 10 s.
pub const BOUNDS: [f64; 11] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0, 10.0,
];

/// A latency histogram with [`BOUNDS`].
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    pub const fn new() -> Histogram {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; BOUNDS.len()],
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = BOUNDS.iter().position(|b| s <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// `NAME_bucket{..,le=".."}` (cumulative), `NAME_sum`, `NAME_count`.
    pub fn write(&self, out: &mut String, name: &str, labels: &[(&str, &str)]) {
        let mut cum = 0u64;
        for (i, b) in BOUNDS.iter().enumerate() {
            cum += self.buckets[i].load(Ordering::Relaxed);
            let le = b.to_string();
            let mut l = labels.to_vec();
            l.push(("le", &le));
            sample(out, &format!("{name}_bucket"), &l, cum as f64);
        }
        let count = self.count();
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        sample(out, &format!("{name}_bucket"), &l, count as f64);
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        sample(out, &format!("{name}_sum"), labels, sum);
        sample(out, &format!("{name}_count"), labels, count as f64);
    }
}

/// The scheduler's passes (controller).
pub static SCHED_CYCLE: Histogram = Histogram::new();
/// State-log fsyncs (controller).
pub static WAL_FSYNC: Histogram = Histogram::new();
/// Job records queued for the accounting daemon and not yet acknowledged
/// (since this process started).
pub static ACCT_QUEUED: AtomicI64 = AtomicI64::new(0);

static RPCS: Mutex<BTreeMap<String, &'static Histogram>> = Mutex::new(BTreeMap::new());

/// One RPC served: its method (gRPC path) and how long it took.
pub fn record_rpc(method: &str, took: Duration) {
    let h = {
        let mut m = RPCS.lock().unwrap_or_else(|p| p.into_inner());
        match m.get(method) {
            Some(h) => *h,
            None => {
                // Methods are a fixed, small set: leaking one histogram each is bounded.
                let h: &'static Histogram = Box::leak(Box::new(Histogram::new()));
                m.insert(method.to_string(), h);
                h
            }
        }
    };
    h.observe(took);
}

/// Escape a label value for the text format.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `# HELP` and `# TYPE` lines of a family.
pub fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
}

/// One sample line.
pub fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&format!("{k}=\"{}\"", escape(v)));
        }
        out.push('}');
    }
    out.push(' ');
    if value.fract() == 0.0 && value.abs() < 1e15 {
        out.push_str(&format!("{}", value as i64));
    } else {
        out.push_str(&format!("{value}"));
    }
    out.push('\n');
}

/// This process's own families: RPCs by method, scheduler passes, fsyncs,
/// the accounting queue.
pub fn write_process(out: &mut String) {
    let rpcs: Vec<(String, &'static Histogram)> = RPCS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    family(
        out,
        "drover_rpc_requests_total",
        "counter",
        "RPCs served, by gRPC method",
    );
    for (m, h) in &rpcs {
        sample(
            out,
            "drover_rpc_requests_total",
            &[("method", m)],
            h.count() as f64,
        );
    }
    family(
        out,
        "drover_rpc_duration_seconds",
        "histogram",
        "Time to serve an RPC (credential check included), by gRPC method",
    );
    for (m, h) in &rpcs {
        h.write(out, "drover_rpc_duration_seconds", &[("method", m)]);
    }
    family(
        out,
        "drover_schedule_cycle_duration_seconds",
        "histogram",
        "Duration of the scheduler's passes",
    );
    SCHED_CYCLE.write(out, "drover_schedule_cycle_duration_seconds", &[]);
    family(
        out,
        "drover_wal_fsync_duration_seconds",
        "histogram",
        "Duration of the state log's fsyncs (one per group commit)",
    );
    WAL_FSYNC.write(out, "drover_wal_fsync_duration_seconds", &[]);
    family(
        out,
        "slurm_slurmdbd_queue_size",
        "gauge",
        "Job records queued for the accounting daemon, not yet acknowledged",
    );
    sample(
        out,
        "slurm_slurmdbd_queue_size",
        &[],
        ACCT_QUEUED.load(Ordering::Relaxed).max(0) as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_text() {
        let h = Histogram::new();
        h.observe(Duration::from_micros(50));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(20));
        let mut out = String::new();
        h.write(&mut out, "x_seconds", &[("m", "a\"b")]);
        assert!(
            out.contains("x_seconds_bucket{m=\"a\\\"b\",le=\"0.0001\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{m=\"a\\\"b\",le=\"0.005\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{m=\"a\\\"b\",le=\"+Inf\"} 3\n"),
            "{out}"
        );
        assert!(out.contains("x_seconds_count{m=\"a\\\"b\"} 3\n"), "{out}");
    }

    #[test]
    fn rpcs_by_method() {
        record_rpc("/t.S/A", Duration::from_millis(1));
        record_rpc("/t.S/A", Duration::from_millis(2));
        let mut out = String::new();
        write_process(&mut out);
        assert!(
            out.contains("drover_rpc_requests_total{method=\"/t.S/A\"} 2\n"),
            "{out}"
        );
        assert!(out.contains("# TYPE drover_wal_fsync_duration_seconds histogram\n"));
    }
}
