//! Rate-limited logging: a retry loop warns once per period, not on every
//! attempt.

use std::time::{Duration, Instant};

/// Logs at most once per period.
pub struct Every {
    period: Duration,
    last: Option<Instant>,
}

impl Every {
    pub fn new(period: Duration) -> Every {
        Every { period, last: None }
    }

    pub fn due(&mut self) -> bool {
        let now = Instant::now();
        match self.last {
            Some(t) if now.duration_since(t) < self.period => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}
