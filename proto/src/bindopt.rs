//! `--cpu-bind` and `--gpu-bind` as Slurm reads them (pure): srun checks
//! them with these words, the node agent reads the same text again to bind
//! each task.

/// What auto-generated masks bind to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuUnit {
    Sockets,
    Cores,
    Threads,
    Ldoms,
}

/// How tasks are bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuMode {
    None,
    Rank,
    /// One CPU per local task (reused from the start when there are more tasks).
    Map(Vec<u32>),
    /// One CPU set per local task.
    Mask(Vec<Vec<u32>>),
}

/// A parsed `--cpu-bind`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuBind {
    pub verbose: bool,
    pub unit: Option<CpuUnit>,
    pub mode: Option<CpuMode>,
}

/// A parsed `--gpu-bind`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuMode {
    /// GPUs closest to the task's CPUs (without topology: an even split).
    Closest,
    /// Each task one GPU; the first N tasks the first GPU, and so on.
    Single(u32),
    /// N GPUs per task (`--gpus-per-task`'s implicit binding).
    PerTask(u32),
    /// One GPU id per local task.
    Map(Vec<u32>),
    /// One GPU set per local task.
    Mask(Vec<Vec<u32>>),
    None,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuBind {
    pub verbose: bool,
    pub mode: Option<GpuMode>,
}

/// Slurm's `_isvalue`: a list element (digits, or hex digits up to `,`/end).
fn is_value(s: &str) -> bool {
    let b = s.as_bytes();
    if b.first().is_some_and(u8::is_ascii_digit) {
        return true;
    }
    let rest = s.trim_start_matches(|c: char| c.is_ascii_hexdigit());
    rest.is_empty() || rest.starts_with(',')
}

/// Split at the commas that separate keywords (not those inside a list).
fn tokens(arg: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for (i, c) in arg.char_indices() {
        if c == ',' && !is_value(&arg[i + 1..]) {
            out.push(String::new());
        } else if let Some(last) = out.last_mut() {
            last.push(c);
        }
    }
    out
}

/// `V*N` repeats V N times.
fn expand_mult(list: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for item in list.split(',') {
        match item.split_once('*') {
            Some((v, n)) => {
                let n: usize = n.trim().parse().ok().filter(|n| *n > 0 && *n <= 4096)?;
                out.extend(std::iter::repeat_n(v.to_string(), n));
            }
            None => out.push(item.to_string()),
        }
    }
    Some(out)
}

/// A CPU or GPU id, decimal or `0x` hex.
fn id(v: &str) -> Option<u32> {
    let v = v.trim();
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// The largest id a mask may name (1024 CPUs, as `CPU_SETSIZE`).
const MAX_ID: u32 = 1024;

/// A hex mask (`0x` optional) to the ids it names.
pub fn mask_ids(v: &str) -> Option<Vec<u32>> {
    let v = v.trim();
    let h = v
        .strip_prefix("0x")
        .or_else(|| v.strip_prefix("0X"))
        .unwrap_or(v);
    if h.is_empty() || h.len() as u32 * 4 > MAX_ID {
        return None;
    }
    let mut ids = Vec::new();
    for (pos, c) in h.chars().rev().enumerate() {
        let d = c.to_digit(16)?;
        for b in 0..4 {
            if d & (1 << b) != 0 {
                ids.push(pos as u32 * 4 + b);
            }
        }
    }
    Some(ids)
}

/// A set of ids as Slurm prints a mask: upper-case hex, no leading zeros.
pub fn mask_text(ids: &[u32]) -> String {
    let top = ids.iter().copied().max().unwrap_or(0);
    let digits = top / 4 + 1;
    let mut s = String::new();
    for d in (0..digits).rev() {
        let v: u32 = (0..4)
            .filter(|b| ids.contains(&(d * 4 + b)))
            .map(|b| 1 << b)
            .sum();
        s.push(char::from_digit(v, 16).unwrap_or('0').to_ascii_uppercase());
    }
    s
}

/// The list after `map_xxx:` / `mask_xxx:` (`:` or `=`).
fn list_of(tok: &str, opt: &str, what: &str) -> Result<Vec<String>, String> {
    let list = tok.split_once([':', '=']).map(|(_, l)| l).unwrap_or("");
    if list.is_empty() {
        return Err(format!("missing list for \"--{opt}={what}:<list>\""));
    }
    expand_mult(list).ok_or_else(|| format!("unrecognized --{opt} argument \"{tok}\""))
}

fn starts(tok: &str, a: &str, b: &str) -> bool {
    let l = tok.to_ascii_lowercase();
    l.starts_with(a) || l.starts_with(b)
}

/// Slurm's final words after a bad `--cpu-bind`.
pub const CPU_BIND_FATAL: &str = "Failed to parse --cpu-bind= values.";

/// Parse `--cpu-bind` (`verbose,cores`, `map_cpu:0,1`, `mask_cpu:0x3,0xC`,
/// `none`, `rank`, `sockets`, `threads`, `ldoms`, `quiet`). The error is
/// Slurm's first line (`unrecognized --cpu-bind argument "x"`).
pub fn parse_cpu_bind(arg: &str) -> Result<CpuBind, String> {
    let mut b = CpuBind::default();
    if arg.is_empty() {
        return Ok(b);
    }
    for tok in tokens(arg) {
        let bad = || format!("unrecognized --cpu-bind argument \"{tok}\"");
        let l = tok.to_ascii_lowercase();
        match l.as_str() {
            "q" | "quiet" => b.verbose = false,
            "v" | "verbose" => b.verbose = true,
            "no" | "none" => b.mode = Some(CpuMode::None),
            "rank" => b.mode = Some(CpuMode::Rank),
            "socket" | "sockets" => b.unit = Some(CpuUnit::Sockets),
            "core" | "cores" => b.unit = Some(CpuUnit::Cores),
            "thread" | "threads" => b.unit = Some(CpuUnit::Threads),
            "ldom" | "ldoms" => b.unit = Some(CpuUnit::Ldoms),
            _ if starts(&tok, "map_cpu", "mapcpu") => {
                let ids = list_of(&tok, "cpu-bind", "map_cpu")?
                    .iter()
                    .map(|v| id(v).filter(|c| *c < MAX_ID))
                    .collect::<Option<Vec<u32>>>()
                    .ok_or_else(bad)?;
                b.mode = Some(CpuMode::Map(ids));
            }
            _ if starts(&tok, "mask_cpu", "maskcpu") => {
                let sets = list_of(&tok, "cpu-bind", "mask_cpu")?
                    .iter()
                    .map(|v| mask_ids(v))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(bad)?;
                b.mode = Some(CpuMode::Mask(sets));
            }
            _ => return Err(bad()),
        }
    }
    Ok(b)
}

/// Parse `--gpu-bind` (`[verbose,]closest|single:N|map_gpu:L|mask_gpu:L|
/// per_task:N|none`). The error is Slurm's line.
pub fn parse_gpu_bind(arg: &str) -> Result<GpuBind, String> {
    let mut b = GpuBind::default();
    let bad = || format!("Invalid --gpu-bind argument: {arg}");
    let mut rest = arg;
    if let Some(r) = arg.strip_prefix("verbose,") {
        b.verbose = true;
        rest = r;
    } else if arg == "verbose" {
        b.verbose = true;
        return Ok(b);
    }
    let count = |v: &str| v.trim().parse::<u32>().ok().filter(|n| *n > 0);
    b.mode = Some(match rest {
        "closest" => GpuMode::Closest,
        "none" => GpuMode::None,
        _ if rest.starts_with("single:") => {
            GpuMode::Single(count(&rest["single:".len()..]).ok_or_else(bad)?)
        }
        _ if rest.starts_with("per_task:") => {
            GpuMode::PerTask(count(&rest["per_task:".len()..]).ok_or_else(bad)?)
        }
        _ if starts(rest, "map_gpu", "mapgpu") => GpuMode::Map(
            list_of(rest, "gpu-bind", "map_gpu")?
                .iter()
                .map(|v| id(v).filter(|g| *g < MAX_ID))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(bad)?,
        ),
        _ if starts(rest, "mask_gpu", "maskgpu") => GpuMode::Mask(
            list_of(rest, "gpu-bind", "mask_gpu")?
                .iter()
                .map(|v| mask_ids(v))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?,
        ),
        _ => return Err(bad()),
    });
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_bind_forms() {
        let b = parse_cpu_bind("verbose,cores").unwrap();
        assert!(b.verbose);
        assert_eq!(b.unit, Some(CpuUnit::Cores));
        assert_eq!(b.mode, None);
        let b = parse_cpu_bind("map_cpu:0,2,0x3").unwrap();
        assert_eq!(b.mode, Some(CpuMode::Map(vec![0, 2, 3])));
        let b = parse_cpu_bind("v,mask_cpu:0x3,C").unwrap();
        assert!(b.verbose);
        assert_eq!(b.mode, Some(CpuMode::Mask(vec![vec![0, 1], vec![2, 3]])));
        let b = parse_cpu_bind("map_cpu=1*2,0").unwrap();
        assert_eq!(b.mode, Some(CpuMode::Map(vec![1, 1, 0])));
        assert_eq!(parse_cpu_bind("none").unwrap().mode, Some(CpuMode::None));
        assert_eq!(parse_cpu_bind("rank,q").unwrap().mode, Some(CpuMode::Rank));
        assert_eq!(
            parse_cpu_bind("Sockets").unwrap().unit,
            Some(CpuUnit::Sockets)
        );
    }

    #[test]
    fn cpu_bind_errors_in_slurm_words() {
        assert_eq!(
            parse_cpu_bind("bogus"),
            Err("unrecognized --cpu-bind argument \"bogus\"".into())
        );
        assert_eq!(
            parse_cpu_bind("map_cpu:"),
            Err("missing list for \"--cpu-bind=map_cpu:<list>\"".into())
        );
        assert!(parse_cpu_bind("map_cpu:zz").is_err());
        assert!(parse_cpu_bind("mask_cpu:0xG").is_err());
        assert!(parse_cpu_bind("cores,").is_err());
        assert!(parse_cpu_bind("map_cpu:1*0").is_err());
    }

    #[test]
    fn gpu_bind_forms() {
        assert_eq!(
            parse_gpu_bind("closest").unwrap().mode,
            Some(GpuMode::Closest)
        );
        let b = parse_gpu_bind("verbose,map_gpu:1,0").unwrap();
        assert!(b.verbose);
        assert_eq!(b.mode, Some(GpuMode::Map(vec![1, 0])));
        assert_eq!(
            parse_gpu_bind("mask_gpu:0x1,0x6").unwrap().mode,
            Some(GpuMode::Mask(vec![vec![0], vec![1, 2]]))
        );
        assert_eq!(
            parse_gpu_bind("single:2").unwrap().mode,
            Some(GpuMode::Single(2))
        );
        assert_eq!(parse_gpu_bind("none").unwrap().mode, Some(GpuMode::None));
        assert_eq!(
            parse_gpu_bind("per_task:2").unwrap().mode,
            Some(GpuMode::PerTask(2))
        );
        for bad in ["single:0", "single:x", "nearest", "map_gpu:a", ""] {
            assert!(parse_gpu_bind(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_gpu_bind("far"),
            Err("Invalid --gpu-bind argument: far".into())
        );
    }

    #[test]
    fn masks_round_trip() {
        assert_eq!(mask_ids("0x5"), Some(vec![0, 2]));
        assert_eq!(mask_ids("10"), Some(vec![4]));
        assert_eq!(mask_text(&[0, 2]), "5");
        assert_eq!(mask_text(&[4, 7]), "90");
        assert_eq!(mask_text(&[]), "0");
        assert_eq!(mask_text(&[63, 60]), "9000000000000000");
    }
}
