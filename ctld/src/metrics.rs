//! `GetMetrics`: the controller's own figures in Prometheus text, for
//! droverrestd's `/metrics` (which adds what the queue and node listings
//! tell). Pure apart from reading the process's counters.

use drover_proto::metrics::{family, sample, write_process};

/// The exposition: this process's RPC/scheduler/fsync/accounting families,
/// then each node's time since its agent was last heard from.
pub fn text(heartbeat_ages: &[(String, i64)]) -> String {
    let mut out = String::with_capacity(16 * 1024);
    write_process(&mut out);
    family(
        &mut out,
        "drover_node_heartbeat_age_seconds",
        "gauge",
        "Seconds since the node's agent was last heard from",
    );
    for (node, age) in heartbeat_ages {
        sample(
            &mut out,
            "drover_node_heartbeat_age_seconds",
            &[("node", node)],
            *age as f64,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_listed() {
        let t = super::text(&[("n1".into(), 3), ("n2".into(), 0)]);
        assert!(t.contains("drover_node_heartbeat_age_seconds{node=\"n1\"} 3\n"));
        assert!(t.contains("# TYPE drover_schedule_cycle_duration_seconds histogram\n"));
    }
}
