//! sinfo's field table: `%` letters, `-O` long names, header titles and
//! the default formats. Pure.

use crate::fmtspec::{self, Format};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeField {
    Avail,
    NodesAI,
    FeaturesAct,
    MaxCpusPerNode,
    Cpus,
    CpusAIOT,
    Disk,
    Nodes,
    FreeMem,
    Reason,
    Features,
    NodesAIOT,
    Groups,
    Gres,
    GresUsed,
    OverSubscribe,
    Timestamp,
    PrioJobFactor,
    TimeLimit,
    DefaultTime,
    Memory,
    AllocMem,
    PreemptMode,
    Hostnames,
    NodeList,
    NodeAddr,
    CpuLoad,
    PrioTier,
    Partition,
    Root,
    PartitionName,
    JobSize,
    AllocNodes,
    StateCompact,
    StateLong,
    User,
    UserLong,
    Version,
    Cluster,
    Weight,
    Sockets,
    Cores,
    Threads,
    Sct,
    Port,
    /// `-O statecomplete`: base state and every flag, lower case.
    StateComplete,
    /// Node comment, extra data and reservation (`-O comment|extra|
    /// reservation`): Drover's nodes have none, shown as Slurm shows unset.
    Comment,
    Extra,
    ResvName,
    Invalid,
}

use NodeField as F;

pub fn by_letter(c: char) -> Option<NodeField> {
    Some(match c {
        'a' => F::Avail,
        'A' => F::NodesAI,
        'b' => F::FeaturesAct,
        'B' => F::MaxCpusPerNode,
        'c' => F::Cpus,
        'C' => F::CpusAIOT,
        'd' => F::Disk,
        'D' => F::Nodes,
        'e' => F::FreeMem,
        'E' => F::Reason,
        'f' => F::Features,
        'F' => F::NodesAIOT,
        'g' => F::Groups,
        'G' => F::Gres,
        'h' => F::OverSubscribe,
        'H' => F::Timestamp,
        'I' => F::PrioJobFactor,
        'l' => F::TimeLimit,
        'L' => F::DefaultTime,
        'm' => F::Memory,
        'M' => F::PreemptMode,
        'n' => F::Hostnames,
        'N' => F::NodeList,
        'o' => F::NodeAddr,
        'O' => F::CpuLoad,
        'p' => F::PrioTier,
        'P' => F::Partition,
        'r' => F::Root,
        'R' => F::PartitionName,
        's' => F::JobSize,
        'S' => F::AllocNodes,
        't' => F::StateCompact,
        'T' => F::StateLong,
        'u' => F::User,
        'U' => F::UserLong,
        'v' => F::Version,
        'V' => F::Cluster,
        'w' => F::Weight,
        'X' => F::Sockets,
        'Y' => F::Cores,
        'Z' => F::Threads,
        'z' => F::Sct,
        _ => return None,
    })
}

pub fn by_name(n: &str) -> Option<NodeField> {
    Some(match n {
        "allocmem" => F::AllocMem,
        "allocnodes" => F::AllocNodes,
        "available" => F::Avail,
        "cluster" => F::Cluster,
        "cpus" => F::Cpus,
        "cpusload" => F::CpuLoad,
        "freemem" => F::FreeMem,
        "cpusstate" => F::CpusAIOT,
        "cores" => F::Cores,
        "defaulttime" => F::DefaultTime,
        "disk" => F::Disk,
        "features" => F::Features,
        "features_act" => F::FeaturesAct,
        "groups" => F::Groups,
        "gres" => F::Gres,
        "gresused" => F::GresUsed,
        "maxcpuspernode" => F::MaxCpusPerNode,
        "memory" => F::Memory,
        "nodeai" => F::NodesAI,
        "nodeaiot" => F::NodesAIOT,
        "nodehost" => F::Hostnames,
        "nodelist" => F::NodeList,
        "nodeaddr" => F::NodeAddr,
        "nodes" => F::Nodes,
        "oversubscribe" => F::OverSubscribe,
        "partition" => F::Partition,
        "partitionname" => F::PartitionName,
        "port" => F::Port,
        "preemptmode" => F::PreemptMode,
        "priorityjobfactor" => F::PrioJobFactor,
        "prioritytier" => F::PrioTier,
        "reason" => F::Reason,
        "root" => F::Root,
        "size" => F::JobSize,
        "statecompact" => F::StateCompact,
        "statecomplete" => F::StateComplete,
        "share" => F::OverSubscribe,
        "comment" => F::Comment,
        "extra" => F::Extra,
        "reservation" => F::ResvName,
        "statelong" => F::StateLong,
        "sockets" => F::Sockets,
        "socketcorethread" => F::Sct,
        "time" => F::TimeLimit,
        "timestamp" => F::Timestamp,
        "threads" => F::Threads,
        "user" => F::User,
        "userlong" => F::UserLong,
        "version" => F::Version,
        "weight" => F::Weight,
        _ => return None,
    })
}

pub fn header(f: NodeField) -> &'static str {
    match f {
        F::Avail => "AVAIL",
        F::NodesAI => "NODES(A/I)",
        F::FeaturesAct => "ACTIVE_FEATURES",
        F::MaxCpusPerNode => "MAX_CPUS_PER_NODE",
        F::Cpus => "CPUS",
        F::CpusAIOT => "CPUS(A/I/O/T)",
        F::Disk => "TMP_DISK",
        F::Nodes => "NODES",
        F::FreeMem => "FREE_MEM",
        F::Reason => "REASON",
        F::Features => "AVAIL_FEATURES",
        F::NodesAIOT => "NODES(A/I/O/T)",
        F::Groups => "GROUPS",
        F::Gres => "GRES",
        F::GresUsed => "GRES_USED",
        F::OverSubscribe => "OVERSUBSCRIBE",
        F::Timestamp => "TIMESTAMP",
        F::PrioJobFactor => "PRIO_JOB_FACTOR",
        F::TimeLimit => "TIMELIMIT",
        F::DefaultTime => "DEFAULTTIME",
        F::Memory => "MEMORY",
        F::AllocMem => "ALLOCMEM",
        F::PreemptMode => "PREEMPT_MODE",
        F::Hostnames => "HOSTNAMES",
        F::NodeList => "NODELIST",
        F::NodeAddr => "NODE_ADDR",
        F::CpuLoad => "CPU_LOAD",
        F::PrioTier => "PRIO_TIER",
        F::Partition | F::PartitionName => "PARTITION",
        F::Root => "ROOT",
        F::JobSize => "JOB_SIZE",
        F::AllocNodes => "ALLOCNODES",
        F::StateCompact | F::StateLong => "STATE",
        F::User | F::UserLong => "USER",
        F::Version => "VERSION",
        F::Cluster => "CLUSTER",
        F::Weight => "WEIGHT",
        F::Sockets => "SOCKETS",
        F::Cores => "CORES",
        F::Threads => "THREADS",
        F::Sct => "S:C:T",
        F::Port => "PORT",
        F::StateComplete => "STATECOMPLETE",
        F::Comment => "COMMENT",
        F::Extra => "EXTRA",
        F::ResvName => "RESERVATION",
        F::Invalid => "",
    }
}

pub fn parse_format(fmt: &str) -> (Format<NodeField>, Vec<char>) {
    if fmt.eq_ignore_ascii_case("%all") {
        return fmtspec::parse_percent(&all_format(), by_letter, F::Invalid);
    }
    fmtspec::parse_percent(fmt, by_letter, F::Invalid)
}

/// `-o %all` (and `-O all`): every field letter, `|`-separated, as Slurm
/// builds it (`%a|%b|...|%z|%A |...|%Z `; letters without a field are
/// left out with their separator, as Slurm's parser drops them).
pub fn all_format() -> String {
    let letters: Vec<char> = ('a'..='z')
        .chain('A'..='Z')
        .filter(|c| by_letter(*c).is_some())
        .collect();
    let mut out = String::new();
    for (i, c) in letters.iter().enumerate() {
        let sep = match (c.is_ascii_uppercase(), i + 1 == letters.len()) {
            (false, _) => "|",
            (true, false) => " |",
            (true, true) => " ",
        };
        out.push('%');
        out.push(*c);
        out.push_str(sep);
    }
    out
}

pub fn parse_long_format(fmt: &str) -> (Format<NodeField>, Vec<String>) {
    if fmt.split(',').any(|t| t.trim().eq_ignore_ascii_case("all")) {
        let (f, _) = parse_format(&all_format());
        return (f, Vec::new());
    }
    fmtspec::parse_long(fmt, by_name, F::Invalid)
}

pub const DEFAULT_FORMAT: &str = "%9P %.5a %.10l %.6D %.6t %N";
pub const LONG_FORMAT: &str = "%9P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
pub const NODE_FORMAT: &str = "%N %.6D %.9P %6t";
pub const NODE_LONG_FORMAT: &str = "%N %.6D %.9P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E";
pub const SUMMARIZE_FORMAT: &str = "%9P %.5a %.10l %.16F  %N";
pub const REASON_FORMAT: &str = "%20E %9u %19H %N";
pub const REASON_LONG_FORMAT: &str = "%20E %12U %19H %6t %N";

/// Does the field depend on the partition (so lines are per partition)?
pub fn partition_field(f: NodeField) -> bool {
    matches!(
        f,
        F::Avail
            | F::Groups
            | F::OverSubscribe
            | F::PrioJobFactor
            | F::TimeLimit
            | F::DefaultTime
            | F::PreemptMode
            | F::PrioTier
            | F::Partition
            | F::PartitionName
            | F::Root
            | F::JobSize
            | F::AllocNodes
            | F::MaxCpusPerNode
    )
}
