//! Failed authentication in a daemon's log: every daemon that verifies
//! credentials (controller, agent, accounting daemon) does it in
//! [`crate::verify::AuthLayer`] (and [`crate::client::identity`] for a call
//! with none), which report each refusal here. A peer that keeps failing
//! the same way (a host with the wrong key retrying every second) gets one
//! warning per [`WINDOW`], the next one counting what was left out
//! meanwhile; another kind of failure from it (a replay after a wrong key)
//! has a line of its own.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// At most one line per peer address in this long.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Peers remembered at most; the oldest are forgotten first.
const MAX_PEERS: usize = 4096;

/// Per-peer rate limit (pure: the caller gives the time).
#[derive(Default)]
pub struct RateLimit {
    /// (peer, kind of failure) -> (when its last line was written,
    /// failures left out since).
    peers: HashMap<(Option<IpAddr>, &'static str), (Instant, u64)>,
}

impl RateLimit {
    /// A failure from `peer` at `now`: `Some(left_out)` when a line is due
    /// (with the number of failures not logged since the previous one),
    /// None when it is to be counted silently.
    pub fn note(&mut self, peer: Option<IpAddr>, kind: &'static str, now: Instant) -> Option<u64> {
        let peer = (peer, kind);
        if let Some((last, left_out)) = self.peers.get_mut(&peer) {
            if now.duration_since(*last) < WINDOW {
                *left_out += 1;
                return None;
            }
            let n = *left_out;
            *last = now;
            *left_out = 0;
            return Some(n);
        }
        if self.peers.len() >= MAX_PEERS {
            self.peers
                .retain(|_, (last, _)| now.duration_since(*last) < WINDOW);
            if self.peers.len() >= MAX_PEERS {
                if let Some(oldest) = self.peers.iter().min_by_key(|(_, v)| v.0).map(|(k, _)| *k) {
                    self.peers.remove(&oldest);
                }
            }
        }
        self.peers.insert(peer, (now, 0));
        Some(0)
    }
}

static LIMIT: LazyLock<Mutex<RateLimit>> = LazyLock::new(Default::default);

/// Log a refused credential from `peer` (rate-limited per peer and `kind`
/// of failure, warn level): `authentication failure from ADDR: WHAT`.
pub fn refused(peer: Option<std::net::SocketAddr>, kind: &'static str, what: &str) {
    limited(peer, kind, "authentication failure", what);
}

/// Log a connection refused at the TLS layer (rate-limited like
/// [`refused`]): `TLS: refused connection from ADDR: WHAT`.
pub fn tls_refused(peer: Option<std::net::SocketAddr>, kind: &'static str, what: &str) {
    limited(peer, kind, "TLS: refused connection", what);
}

/// Log a connection this process could not make at the TLS layer
/// (rate-limited like [`refused`]): `TLS: cannot connect to ADDR: WHAT`.
pub fn tls_failed(peer: Option<std::net::SocketAddr>, what: &str) {
    limited(peer, "connect", "TLS: cannot connect", what);
}

fn limited(peer: Option<std::net::SocketAddr>, kind: &'static str, headline: &str, what: &str) {
    let due = LIMIT.lock().unwrap_or_else(|p| p.into_inner()).note(
        peer.map(|p| p.ip()),
        kind,
        Instant::now(),
    );
    let Some(left_out) = due else { return };
    let from = peer.map_or_else(|| "an unknown address".to_string(), |p| p.to_string());
    let more = if left_out > 0 {
        format!(
            "; {left_out} more like it from this address in the last {} s not logged",
            WINDOW.as_secs()
        )
    } else {
        String::new()
    };
    let dir = if headline.ends_with("connect") {
        "to"
    } else {
        "from"
    };
    tracing::warn!("{headline} {dir} {from}: {what}{more}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_peer_per_window_with_the_count_left_out() {
        let mut r = RateLimit::default();
        let t = Instant::now();
        let a: Option<IpAddr> = Some("10.1.0.3".parse().unwrap());
        let b: Option<IpAddr> = Some("10.1.0.4".parse().unwrap());
        assert_eq!(r.note(a, "bad key", t), Some(0));
        for i in 1..=5 {
            assert_eq!(r.note(a, "bad key", t + Duration::from_secs(i)), None);
        }
        // Another peer is not held back by the first.
        assert_eq!(r.note(b, "bad key", t + Duration::from_secs(2)), Some(0));
        assert_eq!(r.note(None, "bad key", t + Duration::from_secs(2)), Some(0));
        // Another kind of failure from the same peer has a line of its own.
        assert_eq!(r.note(a, "replayed", t + Duration::from_secs(3)), Some(0));
        // After the window: a line, counting the five left out.
        assert_eq!(r.note(a, "bad key", t + WINDOW), Some(5));
        assert_eq!(
            r.note(a, "bad key", t + WINDOW + Duration::from_secs(1)),
            None
        );
        assert_eq!(r.note(a, "bad key", t + WINDOW * 2), Some(1));
    }

    #[test]
    fn the_peer_table_stays_bounded() {
        let mut r = RateLimit::default();
        let t = Instant::now();
        for i in 0..(MAX_PEERS as u32 + 10) {
            let ip = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            assert_eq!(r.note(Some(ip), "bad key", t), Some(0));
        }
        assert!(r.peers.len() <= MAX_PEERS);
    }
}
