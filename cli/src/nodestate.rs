//! Node states as sinfo and scontrol print them (`idle`, `mix`, `drng*`,
//! `IDLE+DRAIN`), derived from a `NodeInfo`. Pure.

use drover_proto::NodeInfo;

/// Base node states, numbered as Slurm's `enum node_states`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Base {
    Unknown = 0,
    Down = 1,
    Idle = 2,
    Allocated = 3,
    Error = 4,
    Mixed = 5,
    Future = 6,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub base: Base,
    pub drain: bool,
    pub completing: bool,
    pub no_respond: bool,
    pub powered_down: bool,
    pub powering_up: bool,
    /// POWERING_DOWN: SuspendProgram ran, SuspendTimeout not yet passed.
    pub powering_down: bool,
    /// POWER_DOWN: to be powered down once idle.
    pub power_down: bool,
    pub cloud: bool,
    pub reboot: bool,
    pub maint: bool,
    pub reserved: bool,
}

fn base_word(w: &str) -> Option<(Base, bool, bool)> {
    // (base, drain, completing)
    Some(match w {
        "IDLE" => (Base::Idle, false, false),
        "ALLOCATED" | "ALLOC" => (Base::Allocated, false, false),
        "MIXED" | "MIX" => (Base::Mixed, false, false),
        "DOWN" => (Base::Down, false, false),
        "DRAINED" | "DRAIN" => (Base::Idle, true, false),
        "DRAINING" | "DRNG" => (Base::Allocated, true, false),
        "UNKNOWN" | "UNK" => (Base::Unknown, false, false),
        "FUTURE" | "FUTR" => (Base::Future, false, false),
        "ERROR" => (Base::Error, false, false),
        "COMPLETING" | "COMP" => (Base::Idle, false, true),
        _ => return None,
    })
}

impl NodeState {
    pub fn of(n: &NodeInfo) -> NodeState {
        let state = n.state.to_ascii_uppercase();
        let mut words = state
            .split('+')
            .chain(n.state_flags.split('+'))
            .map(|w| w.trim().trim_end_matches('*'))
            .filter(|w| !w.is_empty());
        let mut s = NodeState {
            base: Base::Unknown,
            drain: n.drain,
            completing: false,
            no_respond: !n.responding || state.ends_with('*'),
            powered_down: false,
            powering_up: false,
            powering_down: false,
            power_down: false,
            cloud: false,
            reboot: false,
            maint: false,
            reserved: false,
        };
        if let Some((b, d, c)) = words
            .next()
            .and_then(|w| base_word(&w.to_ascii_uppercase()))
        {
            s.base = b;
            s.drain |= d;
            s.completing |= c;
        }
        for w in words {
            match w.to_ascii_uppercase().as_str() {
                "DRAIN" | "DRAINED" | "DRAINING" => s.drain = true,
                "COMPLETING" => s.completing = true,
                "NOT_RESPONDING" | "NO_RESPOND" => s.no_respond = true,
                "POWERED_DOWN" => s.powered_down = true,
                "POWERING_DOWN" => s.powering_down = true,
                "POWER_DOWN" => s.power_down = true,
                "POWERING_UP" | "POWER_UP" => s.powering_up = true,
                "CLOUD" => s.cloud = true,
                "REBOOT" | "REBOOT_REQUESTED" | "REBOOT_ISSUED" => s.reboot = true,
                "MAINT" | "MAINTENANCE" => s.maint = true,
                "RESERVED" => s.reserved = true,
                "DOWN" => s.base = Base::Down,
                _ => {}
            }
        }
        if n.down {
            s.base = Base::Down;
        }
        s
    }

    /// Slurm's order: `*` not responding, `!` to be powered down, `%`
    /// powering down, `~` powered down, `#` powering up, `@` reboot, `$`
    /// maintenance.
    fn suffix(&self) -> &'static str {
        if self.no_respond {
            "*"
        } else if self.power_down {
            "!"
        } else if self.powering_down {
            "%"
        } else if self.powered_down {
            "~"
        } else if self.powering_up {
            "#"
        } else if self.reboot {
            "@"
        } else if self.maint {
            "$"
        } else {
            ""
        }
    }

    fn draining(&self) -> bool {
        self.completing || matches!(self.base, Base::Allocated | Base::Mixed)
    }

    /// sinfo `%t`: `idle`, `alloc`, `mix`, `drain`, `drng`, `down*`, ...
    pub fn compact(&self) -> String {
        let s = if self.drain {
            if self.draining() {
                "drng"
            } else {
                "drain"
            }
        } else if self.completing && self.base != Base::Down {
            "comp"
        } else {
            match self.base {
                Base::Unknown => "unk",
                Base::Down => "down",
                Base::Idle => {
                    if self.reserved {
                        "resv"
                    } else {
                        "idle"
                    }
                }
                Base::Allocated => "alloc",
                Base::Error => "err",
                Base::Mixed => "mix",
                Base::Future => "futr",
            }
        };
        format!("{s}{}", self.suffix())
    }

    /// sinfo `%T`: `idle`, `allocated`, `drained`, `draining`, ...
    pub fn long(&self) -> String {
        let s = if self.drain {
            if self.draining() {
                "draining"
            } else {
                "drained"
            }
        } else if self.completing && self.base != Base::Down {
            "completing"
        } else {
            match self.base {
                Base::Unknown => "unknown",
                Base::Down => "down",
                Base::Idle => {
                    if self.reserved {
                        "reserved"
                    } else {
                        "idle"
                    }
                }
                Base::Allocated => "allocated",
                Base::Error => "error",
                Base::Mixed => "mixed",
                Base::Future => "future",
            }
        };
        format!("{s}{}", self.suffix())
    }

    fn base_upper(&self) -> &'static str {
        match self.base {
            Base::Unknown => "UNKNOWN",
            Base::Down => "DOWN",
            Base::Idle => "IDLE",
            Base::Allocated => "ALLOCATED",
            Base::Error => "ERROR",
            Base::Mixed => "MIXED",
            Base::Future => "FUTURE",
        }
    }

    /// Base plus flags, as in scontrol's `State=IDLE+DRAIN` and JSON lists.
    pub fn parts(&self) -> Vec<&'static str> {
        let mut v = vec![self.base_upper()];
        if self.cloud {
            v.push("CLOUD");
        }
        if self.completing {
            v.push("COMPLETING");
        }
        if self.drain {
            v.push("DRAIN");
        }
        if self.maint {
            v.push("MAINTENANCE");
        }
        if self.reserved {
            v.push("RESERVED");
        }
        if self.no_respond {
            v.push("NOT_RESPONDING");
        }
        if self.powered_down {
            v.push("POWERED_DOWN");
        }
        if self.powering_up {
            v.push("POWERING_UP");
        }
        if self.powering_down {
            v.push("POWERING_DOWN");
        }
        if self.power_down {
            v.push("POWER_DOWN");
        }
        if self.reboot {
            v.push("REBOOT_REQUESTED");
        }
        v
    }

    /// scontrol's `State=` value.
    pub fn complete(&self) -> String {
        let p = self.parts();
        p.join("+")
    }

    /// Numeric value for sorting (Slurm's base | flag bits).
    pub fn number(&self) -> u32 {
        let mut n = self.base as u32;
        if self.drain {
            n |= 0x200;
        }
        if self.completing {
            n |= 0x400;
        }
        if self.no_respond {
            n |= 0x800;
        }
        if self.powered_down {
            n |= 0x1000;
        }
        n
    }

    /// Usable for new work (not down, drained or not responding).
    pub fn available(&self) -> bool {
        !self.drain
            && !self.no_respond
            && !matches!(self.base, Base::Down | Base::Future | Base::Error)
    }
}

/// One word of `sinfo -t` (prefix of a compact or long name, or a flag).
pub fn state_matches(word: &str, s: &NodeState) -> Option<bool> {
    let w = word.trim().to_ascii_lowercase();
    if w.is_empty() {
        return None;
    }
    let pre = |full: &str| full.starts_with(&w);
    let bases = [
        (Base::Unknown, "unk", "unknown"),
        (Base::Down, "down", "down"),
        (Base::Idle, "idle", "idle"),
        (Base::Allocated, "alloc", "allocated"),
        (Base::Error, "err", "error"),
        (Base::Mixed, "mix", "mixed"),
        (Base::Future, "futr", "future"),
    ];
    for (b, c, l) in bases {
        if pre(c) || pre(l) {
            return Some(s.base == b);
        }
    }
    if pre("drain") {
        return Some(s.drain);
    }
    if pre("drained") {
        return Some(s.drain && !s.draining());
    }
    if pre("draining") || pre("drng") {
        return Some(s.drain && s.draining());
    }
    if pre("no_respond") {
        return Some(s.no_respond);
    }
    if pre("comp") || pre("completing") {
        return Some(s.completing);
    }
    if pre("resv") || pre("reserved") {
        return Some(s.reserved);
    }
    if pre("powered_down") {
        return Some(s.powered_down);
    }
    if pre("powering_down") {
        return Some(s.powering_down);
    }
    if pre("power_down") {
        return Some(s.power_down);
    }
    if pre("powering_up") || pre("power_up") {
        return Some(s.powering_up);
    }
    if pre("cloud") {
        return Some(s.cloud);
    }
    if pre("maint") {
        return Some(s.maint);
    }
    if pre("fail") {
        return Some(s.drain && s.base == Base::Down);
    }
    if pre("reboot") {
        return Some(s.reboot);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(state: &str, flags: &str, responding: bool, drain: bool) -> NodeInfo {
        NodeInfo {
            name: "n1".into(),
            state: state.into(),
            state_flags: flags.into(),
            responding,
            drain,
            ..Default::default()
        }
    }

    #[test]
    fn power_saving_suffixes_and_names() {
        let cases = [
            (
                "IDLE",
                "+CLOUD+POWERED_DOWN",
                "idle~",
                "idle~",
                "IDLE+CLOUD+POWERED_DOWN",
            ),
            (
                "IDLE",
                "+POWERING_DOWN",
                "idle%",
                "idle%",
                "IDLE+POWERING_DOWN",
            ),
            (
                "MIXED",
                "+CLOUD+POWERING_UP",
                "mix#",
                "mixed#",
                "MIXED+CLOUD+POWERING_UP",
            ),
            (
                "ALLOCATED",
                "+POWER_DOWN",
                "alloc!",
                "allocated!",
                "ALLOCATED+POWER_DOWN",
            ),
            (
                "DOWN",
                "+POWERED_DOWN",
                "down~",
                "down~",
                "DOWN+POWERED_DOWN",
            ),
        ];
        for (state, flags, compact, long, complete) in cases {
            let s = NodeState::of(&node(state, flags, true, false));
            assert_eq!(
                (s.compact(), s.long(), s.complete()),
                (compact.into(), long.into(), complete.into()),
                "{state}{flags}"
            );
        }
        let s = NodeState::of(&node("IDLE", "+CLOUD+POWERED_DOWN", true, false));
        assert_eq!(state_matches("powered_down", &s), Some(true));
        assert_eq!(state_matches("cloud", &s), Some(true));
        assert_eq!(state_matches("powering_up", &s), Some(false));
    }

    #[test]
    fn names() {
        let s = NodeState::of(&node("IDLE", "", true, false));
        assert_eq!(
            (s.compact(), s.long(), s.complete()),
            ("idle".into(), "idle".into(), "IDLE".into())
        );
        let s = NodeState::of(&node("MIXED", "", true, false));
        assert_eq!(s.compact(), "mix");
        let s = NodeState::of(&node("ALLOCATED", "+DRAIN", true, false));
        assert_eq!((s.compact(), s.long()), ("drng".into(), "draining".into()));
        let s = NodeState::of(&node("IDLE", "+DRAIN", true, false));
        assert_eq!(
            (s.compact(), s.long(), s.complete()),
            ("drain".into(), "drained".into(), "IDLE+DRAIN".into())
        );
        let s = NodeState::of(&node("DRAINED", "", true, false));
        assert_eq!(s.compact(), "drain");
        let s = NodeState::of(&node("DOWN", "+NOT_RESPONDING", false, false));
        assert_eq!(
            (s.compact(), s.complete()),
            ("down*".into(), "DOWN+NOT_RESPONDING".into())
        );
        let s = NodeState::of(&node("IDLE", "", false, false));
        assert_eq!(s.compact(), "idle*");
        let s = NodeState::of(&node("UNKNOWN", "", true, false));
        assert_eq!(s.compact(), "unk");
        let s = NodeState::of(&node("IDLE", "", true, true));
        assert!(s.drain && !s.available());
        assert!(
            NodeState::of(&node("MIXED", "+DRAIN", true, false)).number()
                > NodeState::of(&node("MIXED", "", true, false)).number()
        );
    }

    #[test]
    fn filters() {
        let idle = NodeState::of(&node("IDLE", "", true, false));
        let drained = NodeState::of(&node("IDLE", "+DRAIN", true, false));
        let draining = NodeState::of(&node("ALLOCATED", "+DRAIN", true, false));
        assert_eq!(state_matches("idle", &idle), Some(true));
        assert_eq!(state_matches("IDLE", &draining), Some(false));
        assert_eq!(state_matches("drain", &drained), Some(true));
        assert_eq!(state_matches("drain", &draining), Some(true));
        assert_eq!(state_matches("drng", &draining), Some(true));
        assert_eq!(state_matches("drained", &draining), Some(false));
        assert_eq!(state_matches("alloc", &draining), Some(true));
        assert_eq!(state_matches("bogus", &idle), None);
    }
}
