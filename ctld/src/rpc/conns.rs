//! Connections per peer address (`SlurmctldParameters=drover_conn_per_peer`,
//! Drover's own: Slurm has no such limit): one host cannot hold all the
//! controller's file descriptors. Connections in all: at most the open
//! files limit less [`RESERVED_FDS`], so many hosts together cannot take
//! the descriptors the controller needs for its state files and its own
//! calls to agents; at that many, the connection silent for longest (10 s
//! at least, [`super::idle`]) is closed to make room for the new one. A
//! connection over either limit is closed as soon as it is accepted (and
//! sorted, see `drover_proto::tlsaccept`), with a warning naming the peer,
//! at most one a minute per address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use drover_proto::tls::Conn;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::{Connected, TcpConnectInfo};

use super::idle::{self, Activity, Live};

/// File descriptors kept out of reach of incoming connections.
pub const RESERVED_FDS: usize = 256;

/// Open connections by peer address (pure counting).
#[derive(Debug, Default)]
pub struct PeerCounts {
    open: HashMap<IpAddr, usize>,
    total: usize,
    /// Most connections in all (0: no limit).
    pub max_total: usize,
}

/// Why a connection was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    PerPeer,
    Total,
}

impl PeerCounts {
    /// One more from `ip`, unless it already holds `max` (0: no limit).
    pub fn take(&mut self, ip: IpAddr, max: usize) -> bool {
        self.admit(ip, max).is_ok()
    }

    /// One more from `ip`, or why not.
    pub fn admit(&mut self, ip: IpAddr, max: usize) -> Result<(), Refusal> {
        if self.max_total > 0 && self.total >= self.max_total {
            return Err(Refusal::Total);
        }
        self.admit_per_peer(ip, max)
    }

    /// One more from `ip` whatever the total (another is being closed to
    /// make room), unless `ip` holds `max` already.
    pub fn admit_per_peer(&mut self, ip: IpAddr, max: usize) -> Result<(), Refusal> {
        let n = self.open.entry(ip).or_insert(0);
        if max > 0 && *n >= max {
            if *n == 0 {
                self.open.remove(&ip);
            }
            return Err(Refusal::PerPeer);
        }
        *n += 1;
        self.total += 1;
        Ok(())
    }

    pub fn release(&mut self, ip: IpAddr) {
        if let Some(n) = self.open.get_mut(&ip) {
            self.total = self.total.saturating_sub(1);
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.open.remove(&ip);
            }
        }
    }

    pub fn open(&self, ip: IpAddr) -> usize {
        self.open.get(&ip).copied().unwrap_or(0)
    }
}

/// The counts and the open connections, under one lock.
#[derive(Default)]
struct Places {
    counts: PeerCounts,
    live: Live,
}

/// An admitted connection: gives its place back when closed.
pub struct Held {
    conn: Conn,
    ip: IpAddr,
    places: Arc<Mutex<Places>>,
    id: u64,
    act: Arc<Activity>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Ok(mut p) = self.places.lock() {
            p.counts.release(self.ip);
            p.live.remove(self.id);
        }
    }
}

fn made_room() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "closed to make room for a new connection",
    )
}

impl Connected for Held {
    type ConnectInfo = TcpConnectInfo;
    fn connect_info(&self) -> TcpConnectInfo {
        self.conn.connect_info()
    }
}

impl AsyncRead for Held {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.act.is_closing() {
            return Poll::Ready(Err(made_room()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut self.conn).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.act.read_now();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                self.act.park(cx.waker());
                // Closed between the check above and parking: no wake-up
                // would come.
                if self.act.is_closing() {
                    return Poll::Ready(Err(made_room()));
                }
                Poll::Pending
            }
            other => other,
        }
    }
}

impl AsyncWrite for Held {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.conn).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.conn).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.conn).poll_shutdown(cx)
    }
}

/// The listener's connections, those over `max` per address or
/// `max_total` in all (0: no limit) left out (closed).
pub fn limit(
    incoming: impl Stream<Item = Result<Conn, std::io::Error>> + Send + 'static,
    max: usize,
    max_total: usize,
) -> impl Stream<Item = Result<Held, std::io::Error>> + Send + 'static {
    let places = Arc::new(Mutex::new(Places {
        counts: PeerCounts {
            max_total,
            ..Default::default()
        },
        live: Live::default(),
    }));
    let warned: Arc<Mutex<HashMap<IpAddr, std::time::Instant>>> = Default::default();
    incoming.filter_map(move |c| {
        let conn = match c {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        let ip = conn.connect_info().remote_addr().map(|a| a.ip())?;
        let act = Arc::new(Activity::new());
        let mut made_room_from = None;
        let taken = match places.lock() {
            Ok(mut p) => {
                let p = &mut *p;
                match p.counts.admit(ip, max) {
                    // Full: close the idlest (while not too many are still
                    // closing) and take this one in its place.
                    Err(Refusal::Total)
                        if p.counts.total < max_total.saturating_add(RESERVED_FDS / 8) =>
                    {
                        match p.live.close_idlest(idle::now_ms()) {
                            Some(idle_for) => {
                                made_room_from = Some(idle_for);
                                p.counts.admit_per_peer(ip, max)
                            }
                            None => Err(Refusal::Total),
                        }
                    }
                    r => r,
                }
                .map(|()| p.live.add(act.clone()))
            }
            Err(_) => return None,
        };
        let warn_due = |ip: IpAddr| {
            let now = std::time::Instant::now();
            let mut w = warned.lock().ok()?;
            if w.get(&ip)
                .is_none_or(|t| now.duration_since(*t).as_secs() >= 60)
            {
                w.insert(ip, now);
                Some(())
            } else {
                None
            }
        };
        let id = match taken {
            Ok(id) => id,
            Err(why) => {
                if warn_due(ip).is_some() {
                    match why {
                        Refusal::PerPeer => tracing::warn!(
                            "connection from {ip} refused: it holds {max} already \
                             (SlurmctldParameters=drover_conn_per_peer)"
                        ),
                        Refusal::Total => tracing::warn!(
                            "connection from {ip} refused: {max_total} connections are open, \
                             the most the open files limit allows ({RESERVED_FDS} descriptors \
                             are kept for state files and calls to agents), none of them idle"
                        ),
                    }
                }
                return None;
            }
        };
        if let Some(idle_for) = made_room_from {
            if warn_due(ip).is_some() {
                tracing::warn!(
                    "{max_total} connections are open, the most the open files limit allows: \
                     closed one silent for {} s to take one from {ip}",
                    idle_for.as_secs()
                );
            }
        }
        Some(Ok(Held {
            conn,
            ip,
            places: places.clone(),
            id,
            act,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_address() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let mut c = PeerCounts::default();
        assert!(c.take(a, 2));
        assert!(c.take(a, 2));
        assert!(!c.take(a, 2));
        assert!(c.take(b, 2));
        c.release(a);
        assert!(c.take(a, 2));
        assert_eq!(c.open(a), 2);
        c.release(a);
        c.release(a);
        assert_eq!(c.open(a), 0);
        // 0: no limit.
        for _ in 0..100 {
            assert!(c.take(a, 0));
        }
    }

    #[test]
    fn connections_in_all_are_bounded() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let mut c = PeerCounts {
            max_total: 3,
            ..Default::default()
        };
        assert_eq!(c.admit(a, 2), Ok(()));
        assert_eq!(c.admit(a, 2), Ok(()));
        assert_eq!(c.admit(a, 2), Err(Refusal::PerPeer));
        assert_eq!(c.admit(b, 2), Ok(()));
        assert_eq!(c.admit(b, 2), Err(Refusal::Total));
        c.release(a);
        assert_eq!(c.admit(b, 2), Ok(()));
        assert_eq!(c.open(b), 2);
    }
}
