//! Property tests: hostlist round trips, time round trips, and "never panics"
//! for every parser on arbitrary and mutated input.

use std::collections::BTreeSet;

use drover_conf::{cgroupconf, gresconf, hostlist, parse_gres_list, slurmconf, units};
use proptest::prelude::*;

const EXAMPLE: &str = "\
ClusterName=lab
SlurmctldHost=localhost
GresTypes=gpu
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
NodeName=DEFAULT State=IDLE
NodeName=lab-cpu-[01-02] CPUs=16 RealMemory=64000
NodeName=lab-gpu-01 RealMemory=122880 Sockets=2 CoresPerSocket=12 ThreadsPerCore=2 Feature=rtx4080 Gres=gpu:rtx4080:4
PartitionName=ml-cpu Nodes=lab-cpu-[01,02] Default=YES MaxTime=5-00:00:00 DefaultTime=04:00:00 State=UP
PartitionName=ml-gpu Nodes=lab-gpu-01 MaxTime=5-00:00:00 DefaultTime=04:00:00 State=UP AllowGroups=ml-users
DownNodes=lab-cpu-02 Reason=\"bad # disk\" \\
  State=DRAIN
Include other.conf
";

const GRES_EXAMPLE: &str = "\
AutoDetect=off
NodeName=lab-gpu-[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-11
Name=mps Count=1K
";

const CGROUP_EXAMPLE: &str = "\
CgroupPlugin=cgroup/v2
ConstrainCores=yes ConstrainRAMSpace=yes
AllowedRAMSpace=95.5 MinRAMSpace=64M
";

/// Characters that matter to the config syntax, plus some others.
const ALPHABET: &[char] = &[
    '=', '[', ']', '-', ',', ':', '#', '"', '\\', '\n', ' ', '\t', '(', ')', '*', '0', '1', '9',
    'a', 'N', 'D', 'E', 'F', 'A', 'U', 'L', 'T', 'é', '\r', '/', '+',
];

fn config_like() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 0..300)
        .prop_map(|v| v.into_iter().collect())
}

/// Random edits: (op, position, char).
fn mutations() -> impl Strategy<Value = Vec<(u8, usize, char)>> {
    prop::collection::vec(
        (0u8..5, any::<usize>(), prop::sample::select(ALPHABET)),
        1..12,
    )
}

fn mutate(base: &str, edits: &[(u8, usize, char)]) -> String {
    let mut chars: Vec<char> = base.chars().collect();
    for &(op, pos, ch) in edits {
        let len = chars.len();
        let at = if len == 0 { 0 } else { pos % len };
        match op {
            0 => chars.insert(at, ch),
            1 if len > 0 => {
                chars.remove(at);
            }
            2 if len > 0 => chars[at] = ch,
            3 if len > 0 => {
                // delete a run
                let end = (at + 1 + pos % 20).min(len);
                chars.drain(at..end);
            }
            4 if len > 0 => {
                // duplicate a run
                let end = (at + 1 + pos % 40).min(len);
                let run: Vec<char> = chars[at..end].to_vec();
                let insert_at = pos.wrapping_mul(31) % (len + 1);
                for (i, c) in run.into_iter().enumerate() {
                    chars.insert(insert_at + i, c);
                }
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn parse_all(text: &str) {
    let mut inc = |p: &str| -> Result<(String, String), String> {
        if p.len().is_multiple_of(2) {
            Ok(("inc.conf".to_string(), format!("NodeName={p} CPUs=1")))
        } else {
            Err("no".to_string())
        }
    };
    let _ = slurmconf::parse_str(text, "fuzz.conf", &mut inc);
    let _ = gresconf::parse_str(text, "fuzz.conf");
    let _ = cgroupconf::parse_str(text, "fuzz.conf");
}

/// Host names from a few prefixes/suffixes and padded numbers.
fn host_names() -> impl Strategy<Value = Vec<String>> {
    let one = (
        prop::sample::select(vec!["n", "gpu", "lab-cpu-", "r1n", "", "x9-"]),
        0u64..3000,
        0usize..5,
        prop::sample::select(vec!["", "-ib", "x", ".local"]),
        0u8..20,
    )
        .prop_map(|(prefix, num, width, suffix, bare)| {
            if bare == 0 {
                format!("login{}", if suffix.is_empty() { "" } else { "-x" })
            } else {
                format!("{prefix}{num:0width$}{suffix}")
            }
        });
    prop::collection::vec(one, 0..60)
}

proptest! {
    #[test]
    fn hostlist_compress_round_trips(names in host_names()) {
        let c = hostlist::compress(&names);
        let back = hostlist::expand(&c).map_err(|e| TestCaseError::fail(format!("{c}: {e}")))?;
        let want: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let got: BTreeSet<&str> = back.iter().map(String::as_str).collect();
        prop_assert_eq!(back.len(), got.len(), "duplicates in expansion of {}", c);
        prop_assert_eq!(&got, &want, "compressed: {}", c);
        // compress emits groups in a stable order: compressing the expansion
        // (in the order compress printed it) gives the same string
        prop_assert_eq!(hostlist::compress(&back), c);
    }

    #[test]
    fn hostlist_in_order_round_trips(names in host_names()) {
        let c = hostlist::compress_in_order(&names);
        let back = hostlist::expand(&c).map_err(|e| TestCaseError::fail(format!("{c}: {e}")))?;
        let want: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let got: BTreeSet<&str> = back.iter().map(String::as_str).collect();
        prop_assert_eq!(&got, &want, "compressed: {}", c);
        // the group of the first name given comes first
        if let (Some(first), Some(head)) = (names.first(), hostlist::split_top_level(&c).first()) {
            let head = hostlist::expand(head).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(head.contains(first), "{} does not start {}", first, c);
        }
        // the same names in another order compress to the same groups
        let mut rev = names.clone();
        rev.reverse();
        let mut a: Vec<String> = hostlist::split_top_level(&c).into_iter().map(String::from).collect();
        let r = hostlist::compress_in_order(&rev);
        let mut b: Vec<String> = hostlist::split_top_level(&r).into_iter().map(String::from).collect();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn hostlist_expand_never_panics(s in any::<String>(), t in config_like()) {
        let _ = hostlist::expand(&s);
        let _ = hostlist::expand(&t);
        let _ = hostlist::split_top_level(&t);
    }

    #[test]
    fn parsers_never_panic_on_arbitrary_text(s in any::<String>(), t in config_like()) {
        parse_all(&s);
        parse_all(&t);
    }

    #[test]
    fn parsers_never_panic_on_mutated_configs(edits in mutations()) {
        parse_all(&mutate(EXAMPLE, &edits));
        parse_all(&mutate(GRES_EXAMPLE, &edits));
        parse_all(&mutate(CGROUP_EXAMPLE, &edits));
    }

    #[test]
    fn value_parsers_never_panic(s in any::<String>(), t in "[0-9:\\-a-zA-Z]{0,24}") {
        for x in [&s, &t] {
            let _ = units::parse_duration(x);
            let _ = units::parse_time_minutes(x);
            let _ = units::parse_mem_mb(x);
            let _ = parse_gres_list(x);
        }
    }

    #[test]
    fn elapsed_round_trips(secs in 0u64..100_000_000_000) {
        prop_assert_eq!(units::parse_duration(&units::format_elapsed(secs)), Ok(Some(secs)));
        prop_assert_eq!(units::parse_duration(&units::format_hms(secs)), Ok(Some(secs)));
    }

    #[test]
    fn limit_round_trips(min in 0u32..u32::MAX / 60) {
        prop_assert_eq!(units::parse_time_minutes(&units::format_limit(Some(min))), Ok(Some(min)));
    }

    #[test]
    fn mem_round_trips(mb in 0u64..u64::MAX / 1024) {
        prop_assert_eq!(units::parse_mem_mb(&units::format_mem_mb(mb)), Ok(mb));
    }
}

#[test]
fn mutated_example_still_parses_unmutated() {
    let mut inc = |_: &str| -> Result<(String, String), String> {
        Ok(("other.conf".to_string(), String::new()))
    };
    let (c, w) = slurmconf::parse_str(EXAMPLE, "ex.conf", &mut inc).expect("example parses");
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(
        c.node("lab-cpu-02").map(|n| n.state.as_str()),
        Some("DRAIN")
    );
    assert_eq!(c.node("lab-cpu-01").map(|n| n.state.as_str()), Some("IDLE"));
}
