//! `NodeName=` lines of slurm.conf, node sets and GRES specifications.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::error::{ConfError, ConfWarning};
use crate::hostlist;
use crate::lexer::Pair;
use crate::units;
use crate::values::{self, canonical, err, warn, UnknownKeys};

/// Most nodes one configuration may define, and so most names any one
/// node expression in it may stand for (Drover's bound, not Slurm's: it
/// keeps a short file from naming millions of nodes, which would take
/// minutes to expand).
pub const MAX_NODES: usize = 65_536;

/// One generic resource: `gpu:a100:4` -> name `gpu`, type `a100`, count 4.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GresSpec {
    pub name: String,
    pub r#type: Option<String>,
    pub count: u64,
}

impl fmt::Display for GresSpec {
    /// `name[:type]:count`, the form Slurm prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.r#type {
            Some(t) => write!(f, "{}:{}:{}", self.name, t, self.count),
            None => write!(f, "{}:{}", self.name, self.count),
        }
    }
}

/// Split on commas outside parentheses.
fn split_gres_items(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_gres_word(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A GRES count: digits with an optional K/M/G/T suffix (powers of 1024).
pub fn parse_gres_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .char_indices()
        .find(|(_, c)| !c.is_ascii_digit())
        .map_or(t.len(), |(i, _)| i);
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("invalid count '{t}'"));
    }
    let n: u64 = num
        .parse()
        .map_err(|_| format!("count '{t}' is too large"))?;
    let mul: u64 = match suffix {
        "" => 1,
        "k" | "K" => 1 << 10,
        "m" | "M" => 1 << 20,
        "g" | "G" => 1 << 30,
        "t" | "T" => 1 << 40,
        _ => return Err(format!("invalid count '{t}'")),
    };
    n.checked_mul(mul)
        .ok_or_else(|| format!("count '{t}' is too large"))
}

/// Digits with at most a one-letter K/M/G/T suffix.
fn looks_like_count(s: &str) -> bool {
    let rest = s.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.len() < s.len() && matches!(rest, "" | "k" | "K" | "m" | "M" | "g" | "G" | "t" | "T")
}

fn parse_gres_item(item: &str) -> Result<GresSpec, String> {
    let mut it = item.trim();
    if it.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("gres/")) {
        it = it.get(5..).unwrap_or("");
    }
    // drop a trailing "(S:0-1)" / "(CPUs:...)" affinity annotation
    if it.ends_with(')') {
        if let Some(open) = it.find('(') {
            it = &it[..open];
        }
    }
    let normalized = it.replace('=', ":");
    let fields: Vec<&str> = normalized
        .split(':')
        .filter(|f| !f.eq_ignore_ascii_case("no_consume"))
        .collect();
    let (name, rest) = match fields.split_first() {
        Some((n, r)) => (*n, r),
        None => return Err(format!("invalid GRES '{}'", item.trim())),
    };
    if !valid_gres_word(name) {
        return Err(format!("invalid GRES name in '{}'", item.trim()));
    }
    let check_type = |t: &str| -> Result<String, String> {
        if valid_gres_word(t) {
            Ok(t.to_string())
        } else {
            Err(format!("invalid GRES type in '{}'", item.trim()))
        }
    };
    let (r#type, count) = match rest {
        [] => (None, 1),
        [x] if looks_like_count(x) => (
            None,
            parse_gres_count(x).map_err(|e| format!("{e} in GRES '{}'", item.trim()))?,
        ),
        [x] => (Some(check_type(x)?), 1),
        [t, c] => (
            Some(check_type(t)?),
            parse_gres_count(c).map_err(|e| format!("{e} in GRES '{}'", item.trim()))?,
        ),
        _ => return Err(format!("too many ':' fields in GRES '{}'", item.trim())),
    };
    Ok(GresSpec {
        name: name.to_string(),
        r#type,
        count,
    })
}

/// Parse a GRES list: `gpu:a100:4,gpu:2,mps:100`, `gpu` (count 1),
/// `gpu:a100` (type a100, count 1), `gres/gpu:2`. Counts take K/M/G/T
/// suffixes; `no_consume` flags and `(S:...)` annotations are dropped.
/// Empty, `none` and `(null)` give an empty list.
pub fn parse_gres_list(s: &str) -> Result<Vec<GresSpec>, String> {
    let t = s.trim();
    if t.is_empty() || t.eq_ignore_ascii_case("none") || t.eq_ignore_ascii_case("(null)") {
        return Ok(Vec::new());
    }
    split_gres_items(t)
        .into_iter()
        .map(parse_gres_item)
        .collect()
}

/// Node name -> its position in `Config::nodes`. A configuration's names
/// are the admin's, so the cheap hash is safe; it is most of what indexing
/// a 1,000-node line costs with the default one.
pub(crate) type NodeIndex = HashMap<String, usize, rustc_hash::FxBuildHasher>;

/// One node of the cluster (one entry per expanded `NodeName`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeConf {
    pub name: String,
    /// Address slurmd is reached at (defaults to `node_hostname`).
    pub node_addr: String,
    /// Host name (defaults to `name`).
    pub node_hostname: String,
    /// slurmd port; 0 = the cluster-wide `SlurmdPort`.
    pub port: u16,
    pub cpus: u32,
    pub boards: u32,
    /// Total sockets on the node (all boards).
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// MB.
    pub real_memory: u64,
    /// MB.
    pub tmp_disk: u64,
    pub features: Vec<String>,
    /// Defaults to `features`.
    pub active_features: Vec<String>,
    pub gres: Vec<GresSpec>,
    /// Upper-cased: UNKNOWN, IDLE, DOWN, DRAIN, FAIL, FUTURE, CLOUD ...
    pub state: String,
    pub weight: u32,
    pub reason: Option<String>,
    pub cpu_spec_list: Option<String>,
    pub core_spec_count: u32,
    /// MB.
    pub mem_spec_limit: u64,
    /// Recognised keys kept verbatim (CpuBind, TRESWeights, Parameters, ...).
    pub extra: Vec<(String, String)>,
}

impl NodeConf {
    /// A node with Slurm's defaults.
    pub fn new(name: &str) -> Self {
        NodeConf {
            name: name.to_string(),
            node_addr: name.to_string(),
            node_hostname: name.to_string(),
            port: 0,
            cpus: 1,
            boards: 1,
            sockets: 1,
            cores_per_socket: 1,
            threads_per_core: 1,
            real_memory: 1,
            tmp_disk: 0,
            features: Vec::new(),
            active_features: Vec::new(),
            gres: Vec::new(),
            state: "UNKNOWN".to_string(),
            weight: 1,
            reason: None,
            cpu_spec_list: None,
            core_spec_count: 0,
            mem_spec_limit: 0,
            extra: Vec::new(),
        }
    }

    /// Sockets on each board.
    pub fn sockets_per_board(&self) -> u32 {
        self.sockets / self.boards.max(1)
    }

    /// Total count of GRES `name` (all types).
    pub fn gres_count(&self, name: &str) -> u64 {
        self.gres
            .iter()
            .filter(|g| g.name == name)
            .fold(0u64, |a, g| a.saturating_add(g.count))
    }

    pub fn has_feature(&self, feature: &str) -> bool {
        self.features.iter().any(|f| f == feature)
    }
}

/// `NodeSet=name Nodes=... Feature=...`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSetConf {
    pub name: String,
    pub nodes: Vec<String>,
}

/// Keys of a `NodeName=` line (canonical spelling).
pub(crate) const NODE_KEYS: &[&str] = &[
    "NodeName",
    "NodeAddr",
    "NodeHostname",
    "Port",
    "CPUs",
    "Procs",
    "Boards",
    "SocketsPerBoard",
    "Sockets",
    "CoresPerSocket",
    "ThreadsPerCore",
    "RealMemory",
    "TmpDisk",
    "Feature",
    "Features",
    "AvailableFeatures",
    "ActiveFeatures",
    "Gres",
    "State",
    "Weight",
    "Reason",
    "CpuSpecList",
    "CoreSpecCount",
    "MemSpecLimit",
];

/// Node keys that are recognised and kept verbatim in `NodeConf::extra`.
pub(crate) const NODE_EXTRA_KEYS: &[&str] = &[
    "Bcast",
    "Comment",
    "CpuBind",
    "Extra",
    "Parameters",
    "RestrictedCoresPerGPU",
    "Topology",
    "TRESWeights",
];

const NODE_STATES: &[&str] = &[
    "UNKNOWN",
    "IDLE",
    "DOWN",
    "DRAIN",
    "DRAINED",
    "DRAINING",
    "FAIL",
    "FAILING",
    "FUTURE",
    "CLOUD",
    "POWERED_DOWN",
    "POWER_DOWN",
];

/// Validate and upper-case a node state (`DOWN`, `CLOUD+POWERED_DOWN`, ...).
pub(crate) fn parse_node_state(v: &str) -> Result<String, String> {
    let up = v.trim().to_ascii_uppercase();
    if up.is_empty() || !up.split('+').all(|s| NODE_STATES.contains(&s)) {
        return Err(format!("invalid node state '{}'", v.trim()));
    }
    Ok(up)
}

/// Values of one `NodeName=` line (or the accumulated DEFAULT line), before
/// the line's names are applied.
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeSpec {
    addr: Option<(Vec<String>, Pair)>,
    hostname: Option<(Vec<String>, Pair)>,
    port: Option<(Vec<u16>, Pair)>,
    cpus: Option<u32>,
    boards: Option<u32>,
    sockets_per_board: Option<u32>,
    sockets: Option<u32>,
    cores: Option<u32>,
    threads: Option<u32>,
    real_memory: Option<u64>,
    tmp_disk: Option<u64>,
    features: Option<Vec<String>>,
    active_features: Option<Vec<String>>,
    gres: Option<Vec<GresSpec>>,
    state: Option<String>,
    weight: Option<u32>,
    reason: Option<String>,
    cpu_spec_list: Option<String>,
    core_spec_count: Option<u32>,
    mem_spec_limit: Option<u64>,
    extra: Vec<(String, String)>,
}

impl NodeSpec {
    /// `self` with every value `line` sets replaced (DEFAULT + line).
    pub(crate) fn overlay(&self, line: &NodeSpec) -> NodeSpec {
        let mut extra = self.extra.clone();
        for (k, v) in &line.extra {
            extra.retain(|(ek, _)| ek != k);
            extra.push((k.clone(), v.clone()));
        }
        NodeSpec {
            addr: line.addr.clone().or_else(|| self.addr.clone()),
            hostname: line.hostname.clone().or_else(|| self.hostname.clone()),
            port: line.port.clone().or_else(|| self.port.clone()),
            cpus: line.cpus.or(self.cpus),
            boards: line.boards.or(self.boards),
            sockets_per_board: line.sockets_per_board.or(self.sockets_per_board),
            sockets: line.sockets.or(self.sockets),
            cores: line.cores.or(self.cores),
            threads: line.threads.or(self.threads),
            real_memory: line.real_memory.or(self.real_memory),
            tmp_disk: line.tmp_disk.or(self.tmp_disk),
            features: line.features.clone().or_else(|| self.features.clone()),
            active_features: line
                .active_features
                .clone()
                .or_else(|| self.active_features.clone()),
            gres: line.gres.clone().or_else(|| self.gres.clone()),
            state: line.state.clone().or_else(|| self.state.clone()),
            weight: line.weight.or(self.weight),
            reason: line.reason.clone().or_else(|| self.reason.clone()),
            cpu_spec_list: line
                .cpu_spec_list
                .clone()
                .or_else(|| self.cpu_spec_list.clone()),
            core_spec_count: line.core_spec_count.or(self.core_spec_count),
            mem_spec_limit: line.mem_spec_limit.or(self.mem_spec_limit),
            extra,
        }
    }
}

fn positive(p: &Pair, key: &str) -> Result<u32, ConfError> {
    match values::parse_u32(&p.value) {
        Ok(0) => Err(err(p, key, "must be at least 1")),
        Ok(n) => Ok(n),
        Err(m) => Err(err(p, key, m)),
    }
}

fn host_list(p: &Pair, key: &str) -> Result<Vec<String>, ConfError> {
    let v =
        hostlist::expand_at_most(&p.value, MAX_NODES).map_err(|e| err(p, key, e.to_string()))?;
    if v.is_empty() {
        return Err(err(p, key, "empty value"));
    }
    Ok(v)
}

fn port_list(p: &Pair) -> Result<Vec<u16>, ConfError> {
    let v = p.value.trim();
    let expr = if v.contains('[') {
        v.to_string()
    } else {
        format!("[{v}]")
    };
    let items = hostlist::expand_at_most(&expr, MAX_NODES)
        .map_err(|_| err(p, "Port", format!("invalid port '{v}'")))?;
    if items.is_empty() {
        return Err(err(p, "Port", "empty value"));
    }
    items
        .iter()
        .map(|s| values::parse_u16(s).map_err(|m| err(p, "Port", m)))
        .collect()
}

/// Parse the pairs of a `NodeName=` line (the `NodeName` pair itself is
/// skipped).
pub(crate) fn parse_node_spec(
    pairs: &[Pair],
    gres_types: &[String],
    unknown: &mut UnknownKeys,
    warned_gres: &mut HashSet<String>,
    warnings: &mut Vec<ConfWarning>,
) -> Result<NodeSpec, ConfError> {
    let mut s = NodeSpec::default();
    for p in pairs {
        let Some(key) = canonical(NODE_KEYS, &p.key) else {
            match canonical(NODE_EXTRA_KEYS, &p.key) {
                Some(k) => {
                    s.extra.retain(|(ek, _)| ek != k);
                    s.extra.push((k.to_string(), p.value.clone()));
                }
                None => unknown.note("NodeName", p, warnings),
            }
            continue;
        };
        let v = p.value.as_str();
        let u32v = || values::parse_u32(v).map_err(|m| err(p, key, m));
        let memv = || units::parse_mem_mb(v).map_err(|m| err(p, key, m));
        match key {
            "NodeName" => {}
            "NodeAddr" => s.addr = Some((host_list(p, key)?, p.clone())),
            "NodeHostname" => s.hostname = Some((host_list(p, key)?, p.clone())),
            "Port" => s.port = Some((port_list(p)?, p.clone())),
            "CPUs" | "Procs" => s.cpus = Some(positive(p, "CPUs")?),
            "Boards" => s.boards = Some(positive(p, key)?),
            "SocketsPerBoard" => s.sockets_per_board = Some(positive(p, key)?),
            "Sockets" => s.sockets = Some(positive(p, key)?),
            "CoresPerSocket" => s.cores = Some(positive(p, key)?),
            "ThreadsPerCore" => s.threads = Some(positive(p, key)?),
            "RealMemory" => s.real_memory = Some(memv()?),
            "TmpDisk" => s.tmp_disk = Some(memv()?),
            "Feature" | "Features" | "AvailableFeatures" => {
                s.features = Some(values::parse_list(v))
            }
            "ActiveFeatures" => s.active_features = Some(values::parse_list(v)),
            "Gres" => {
                let list = parse_gres_list(v).map_err(|m| err(p, key, m))?;
                if v.to_ascii_lowercase().contains("no_consume") {
                    warnings.push(warn(p, key, "no_consume flag is not supported, ignored"));
                }
                for g in &list {
                    if !gres_types.iter().any(|t| t.eq_ignore_ascii_case(&g.name))
                        && warned_gres.insert(g.name.clone())
                    {
                        warnings.push(warn(
                            p,
                            key,
                            format!("GRES '{}' is not listed in GresTypes", g.name),
                        ));
                    }
                }
                s.gres = Some(list);
            }
            "State" => s.state = Some(parse_node_state(v).map_err(|m| err(p, key, m))?),
            "Weight" => s.weight = Some(u32v()?),
            "Reason" => s.reason = values::opt_string(v),
            "CpuSpecList" => s.cpu_spec_list = values::opt_string(v),
            "CoreSpecCount" => s.core_spec_count = Some(u32v()?),
            "MemSpecLimit" => s.mem_spec_limit = Some(memv()?),
            _ => unknown.note("NodeName", p, warnings),
        }
    }
    Ok(s)
}

/// A per-node list (`NodeAddr=`, `NodeHostname=`, `Port=`): one value for
/// every node or one per node name.
fn per_node<'a, T>(
    list: &'a Option<(Vec<T>, Pair)>,
    key: &str,
    count: usize,
) -> Result<Option<&'a [T]>, ConfError> {
    match list {
        None => Ok(None),
        Some((v, _)) if v.len() == count || v.len() == 1 => Ok(Some(v)),
        Some((v, p)) => Err(err(
            p,
            key,
            format!(
                "{} values for {count} node names (need 1 or {count})",
                v.len()
            ),
        )),
    }
}

/// Node `i`'s value of a [`per_node`] list.
fn nth<T>(list: Option<&[T]>, i: usize) -> Option<&T> {
    list.and_then(|v| v.get(if v.len() == 1 { 0 } else { i }))
}

/// Expand one `NodeName=` line into nodes.
pub(crate) fn build_nodes(
    name_pair: &Pair,
    s: &NodeSpec,
    warnings: &mut Vec<ConfWarning>,
) -> Result<Vec<NodeConf>, ConfError> {
    let names = host_list(name_pair, "NodeName")?;
    let n = names.len();
    let hostnames = per_node(&s.hostname, "NodeHostname", n)?;
    let addrs = per_node(&s.addr, "NodeAddr", n)?;
    let ports = per_node(&s.port, "Port", n)?;

    let boards = s.boards.unwrap_or(1);
    let cores = s.cores.unwrap_or(1);
    let threads = s.threads.unwrap_or(1);
    let topo_given = s.boards.is_some()
        || s.sockets_per_board.is_some()
        || s.sockets.is_some()
        || s.cores.is_some()
        || s.threads.is_some();
    let overflow = || err(name_pair, "CPUs", "socket/core/thread counts are too large");
    let mut sockets = match (s.sockets_per_board, s.sockets) {
        (Some(spb), sk) => {
            if sk.is_some() {
                warnings.push(warn(
                    name_pair,
                    "SocketsPerBoard",
                    "both Sockets and SocketsPerBoard given; using SocketsPerBoard",
                ));
            }
            boards.checked_mul(spb).ok_or_else(overflow)?
        }
        (None, Some(sk)) => sk,
        (None, None) => boards,
    };
    let (mut cores, mut threads) = (cores, threads);
    let product = sockets
        .checked_mul(cores)
        .and_then(|x| x.checked_mul(threads));
    let cpus = match s.cpus {
        None => product.ok_or_else(overflow)?,
        Some(c) if !topo_given => {
            sockets = c;
            cores = 1;
            threads = 1;
            c
        }
        Some(c) => {
            let with_cores = sockets.checked_mul(cores);
            if Some(c) != product && Some(c) != with_cores && c != sockets {
                warnings.push(warn(
                    name_pair,
                    "CPUs",
                    format!(
                        "CPUs={c} does not match Sockets*CoresPerSocket*ThreadsPerCore ({}); using CPUs={c}",
                        product.map_or_else(|| "overflow".to_string(), |x| x.to_string())
                    ),
                ));
            }
            c
        }
    };

    // Each node built whole: no default value made only to be replaced
    // (a 1,000-node line is parsed by every command at such a site).
    let features = s.features.clone().unwrap_or_default();
    let active_features = s.active_features.as_ref().unwrap_or(&features);
    let gres = s.gres.as_deref().unwrap_or_default();
    let state = s.state.as_deref().unwrap_or("UNKNOWN");
    let mut out = Vec::with_capacity(n);
    for (i, name) in names.into_iter().enumerate() {
        let node_hostname = nth(hostnames, i).cloned().unwrap_or_else(|| name.clone());
        let node_addr = nth(addrs, i)
            .cloned()
            .unwrap_or_else(|| node_hostname.clone());
        out.push(NodeConf {
            name,
            node_addr,
            node_hostname,
            port: nth(ports, i).copied().unwrap_or(0),
            cpus,
            boards,
            sockets,
            cores_per_socket: cores,
            threads_per_core: threads,
            real_memory: s.real_memory.unwrap_or(1),
            tmp_disk: s.tmp_disk.unwrap_or(0),
            features: features.clone(),
            active_features: active_features.clone(),
            gres: gres.to_vec(),
            state: state.to_string(),
            weight: s.weight.unwrap_or(1),
            reason: s.reason.clone(),
            cpu_spec_list: s.cpu_spec_list.clone(),
            core_spec_count: s.core_spec_count.unwrap_or(0),
            mem_spec_limit: s.mem_spec_limit.unwrap_or(0),
            extra: s.extra.clone(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, t: Option<&str>, count: u64) -> GresSpec {
        GresSpec {
            name: name.to_string(),
            r#type: t.map(str::to_string),
            count,
        }
    }

    #[test]
    fn gres_forms() {
        assert_eq!(
            parse_gres_list("gpu:a100:4,gpu:2,mps:100"),
            Ok(vec![
                g("gpu", Some("a100"), 4),
                g("gpu", None, 2),
                g("mps", None, 100)
            ])
        );
        assert_eq!(parse_gres_list("gpu"), Ok(vec![g("gpu", None, 1)]));
        assert_eq!(
            parse_gres_list("gpu:a100"),
            Ok(vec![g("gpu", Some("a100"), 1)])
        );
        assert_eq!(parse_gres_list("gres/gpu:2"), Ok(vec![g("gpu", None, 2)]));
        assert_eq!(parse_gres_list("GRES/gpu=2"), Ok(vec![g("gpu", None, 2)]));
        assert_eq!(parse_gres_list("mps:1K"), Ok(vec![g("mps", None, 1024)]));
        assert_eq!(parse_gres_list("bw:2G"), Ok(vec![g("bw", None, 2 << 30)]));
        assert_eq!(
            parse_gres_list("gpu:tesla:no_consume:2"),
            Ok(vec![g("gpu", Some("tesla"), 2)])
        );
        assert_eq!(
            parse_gres_list("gpu:a100:4(S:0,1),nic:1"),
            Ok(vec![g("gpu", Some("a100"), 4), g("nic", None, 1)])
        );
        assert_eq!(parse_gres_list(""), Ok(vec![]));
        assert_eq!(parse_gres_list("(null)"), Ok(vec![]));
        assert_eq!(parse_gres_list("gpu:0"), Ok(vec![g("gpu", None, 0)]));
    }

    #[test]
    fn gres_errors() {
        for s in [
            "gpu:a:b:c",
            ":2",
            "gpu::2",
            "gpu:a100:x",
            "gpu,",
            "gpu:99999999999T",
            "g pu",
            "gpu:a100:-1",
            "gres/",
        ] {
            assert!(parse_gres_list(s).is_err(), "{s:?} should fail");
        }
    }

    #[test]
    fn gres_display() {
        assert_eq!(g("gpu", Some("a100"), 4).to_string(), "gpu:a100:4");
        assert_eq!(g("gpu", None, 2).to_string(), "gpu:2");
    }

    #[test]
    fn states() {
        assert_eq!(parse_node_state("idle"), Ok("IDLE".to_string()));
        assert_eq!(
            parse_node_state("cloud+powered_down"),
            Ok("CLOUD+POWERED_DOWN".to_string())
        );
        assert!(parse_node_state("sleepy").is_err());
        assert!(parse_node_state("").is_err());
    }

    #[test]
    fn node_helpers() {
        let mut n = NodeConf::new("x");
        n.gres = vec![g("gpu", Some("a"), 2), g("gpu", None, 1), g("mps", None, 5)];
        n.features = vec!["ib".into()];
        assert_eq!(n.gres_count("gpu"), 3);
        assert!(n.has_feature("ib"));
        assert_eq!(n.sockets_per_board(), 1);
    }

    /// A configuration names at most MAX_NODES nodes; a line past it is
    /// refused with the file, the line and the counts, before its names
    /// are made (the fuzzer's slow input: ~815,000 nodes on one line).
    #[test]
    fn the_node_count_of_a_configuration_is_bounded() {
        let mut no_inc =
            |p: &str| -> Result<(String, String), String> { Err(format!("no include {p}")) };
        let text = "ClusterName=c\nNodeName=a[1-60000] CPUs=1\nNodeName=b[1-5536] CPUs=1\n";
        let (c, _) = crate::slurmconf::parse_str(text, "t.conf", &mut no_inc).unwrap();
        assert_eq!(c.nodes.len(), MAX_NODES);
        let text = format!("{text}NodeName=c1 CPUs=1\n");
        let e = crate::slurmconf::parse_str(&text, "t.conf", &mut no_inc).unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.conf:4: NodeName: more than 65536 nodes in the configuration \
             (65536 before this line, 1 on it)"
        );
        let text = "ClusterName=c\nNodeName=x[01-903]y[01-903] CPUs=1\n";
        let e = crate::slurmconf::parse_str(text, "t.conf", &mut no_inc).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t.conf:2: NodeName: more than 65536 nodes"),
            "{e}"
        );
        let text = "ClusterName=c\nNodeName=n1 NodeAddr=h[1-900000] CPUs=1\n";
        let e = crate::slurmconf::parse_str(text, "t.conf", &mut no_inc).unwrap_err();
        assert!(e.to_string().contains("more than 65536"), "{e}");
        let text = "ClusterName=c\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n[1-999999]\n";
        let e = crate::slurmconf::parse_str(text, "t.conf", &mut no_inc).unwrap_err();
        assert!(e.to_string().starts_with("t.conf:3: Nodes: "), "{e}");
    }
}
