//! Facts about the host: CPUs, memory, load, boot time, OS.

/// Online CPUs (sysconf).
pub fn online_cpus() -> u32 {
    drover_proto::sys::online_cpus()
}

/// A `/proc/meminfo` field in MB (`MemTotal`, `MemAvailable`, ...). Pure.
pub fn meminfo_mb(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != key {
            return None;
        }
        let kb: u64 = v.split_whitespace().next()?.parse().ok()?;
        Some(kb / 1024)
    })
}

fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_mb(&text, key)
}

pub fn mem_total_mb() -> Option<u64> {
    meminfo("MemTotal")
}

pub fn mem_available_mb() -> Option<u64> {
    meminfo("MemAvailable").or_else(|| meminfo("MemFree"))
}

/// One-minute load average x100. Pure parser of `/proc/loadavg`.
pub fn parse_loadavg_x100(text: &str) -> Option<u32> {
    let v: f64 = text.split_whitespace().next()?.parse().ok()?;
    if !v.is_finite() || v < 0.0 {
        return None;
    }
    Some((v * 100.0).round().min(f64::from(u32::MAX)) as u32)
}

pub fn loadavg_x100() -> u32 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| parse_loadavg_x100(&t))
        .unwrap_or(0)
}

/// Boot time (unix seconds) from the `btime` line of `/proc/stat`. Pure parser.
pub fn parse_btime(text: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

pub fn boot_time() -> i64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|t| parse_btime(&t))
        .unwrap_or(0)
}

/// `Linux 6.1.0-...` from uname.
pub fn os_name() -> String {
    crate::sys::uname().map_or_else(|| "Linux".into(), |(sys, rel)| format!("{sys} {rel}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_files() {
        let mi = "MemTotal:       16384000 kB\nMemFree:  1024 kB\nMemAvailable:   8192000 kB\n";
        assert_eq!(meminfo_mb(mi, "MemTotal"), Some(16000));
        assert_eq!(meminfo_mb(mi, "MemAvailable"), Some(8000));
        assert_eq!(meminfo_mb(mi, "Nope"), None);
        assert_eq!(meminfo_mb("MemTotal: x kB", "MemTotal"), None);
        assert_eq!(parse_loadavg_x100("0.52 0.40 0.30 1/200 1234\n"), Some(52));
        assert_eq!(parse_loadavg_x100("garbage"), None);
        assert_eq!(
            parse_btime("cpu 1 2\nbtime 1700000000\n"),
            Some(1_700_000_000)
        );
        assert_eq!(parse_btime(""), None);
        assert!(online_cpus() >= 1);
        assert!(os_name().starts_with("Linux"));
    }
}
