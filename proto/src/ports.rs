//! Picking a loopback TCP port for a daemon that binds it later (`drover
//! up` writes it into the cluster's configuration; the test harness into
//! its clusters').
//!
//! A port the kernel hands out for `bind(0)` lies in its ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`), where the source ports of
//! outgoing connections come from: between the pick and the daemon's bind,
//! or on any later start of the same configuration, some client's
//! `connect` may hold it, and the daemon fails with "Address already in
//! use". So ports are picked below that range, each checked free by
//! binding it; calls in one process take turns through the range, and the
//! process id spreads processes apart.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port picked (below it: well-known and registered services).
const LOW: u32 = 10_000;

/// A loopback port no one listens on, held by the returned listener until
/// the caller drops it (so that several picks differ).
pub fn pick() -> std::io::Result<(TcpListener, u16)> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let high = ephemeral_low().min(65_536);
    if high > LOW + 1_000 {
        let span = high - LOW;
        let start = std::process::id().wrapping_mul(7_919) % span;
        for _ in 0..span {
            let turn = NEXT.fetch_add(1, Ordering::Relaxed);
            let port = (LOW + start.wrapping_add(turn) % span) as u16;
            if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
                return Ok((l, port));
            }
        }
    }
    // No room below the range (or all of it taken): the kernel's pick.
    let l = TcpListener::bind("127.0.0.1:0")?;
    let port = l.local_addr()?.port();
    Ok((l, port))
}

/// Where the kernel's ephemeral range starts (Linux's default if unknown).
fn ephemeral_low() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_are_distinct_free_and_below_the_ephemeral_range() {
        let held: Vec<(TcpListener, u16)> = (0..20).map(|_| pick().unwrap()).collect();
        let mut ports: Vec<u16> = held.iter().map(|x| x.1).collect();
        for (l, p) in &held {
            assert_eq!(l.local_addr().unwrap().port(), *p);
        }
        if ephemeral_low() > LOW + 1_000 {
            assert!(ports
                .iter()
                .all(|&p| u32::from(p) >= LOW && u32::from(p) < ephemeral_low()));
        }
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 20);
    }
}
