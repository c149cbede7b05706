//! What to ask for next time, from a job's measured figures: plain advice
//! lines for seff, `drover advise` and (later) the dashboard. Pure: the
//! figures ([`Usage`]) and the cluster's facts ([`Facts`]) come in, text
//! goes out.
//!
//! Rules, in order:
//! * host memory OOM: peak (at least the limit it hit) x 1.5, rounded up
//!   to a sensible size, capped at the largest node of the partition;
//! * GPU out of memory: a smaller batch, or the GPU types with more memory;
//! * memory efficiency under 30%: peak x 1.25, rounded up;
//! * CPU efficiency under 30% with several CPUs: the CPUs busy x 1.25;
//! * under 20% of the time limit used (completed jobs): twice the time
//!   used, rounded up (a shorter limit starts sooner under backfill).

use drover_proto::{JobState, INFINITE};

use super::usage::Usage;

/// Below this memory or CPU efficiency, suggest asking for less.
pub const LOW_EFFICIENCY: f64 = 0.30;
/// Below this share of the time limit used, suggest a shorter limit.
pub const LOW_TIME_SHARE: f64 = 0.20;
/// Jobs shorter than this say little about their CPU use.
const MIN_SECS_FOR_CPU: u64 = 30;

/// What the cluster offers, for the job's partition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    /// The most memory a node of the job's partition has, MiB.
    pub max_node_mem_mb: Option<u64>,
    /// The cluster's GPU types and their memory (MiB) when known.
    pub gpu_types: Vec<(String, Option<u64>)>,
}

/// Which rule spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    HostOom,
    GpuOom,
    MemoryLow,
    CpuLow,
    TimeShort,
}

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    pub rule: Rule,
    /// The sentence for seff.
    pub text: String,
    /// The option to use next time (`--mem=12G`), when there is one.
    pub ask: Option<String>,
}

/// MiB as people say it: `512 MiB`, `8 GiB`, `1.5 GiB`.
pub fn human_mb(mb: u64) -> String {
    if mb < 1024 {
        format!("{mb} MiB")
    } else if mb.is_multiple_of(1024) {
        format!("{} GiB", mb / 1024)
    } else {
        format!("{:.1} GiB", mb as f64 / 1024.0)
    }
}

/// A memory request at least `mb`, rounded up to a size people ask for:
/// 128 MiB steps up to 1 GiB, whole GiB up to 16 GiB, then 4 GiB steps.
pub fn round_mem_up(mb: u64) -> u64 {
    let mb = mb.max(1);
    let step = if mb <= 1024 {
        128
    } else if mb <= 16 * 1024 {
        1024
    } else {
        4 * 1024
    };
    mb.div_ceil(step) * step
}

/// A time limit at least `secs`, rounded up: 5-minute steps up to 2 hours,
/// 30-minute steps up to a day, then whole hours. Seconds.
pub fn round_time_up(secs: u64) -> u64 {
    let secs = secs.max(300);
    let step = if secs <= 2 * 3600 {
        300
    } else if secs <= 86400 {
        1800
    } else {
        3600
    };
    secs.div_ceil(step) * step
}

/// The memory of a GPU type when its name or the common models say it:
/// `a100_80g`, `a100-40gb`, `h100` (80 GiB), `l4` (24 GiB). MiB.
pub fn gpu_type_mem_mb(ty: &str) -> Option<u64> {
    let t = ty.to_ascii_lowercase();
    // A size in the name after a separator: "a100_80g", "a100-80gb".
    for part in t.split(['_', '-', '.', ':']).skip(1) {
        let digits = part.trim_end_matches("gb").trim_end_matches('g');
        if digits.len() < part.len()
            && !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
        {
            return digits.parse::<u64>().ok().map(|g| g * 1024);
        }
    }
    // Models sold with one memory size only.
    const KNOWN: &[(&str, u64)] = &[
        ("k80", 12),
        ("t4", 16),
        ("a10", 24),
        ("a10g", 24),
        ("l4", 24),
        ("a30", 24),
        ("a40", 48),
        ("l40", 48),
        ("l40s", 48),
        ("a6000", 48),
        ("h100", 80),
        ("h200", 141),
        ("gh200", 96),
        ("b200", 192),
        ("mi210", 64),
        ("mi250", 128),
        ("mi250x", 128),
        ("mi300x", 192),
    ];
    KNOWN
        .iter()
        .find(|(name, _)| *name == t)
        .map(|(_, g)| g * 1024)
}

/// The memory option for `per_node_mb` on each node.
fn mem_option(u: &Usage, per_node_mb: u64) -> String {
    if u.mem_per_cpu {
        let per_cpu = round_mem_up(per_node_mb.div_ceil(u64::from(u.cpus_per_node())));
        format!(
            "--mem-per-cpu={}",
            drover_conf::units::format_mem_mb(per_cpu)
        )
    } else {
        format!("--mem={}", drover_conf::units::format_mem_mb(per_node_mb))
    }
}

fn host_oom(u: &Usage, f: &Facts) -> Advice {
    let peak_mb = u.peak_rss_kb.div_ceil(1024);
    let limit = u.mem_limit_mb;
    let want = round_mem_up(peak_mb.max(limit) * 3 / 2);
    let reached = if limit > 0 {
        format!("peak memory reached the {} limit", human_mb(limit))
    } else {
        format!("the job ran out of memory at {}", human_mb(peak_mb))
    };
    let part = if u.partition.is_empty() {
        "its partition".to_string()
    } else {
        format!("partition {}", u.partition)
    };
    let (text, ask) = match f.max_node_mem_mb {
        Some(cap) if want > cap && limit.max(peak_mb) >= cap => (
            format!(
                "Out of memory: {reached}, and no node of {part} has more than {}: \
                 use less memory per node (smaller inputs or batches, or spread the \
                 work over more nodes).",
                human_mb(cap)
            ),
            None,
        ),
        Some(cap) if want > cap => {
            let ask = mem_option(u, cap);
            (
                format!("Out of memory: {reached}; ask {ask} (the most a node of {part} has)."),
                Some(ask),
            )
        }
        _ => {
            let ask = mem_option(u, want);
            (format!("Out of memory: {reached}; ask {ask}."), Some(ask))
        }
    };
    Advice {
        rule: Rule::HostOom,
        text,
        ask,
    }
}

fn gpu_oom(u: &Usage, f: &Facts) -> Advice {
    if u.gpus == 0 {
        // It used a GPU it was not given (devices not constrained).
        let types: Vec<String> = f
            .gpu_types
            .iter()
            .map(|(t, m)| match m {
                Some(m) => format!("{t} ({})", human_mb(*m)),
                None => t.clone(),
            })
            .collect();
        let text = if types.is_empty() {
            "Out of GPU memory, with no GPU allocated to the job: ask for one with \
             --gres=gpu:N (this cluster lists no GPU types)."
                .to_string()
        } else {
            format!(
                "Out of GPU memory, with no GPU allocated to the job: ask for one with \
                 --gres=gpu:TYPE:N; types here: {}.",
                types.join(", ")
            )
        };
        return Advice {
            rule: Rule::GpuOom,
            text,
            ask: None,
        };
    }
    let own = f
        .gpu_types
        .iter()
        .find(|(t, _)| *t == u.gpu_type)
        .and_then(|(_, m)| *m)
        .or_else(|| gpu_type_mem_mb(&u.gpu_type));
    // What the job had: its type's memory, else at least what it used.
    let floor = own.or((u.gpu_mem_max_mb > 0).then_some(u.gpu_mem_max_mb));
    let per_node = (u.gpus / u.nodes.max(1)).max(1);
    let others: Vec<&(String, Option<u64>)> = f
        .gpu_types
        .iter()
        .filter(|(t, _)| *t != u.gpu_type)
        .collect();
    let mut bigger: Vec<(&str, u64)> = others
        .iter()
        .filter_map(|(t, m)| m.map(|m| (t.as_str(), m)))
        .filter(|(_, m)| floor.is_none_or(|fl| *m > fl))
        .collect();
    bigger.sort_by_key(|(t, m)| (*m, t.to_string()));
    let unknown: Vec<&str> = others
        .iter()
        .filter(|(_, m)| m.is_none())
        .map(|(t, _)| t.as_str())
        .collect();
    let had = match (u.gpu_type.as_str(), own) {
        ("", _) => "its GPU".to_string(),
        (t, Some(m)) => format!("its {t} GPU ({})", human_mb(m)),
        (t, None) => format!("its {t} GPU"),
    };
    let mut text = format!(
        "Out of GPU memory: the job needed more than {had} holds; use a smaller batch size"
    );
    let mut ask = None;
    if let Some((t, _)) = bigger.first() {
        let list: Vec<String> = bigger
            .iter()
            .map(|(t, m)| format!("{t} ({})", human_mb(*m)))
            .collect();
        let opt = format!("--gres=gpu:{t}:{per_node}");
        text.push_str(&format!(
            ", or a GPU type with more memory: {} (e.g. {opt})",
            list.join(", ")
        ));
        ask = Some(opt);
    } else if unknown.is_empty() && !others.is_empty() {
        text.push_str(" or spread the model over several GPUs: no GPU type here has more memory");
    } else if others.is_empty() && unknown.is_empty() {
        text.push_str(" or spread the model over several GPUs");
    }
    if !unknown.is_empty() {
        text.push_str(&format!(
            "; other GPU types here: {} (their memory is not known to Drover)",
            unknown.join(", ")
        ));
    }
    text.push('.');
    Advice {
        rule: Rule::GpuOom,
        text,
        ask,
    }
}

fn memory_low(u: &Usage) -> Option<Advice> {
    let eff = u.mem_efficiency()?;
    if u.host_oom || !u.state.is_final() || eff >= LOW_EFFICIENCY {
        return None;
    }
    let peak_mb = u.peak_rss_kb.div_ceil(1024);
    let want = round_mem_up(peak_mb * 5 / 4);
    if want >= u.mem_limit_mb {
        return None;
    }
    let ask = mem_option(u, want);
    Some(Advice {
        rule: Rule::MemoryLow,
        text: format!(
            "Memory: the peak ({}) was {:.0}% of the {} asked; ask {ask}.",
            human_mb(peak_mb.max(1)),
            eff * 100.0,
            human_mb(u.mem_limit_mb)
        ),
        ask: Some(ask),
    })
}

fn cpu_low(u: &Usage) -> Option<Advice> {
    let eff = u.cpu_efficiency()?;
    if u.cpus < 2 || u.elapsed < MIN_SECS_FOR_CPU || eff >= LOW_EFFICIENCY {
        return None;
    }
    if !matches!(
        u.state,
        JobState::Completed | JobState::Failed | JobState::Timeout | JobState::OutOfMemory
    ) {
        return None;
    }
    let tasks = u.tasks.max(1);
    let per_task = u.cpus / tasks;
    let want_total = (u.busy_cpus * 1.25).ceil().max(1.0) as u32;
    let want = want_total.div_ceil(tasks).max(1);
    let busy = format!("about {:.1} of {} CPUs were busy", u.busy_cpus, u.cpus);
    let (text, ask) = if want < per_task {
        let ask = format!("--cpus-per-task={want}");
        (
            format!("CPU: {:.0}% efficiency: {busy}; ask {ask}.", eff * 100.0),
            Some(ask),
        )
    } else {
        (
            format!(
                "CPU: {:.0}% efficiency: {busy}; run fewer tasks (-n) or check that they all work.",
                eff * 100.0
            ),
            None,
        )
    };
    Some(Advice {
        rule: Rule::CpuLow,
        text,
        ask,
    })
}

fn time_short(u: &Usage) -> Option<Advice> {
    if u.state != JobState::Completed || u.time_limit_min == INFINITE || u.time_limit_min == 0 {
        return None;
    }
    let limit = u64::from(u.time_limit_min) * 60;
    if (u.elapsed as f64) >= limit as f64 * LOW_TIME_SHARE {
        return None;
    }
    let want = round_time_up(u.elapsed * 2);
    if want >= limit {
        return None;
    }
    let hms = drover_conf::units::format_hms;
    let ask = format!("--time={}", hms(want));
    Some(Advice {
        rule: Rule::TimeShort,
        text: format!(
            "Time: the job ran {} of its {} limit; ask {ask} (a shorter limit starts \
             sooner under backfill).",
            hms(u.elapsed),
            hms(limit)
        ),
        ask: Some(ask),
    })
}

/// Advice for a finished job (none while it runs).
pub fn advise(u: &Usage, f: &Facts) -> Vec<Advice> {
    if !u.state.is_final() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if u.host_oom {
        out.push(host_oom(u, f));
    }
    if u.gpu_oom {
        out.push(gpu_oom(u, f));
    }
    out.extend(memory_low(u));
    out.extend(cpu_low(u));
    out.extend(time_short(u));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Usage {
        Usage {
            state: JobState::Completed,
            host_oom: false,
            gpu_oom: false,
            partition: "gpu".into(),
            nodes: 1,
            cpus: 8,
            tasks: 1,
            elapsed: 3600,
            cpu_secs: 8 * 3600,
            busy_cpus: 8.0,
            peak_rss_kb: 7 * 1024 * 1024,
            mem_asked_mb: 8192,
            mem_per_cpu: false,
            mem_limit_mb: 8192,
            time_limit_min: 90,
            gpus: 1,
            gpu_type: "a100_40g".into(),
            gpu_mem_max_mb: 0,
        }
    }

    fn facts() -> Facts {
        Facts {
            max_node_mem_mb: Some(64 * 1024),
            gpu_types: vec![
                ("a100_40g".into(), Some(40 * 1024)),
                ("h100".into(), Some(80 * 1024)),
                ("t4".into(), Some(16 * 1024)),
            ],
        }
    }

    #[test]
    fn a_well_sized_job_gets_no_advice() {
        assert!(advise(&job(), &facts()).is_empty());
        let running = Usage {
            state: JobState::Running,
            host_oom: true,
            ..job()
        };
        assert!(advise(&running, &facts()).is_empty());
    }

    #[test]
    fn host_oom_asks_for_half_as_much_again() {
        let u = Usage {
            state: JobState::OutOfMemory,
            host_oom: true,
            peak_rss_kb: 8 * 1024 * 1024,
            ..job()
        };
        let a = advise(&u, &facts());
        assert_eq!(a.len(), 1, "{a:?}");
        assert_eq!(
            a[0].text,
            "Out of memory: peak memory reached the 8 GiB limit; ask --mem=12G."
        );
        assert_eq!(a[0].ask.as_deref(), Some("--mem=12G"));
        // Small jobs: 128 MiB steps.
        let small = Usage {
            mem_limit_mb: 32,
            mem_asked_mb: 32,
            peak_rss_kb: 32 * 1024,
            ..u.clone()
        };
        assert_eq!(
            advise(&small, &facts())[0].ask.as_deref(),
            Some("--mem=128M")
        );
        // Per CPU: the per-CPU figure.
        let per_cpu = Usage {
            mem_per_cpu: true,
            mem_asked_mb: 1024,
            ..u.clone()
        };
        assert_eq!(
            advise(&per_cpu, &facts())[0].ask.as_deref(),
            Some("--mem-per-cpu=2G")
        );
    }

    #[test]
    fn host_oom_is_capped_by_the_largest_node() {
        let u = Usage {
            state: JobState::OutOfMemory,
            host_oom: true,
            mem_limit_mb: 48 * 1024,
            mem_asked_mb: 48 * 1024,
            peak_rss_kb: 48 * 1024 * 1024,
            ..job()
        };
        let a = &advise(&u, &facts())[0];
        assert_eq!(a.ask.as_deref(), Some("--mem=64G"));
        assert!(
            a.text.contains("the most a node of partition gpu has"),
            "{}",
            a.text
        );
        let at_cap = Usage {
            mem_limit_mb: 64 * 1024,
            ..u
        };
        let a = &advise(&at_cap, &facts())[0];
        assert_eq!(a.ask, None);
        assert!(
            a.text
                .contains("no node of partition gpu has more than 64 GiB"),
            "{}",
            a.text
        );
    }

    #[test]
    fn gpu_oom_names_bigger_types() {
        let u = Usage {
            state: JobState::Failed,
            gpu_oom: true,
            ..job()
        };
        let a = advise(&u, &facts());
        assert_eq!(a[0].rule, Rule::GpuOom);
        assert_eq!(
            a[0].text,
            "Out of GPU memory: the job needed more than its a100_40g GPU (40 GiB) holds; \
             use a smaller batch size, or a GPU type with more memory: h100 (80 GiB) \
             (e.g. --gres=gpu:h100:1)."
        );
        // The biggest already: no bigger type.
        let top = Usage {
            gpu_type: "h100".into(),
            ..u.clone()
        };
        let t = &advise(&top, &facts())[0].text;
        assert!(t.contains("no GPU type here has more memory"), "{t}");
        // Unknown memory: the types are named, and it says so.
        let f = Facts {
            gpu_types: vec![("a100".into(), None), ("v100".into(), None)],
            ..facts()
        };
        let odd = Usage {
            gpu_type: "v100".into(),
            ..u
        };
        let t = &advise(&odd, &f)[0].text;
        assert!(
            t.ends_with("other GPU types here: a100 (their memory is not known to Drover)."),
            "{t}"
        );
        // No GPU of its own: ask for one.
        let none = Usage {
            gpus: 0,
            gpu_type: String::new(),
            ..odd
        };
        assert_eq!(
            advise(&none, &f)[0].text,
            "Out of GPU memory, with no GPU allocated to the job: ask for one with \
             --gres=gpu:TYPE:N; types here: a100, v100."
        );
    }

    #[test]
    fn low_memory_cpu_and_time() {
        let u = Usage {
            peak_rss_kb: 900 * 1024,
            busy_cpus: 1.0,
            cpu_secs: 3600,
            elapsed: 600,
            time_limit_min: 24 * 60,
            ..job()
        };
        let a = advise(&u, &facts());
        let asks: Vec<&str> = a.iter().filter_map(|a| a.ask.as_deref()).collect();
        assert_eq!(asks, ["--mem=2G", "--cpus-per-task=2", "--time=00:20:00"]);
        assert!(
            a[0].text.contains("was 11% of the 8 GiB asked"),
            "{}",
            a[0].text
        );
        assert!(
            a[1].text.contains("about 1.0 of 8 CPUs were busy"),
            "{}",
            a[1].text
        );
        assert!(
            a[2].text.contains("ran 00:10:00 of its 1-00:00:00 limit"),
            "{}",
            a[2].text
        );
        // A failed job's run time says nothing about the limit it needs.
        let failed = Usage {
            state: JobState::Failed,
            ..u
        };
        assert!(advise(&failed, &facts())
            .iter()
            .all(|a| a.rule != Rule::TimeShort));
    }

    #[test]
    fn rounding_and_gpu_names() {
        assert_eq!(round_mem_up(1), 128);
        assert_eq!(round_mem_up(1025), 2048);
        assert_eq!(round_mem_up(17 * 1024), 20 * 1024);
        assert_eq!(round_time_up(10), 300);
        assert_eq!(round_time_up(7300), 9000);
        assert_eq!(round_time_up(90_000), 90_000);
        assert_eq!(gpu_type_mem_mb("a100_80g"), Some(80 * 1024));
        assert_eq!(gpu_type_mem_mb("A100-40GB"), Some(40 * 1024));
        assert_eq!(gpu_type_mem_mb("h100"), Some(80 * 1024));
        assert_eq!(gpu_type_mem_mb("a100"), None);
        assert_eq!(gpu_type_mem_mb("rtx_3090"), None);
        assert_eq!(human_mb(1536), "1.5 GiB");
    }
}
