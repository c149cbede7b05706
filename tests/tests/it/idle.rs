//! An idle cluster costs (almost) no CPU: no daemon spins on a peer that
//! answers early or fails fast.

use std::time::{Duration, Instant};

use drover_tests::{cpu_seconds, Cluster, Spec};

/// The window over which use is measured, and the share of one core each
/// daemon may use in it (2%).
const WINDOW: Duration = Duration::from_secs(10);
const MAX_SHARE: f64 = 0.02;

#[test]
fn an_idle_cluster_uses_almost_no_cpu() {
    // A fresh cluster, as `drover up` makes one: the controller registers
    // with the accounting daemon (a change of the association set nobody
    // was waiting for), then long-polls the set's version. The daemon's
    // version channel used to miss that change, so every poll returned at
    // once: a busy loop on both sides.
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        ..Default::default()
    });
    let pids = c.daemon_pids();
    assert_eq!(pids.len(), 3, "{pids:?}");
    let before: Vec<f64> = pids.iter().map(|(_, p)| cpu_seconds(*p)).collect();
    let t0 = Instant::now();
    std::thread::sleep(WINDOW);
    let elapsed = t0.elapsed().as_secs_f64();
    let mut report = String::new();
    let mut over = false;
    for ((name, pid), b) in pids.iter().zip(before) {
        let used = cpu_seconds(*pid) - b;
        report.push_str(&format!("{name}: {used:.2} s of CPU in {elapsed:.1} s\n"));
        over |= used > MAX_SHARE * elapsed;
    }
    assert!(!over, "an idle daemon is busy:\n{report}");
}
