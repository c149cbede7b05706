//! A node's power state and the per-minute counts of ResumeRate and
//! SuspendRate: plain data (the decisions are in `power.rs`).

/// A node's power state (`NodeStateRecord.power`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Power {
    #[default]
    On = 0,
    /// SuspendProgram ran; off once SuspendTimeout has passed.
    PoweringDown = 1,
    Off = 2,
    /// ResumeProgram ran; on when the node registers (DOWN after ResumeTimeout).
    PoweringUp = 3,
}

impl Power {
    pub fn from_record(v: u32) -> Power {
        match v {
            1 => Power::PoweringDown,
            2 => Power::Off,
            3 => Power::PoweringUp,
            _ => Power::On,
        }
    }

    /// The state flag scontrol shows (`+POWERED_DOWN`, ...).
    pub fn flag(self) -> &'static str {
        match self {
            Power::On => "",
            Power::PoweringDown => "+POWERING_DOWN",
            Power::Off => "+POWERED_DOWN",
            Power::PoweringUp => "+POWERING_UP",
        }
    }
}

/// Nodes resumed and suspended in the current minute (ResumeRate,
/// SuspendRate). In memory only: a restart starts a fresh minute.
#[derive(Debug, Default, Clone)]
pub struct Rates {
    pub minute: i64,
    pub resumed: u32,
    pub suspended: u32,
}

impl Rates {
    pub fn roll(&mut self, t: i64) {
        let m = t.div_euclid(60);
        if m != self.minute {
            *self = Rates {
                minute: m,
                ..Default::default()
            };
        }
    }
}

/// How many more may go this minute (`rate` 0: no limit).
pub fn room(rate: u32, used: u32) -> usize {
    if rate == 0 {
        usize::MAX
    } else {
        rate.saturating_sub(used) as usize
    }
}
