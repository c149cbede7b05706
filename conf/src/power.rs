//! Power saving and cloud nodes: `SuspendProgram`, `ResumeProgram`,
//! `SuspendTime` and the rest of Slurm's power-saving keys, checked and
//! stored in [`PowerConf`] with Slurm's defaults.

use crate::lexer::Pair;
use crate::partitions::PartitionConf;
use crate::values::{self, canonical, err};
use crate::ConfError;

/// The general keys this file owns.
pub(crate) const KEYS: &[&str] = &[
    "ResumeFailProgram",
    "ResumeProgram",
    "ResumeRate",
    "ResumeTimeout",
    "SuspendExcNodes",
    "SuspendExcParts",
    "SuspendExcStates",
    "SuspendProgram",
    "SuspendRate",
    "SuspendTime",
    "SuspendTimeout",
];

/// States `SuspendExcStates` may name (Slurm 23.11's list).
const EXC_STATES: &[&str] = &[
    "CLOUD",
    "DOWN",
    "DRAIN",
    "DYNAMIC_FUTURE",
    "DYNAMIC_NORM",
    "FAIL",
    "INVALID_REG",
    "MAINTENANCE",
    "NOT_RESPONDING",
    "PERFCTRS",
    "PLANNED",
    "RESERVED",
];

/// `SuspendExcNodes` entry: these nodes are never powered down, or, with
/// `:N`, at least N of them stay up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExcNodes {
    pub nodes: Vec<String>,
    pub keep: Option<u32>,
}

/// The power-saving settings. Times are seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PowerConf {
    pub suspend_program: Option<String>,
    pub resume_program: Option<String>,
    pub resume_fail_program: Option<String>,
    /// None: INFINITE (no power saving, the default).
    pub suspend_time: Option<u64>,
    pub suspend_timeout: u64,
    pub resume_timeout: u64,
    /// Nodes per minute; 0: no limit.
    pub resume_rate: u32,
    pub suspend_rate: u32,
    pub exc_nodes: Vec<ExcNodes>,
    pub exc_parts: Vec<String>,
    /// Upper case, from [`EXC_STATES`].
    pub exc_states: Vec<String>,
}

impl Default for PowerConf {
    fn default() -> Self {
        PowerConf {
            suspend_program: None,
            resume_program: None,
            resume_fail_program: None,
            suspend_time: None,
            suspend_timeout: 30,
            resume_timeout: 60,
            resume_rate: 300,
            suspend_rate: 60,
            exc_nodes: Vec::new(),
            exc_parts: Vec::new(),
            exc_states: Vec::new(),
        }
    }
}

/// Seconds, or None for `INFINITE`/`UNLIMITED`/`NONE`/`-1`.
pub(crate) fn parse_secs_or_infinite(v: &str) -> Result<Option<u64>, String> {
    let t = v.trim();
    if values::is_unlimited(t) || t.eq_ignore_ascii_case("NONE") || t == "-1" {
        return Ok(None);
    }
    values::parse_u64(t).map(Some)
}

fn program(v: &str) -> Result<Option<String>, String> {
    let t = v.trim();
    if t.is_empty() {
        return Ok(None);
    }
    if !t.starts_with('/') {
        return Err(format!("'{t}' is not an absolute path"));
    }
    Ok(Some(t.to_string()))
}

fn parse_exc_nodes(v: &str) -> Result<Vec<ExcNodes>, String> {
    let mut out = Vec::new();
    for piece in crate::hostlist::split_top_level(v) {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        let (expr, keep) = match piece.rsplit_once(':') {
            Some((e, n)) => (e, Some(values::parse_u32(n)?)),
            None => (piece, None),
        };
        let nodes = crate::hostlist::expand(expr).map_err(|e| e.to_string())?;
        out.push(ExcNodes { nodes, keep });
    }
    Ok(out)
}

/// Apply one power-saving key (`key` is canonical, from [`KEYS`]).
pub(crate) fn apply(pc: &mut PowerConf, key: &str, p: &Pair) -> Result<(), ConfError> {
    let v = p.value.trim();
    let e = |m: String| err(p, key, m);
    match key {
        "SuspendProgram" => pc.suspend_program = program(v).map_err(e)?,
        "ResumeProgram" => pc.resume_program = program(v).map_err(e)?,
        "ResumeFailProgram" => pc.resume_fail_program = program(v).map_err(e)?,
        "SuspendTime" => pc.suspend_time = parse_secs_or_infinite(v).map_err(e)?,
        "SuspendTimeout" | "ResumeTimeout" => {
            let n = values::parse_u64(v).map_err(e)?;
            if n == 0 {
                return Err(e("must be at least 1".to_string()));
            }
            if key == "SuspendTimeout" {
                pc.suspend_timeout = n;
            } else {
                pc.resume_timeout = n;
            }
        }
        "ResumeRate" => pc.resume_rate = values::parse_u32(v).map_err(e)?,
        "SuspendRate" => pc.suspend_rate = values::parse_u32(v).map_err(e)?,
        "SuspendExcNodes" => pc.exc_nodes = parse_exc_nodes(v).map_err(e)?,
        "SuspendExcParts" => pc.exc_parts = values::parse_list(v),
        "SuspendExcStates" => {
            let mut states = Vec::new();
            for s in values::parse_list(v) {
                let up = s.to_ascii_uppercase();
                match canonical(EXC_STATES, &up) {
                    Some(c) => states.push(c.to_string()),
                    None => {
                        return Err(e(format!(
                            "invalid state '{s}' (one of {})",
                            EXC_STATES.join(", ")
                        )))
                    }
                }
            }
            pc.exc_states = states;
        }
        _ => {}
    }
    Ok(())
}

/// Check the keys that name nodes and partitions once those are known.
pub(crate) fn check_names(
    pc: &PowerConf,
    refs: &[(&'static str, Pair)],
    is_node: impl Fn(&str) -> bool,
    is_part: impl Fn(&str) -> bool,
) -> Result<(), ConfError> {
    for (key, p) in refs {
        match *key {
            "SuspendExcNodes" => {
                for n in pc.exc_nodes.iter().flat_map(|x| &x.nodes) {
                    if !is_node(n) {
                        return Err(err(p, key, format!("undefined node '{n}'")));
                    }
                }
            }
            _ => {
                for n in &pc.exc_parts {
                    if !is_part(n) {
                        return Err(err(p, key, format!("undefined partition '{n}'")));
                    }
                }
            }
        }
    }
    Ok(())
}

/// SuspendTime set (globally or on a partition) without both programs:
/// power saving stays off (Slurm's "power_save module disabled").
pub(crate) fn disabled_warning(
    pc: &PowerConf,
    parts: &[PartitionConf],
    file: &str,
) -> Option<crate::ConfWarning> {
    let any_time = pc.suspend_time.is_some()
        || parts
            .iter()
            .any(|p| partition_secs(p, "SuspendTime").is_some_and(|s| s.is_some()));
    let missing: Vec<&str> = [
        ("SuspendProgram", pc.suspend_program.is_none()),
        ("ResumeProgram", pc.resume_program.is_none()),
    ]
    .into_iter()
    .filter_map(|(k, m)| m.then_some(k))
    .collect();
    (any_time && !missing.is_empty()).then(|| {
        crate::ConfWarning::new(
            file,
            0,
            "SuspendTime",
            format!("power saving disabled: {} not set", missing.join(" and ")),
        )
    })
}

/// Check a partition line's `SuspendTime`, `SuspendTimeout`, `ResumeTimeout`.
pub(crate) fn check_partition_key(key: &str, v: &str) -> Result<(), String> {
    match key {
        "SuspendTime" => parse_secs_or_infinite(v).map(|_| ()),
        "SuspendTimeout" | "ResumeTimeout" => match parse_secs_or_infinite(v)? {
            Some(0) => Err("must be at least 1".to_string()),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// A partition's own setting of a power key: None when unset, Some(None)
/// for INFINITE.
pub fn partition_secs(p: &PartitionConf, key: &str) -> Option<Option<u64>> {
    p.extra
        .iter()
        .rev()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .and_then(|(_, v)| parse_secs_or_infinite(v).ok())
}

/// `SlurmctldParameters` flags that change power saving and cloud nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CloudParams {
    /// `cloud_dns`: cloud nodes' addresses come from DNS (not learned at
    /// registration).
    pub cloud_dns: bool,
    /// `idle_on_node_suspend`: a node powered down is made idle (its DOWN
    /// or DRAIN cleared).
    pub idle_on_node_suspend: bool,
    /// `cloud_reg_addrs`: a cloud node's address is the one it registers from.
    pub cloud_reg_addrs: bool,
}

impl CloudParams {
    pub fn of(slurmctld_parameters: Option<&str>) -> CloudParams {
        let mut c = CloudParams::default();
        for w in values::parse_list(slurmctld_parameters.unwrap_or("")) {
            match w.to_ascii_lowercase().as_str() {
                "cloud_dns" => c.cloud_dns = true,
                "idle_on_node_suspend" => c.idle_on_node_suspend = true,
                "cloud_reg_addrs" => c.cloud_reg_addrs = true,
                _ => {}
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurmconf::parse_str;

    fn parse(text: &str) -> Result<crate::Config, ConfError> {
        parse_str(text, "drover.conf", &mut |p: &str| Err(format!("no {p}"))).map(|(c, _)| c)
    }

    const NODES: &str = "NodeName=n[1-4] CPUs=2\nPartitionName=p Nodes=ALL\n";

    #[test]
    fn defaults_are_slurms() {
        let c = parse(NODES).unwrap();
        assert_eq!(c.power, PowerConf::default());
        assert_eq!(c.power.suspend_time, None);
        assert_eq!(c.power.suspend_timeout, 30);
        assert_eq!(c.power.resume_timeout, 60);
        assert_eq!(c.power.resume_rate, 300);
        assert_eq!(c.power.suspend_rate, 60);
    }

    #[test]
    fn keys_are_read() {
        let c = parse(&format!(
            "SuspendProgram=/sbin/suspend\nResumeProgram=/sbin/resume\n\
             ResumeFailProgram=/sbin/fail\nSuspendTime=5\nSuspendTimeout=7\n\
             ResumeTimeout=9\nResumeRate=0\nSuspendRate=2\nSuspendExcNodes=n[1-2]:1,n4\n\
             SuspendExcParts=p\nSuspendExcStates=down,Drain\n{NODES}\
             PartitionName=q Nodes=n3 SuspendTime=INFINITE ResumeTimeout=100\n"
        ))
        .unwrap();
        let p = &c.power;
        assert_eq!(p.suspend_program.as_deref(), Some("/sbin/suspend"));
        assert_eq!(p.resume_program.as_deref(), Some("/sbin/resume"));
        assert_eq!(p.resume_fail_program.as_deref(), Some("/sbin/fail"));
        assert_eq!(p.suspend_time, Some(5));
        assert_eq!((p.suspend_timeout, p.resume_timeout), (7, 9));
        assert_eq!((p.resume_rate, p.suspend_rate), (0, 2));
        assert_eq!(
            p.exc_nodes,
            vec![
                ExcNodes {
                    nodes: vec!["n1".into(), "n2".into()],
                    keep: Some(1)
                },
                ExcNodes {
                    nodes: vec!["n4".into()],
                    keep: None
                }
            ]
        );
        assert_eq!(p.exc_parts, vec!["p".to_string()]);
        assert_eq!(p.exc_states, vec!["DOWN".to_string(), "DRAIN".to_string()]);
        let q = c.partition("q").unwrap();
        assert_eq!(partition_secs(q, "SuspendTime"), Some(None));
        assert_eq!(partition_secs(q, "ResumeTimeout"), Some(Some(100)));
        assert_eq!(partition_secs(q, "SuspendTimeout"), None);
        for v in ["INFINITE", "-1", "NONE", "unlimited"] {
            let c = parse(&format!("SuspendTime={v}\n{NODES}")).unwrap();
            assert_eq!(c.power.suspend_time, None, "{v}");
        }
    }

    #[test]
    fn bad_values_name_file_line_and_key() {
        for (line, key, why) in [
            ("SuspendTime=soon", "SuspendTime", "invalid number"),
            ("ResumeTimeout=0", "ResumeTimeout", "at least 1"),
            ("ResumeRate=-2", "ResumeRate", "invalid number"),
            (
                "SuspendProgram=suspend.sh",
                "SuspendProgram",
                "absolute path",
            ),
            (
                "SuspendExcStates=SLEEPY",
                "SuspendExcStates",
                "invalid state",
            ),
            (
                "SuspendExcNodes=n9",
                "SuspendExcNodes",
                "undefined node 'n9'",
            ),
            ("SuspendExcNodes=n1:x", "SuspendExcNodes", "invalid number"),
            (
                "SuspendExcParts=nope",
                "SuspendExcParts",
                "undefined partition",
            ),
        ] {
            let e = parse(&format!("ClusterName=c\n{line}\n{NODES}")).unwrap_err();
            assert_eq!((e.line, e.key.as_str()), (2, key), "{line}: {e}");
            assert!(e.message.contains(why), "{line}: {e}");
            assert_eq!(e.file, "drover.conf");
        }
        let e = parse(&format!("{NODES}PartitionName=q Nodes=n1 SuspendTime=x\n")).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (3, "SuspendTime"), "{e}");
    }

    #[test]
    fn suspend_time_without_programs_is_a_warning() {
        let text = format!("SuspendTime=60\nSuspendProgram=/s\n{NODES}");
        let (_, w) =
            parse_str(&text, "drover.conf", &mut |p: &str| Err(format!("no {p}"))).unwrap();
        assert!(
            w.iter()
                .any(|w| w.key == "SuspendTime" && w.message.contains("ResumeProgram not set")),
            "{w:?}"
        );
        let text = format!("SuspendProgram=/s\nResumeProgram=/r\n{NODES}");
        let (_, w) =
            parse_str(&text, "drover.conf", &mut |p: &str| Err(format!("no {p}"))).unwrap();
        assert!(w.iter().all(|w| w.key != "SuspendTime"), "{w:?}");
    }

    #[test]
    fn cloud_parameters() {
        let c = CloudParams::of(Some("enable_configless,cloud_dns,idle_on_node_suspend"));
        assert!(c.cloud_dns && c.idle_on_node_suspend && !c.cloud_reg_addrs);
        assert_eq!(CloudParams::of(None), CloudParams::default());
    }
}
