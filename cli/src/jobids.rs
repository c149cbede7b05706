//! Job ids and job array texts: `12`, `12_3`, `12_[1-3,7]`, array specs
//! (`0-15%4`, `1,3,5`, `0-15:4`) and index sets (`4-9,12`). Pure.

/// Largest array index accepted client side (MaxArraySize is checked by the controller).
pub const MAX_ARRAY_INDEX: u64 = 4_000_000;

/// A parsed `--array` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// (first, last, step) ranges.
    pub ranges: Vec<(u32, u32, u32)>,
    /// `%N` throttle, 0 = none.
    pub max_running: u32,
}

impl ArraySpec {
    /// Every index, in the order given.
    pub fn indices(&self) -> Vec<u32> {
        let mut v = Vec::new();
        for &(a, b, s) in &self.ranges {
            let mut i = a;
            while i <= b {
                v.push(i);
                match i.checked_add(s.max(1)) {
                    Some(n) => i = n,
                    None => break,
                }
            }
        }
        v
    }
}

fn small_num(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = s.parse().ok()?;
    if n > MAX_ARRAY_INDEX {
        return None;
    }
    Some(n as u32)
}

/// Validate and parse an `--array` specification.
pub fn parse_array_spec(s: &str) -> Option<ArraySpec> {
    let s = s.trim();
    let (body, throttle) = match s.split_once('%') {
        Some((b, t)) => (b, Some(t)),
        None => (s, None),
    };
    let max_running = match throttle {
        Some(t) => small_num(t)?,
        None => 0,
    };
    if body.is_empty() {
        return None;
    }
    let mut ranges = Vec::new();
    for tok in body.split(',') {
        let (range, step) = match tok.split_once(':') {
            Some((r, st)) => (r, small_num(st)?),
            None => (tok, 1),
        };
        if step == 0 {
            return None;
        }
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (small_num(a)?, small_num(b)?),
            None => {
                let a = small_num(range)?;
                (a, a)
            }
        };
        if b < a {
            return None;
        }
        ranges.push((a, b, step));
    }
    Some(ArraySpec {
        ranges,
        max_running,
    })
}

/// Expand an index set (`4-9,12`, optionally `%N`-throttled, `:S` steps) to
/// indices; invalid text gives an empty list.
pub fn expand_indices(s: &str) -> Vec<u32> {
    parse_array_spec(s).map(|a| a.indices()).unwrap_or_default()
}

/// Compress sorted indices into Slurm's bitmap text (`1-3,7`).
pub fn compress_indices(idx: &[u32]) -> String {
    drover_conf::hostlist::ranges(idx)
}

/// A job id as typed on a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobIdArg {
    /// `12`: the job, or the whole array 12.
    Job(u32),
    /// `12_3`
    Task(u32, u32),
    /// `12_[1-3]`
    Tasks(u32, Vec<u32>),
}

impl JobIdArg {
    pub fn job(&self) -> u32 {
        match self {
            JobIdArg::Job(j) | JobIdArg::Task(j, _) | JobIdArg::Tasks(j, _) => *j,
        }
    }
}

fn job_num(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 10 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = s.parse().ok()?;
    if n == 0 || n >= u64::from(u32::MAX) {
        return None;
    }
    Some(n as u32)
}

/// Parse `12`, `12_3`, `12_[1-3,5]` (also `12_*`, meaning the whole array).
/// A trailing step suffix (`12.batch`) is not a job id here.
pub fn parse_job_id(s: &str) -> Option<JobIdArg> {
    let s = s.trim();
    match s.split_once('_') {
        None => job_num(s).map(JobIdArg::Job),
        Some((j, t)) => {
            let j = job_num(j)?;
            if t == "*" {
                return Some(JobIdArg::Job(j));
            }
            if let Some(inner) = t.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
                let inner = inner.split('%').next().unwrap_or("");
                let spec = parse_array_spec(inner)?;
                return Some(JobIdArg::Tasks(j, spec.indices()));
            }
            small_num(t).map(|t| JobIdArg::Task(j, t))
        }
    }
}

/// Split a job list argument: commas separate ids except inside brackets
/// (`12_[1,3],14`), whitespace too (`"12 13"` quoted as one argument).
pub fn split_job_list(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in s.split_whitespace() {
        out.extend(
            drover_conf::hostlist::split_top_level(w)
                .into_iter()
                .filter(|x| !x.is_empty())
                .map(str::to_string),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_specs() {
        let a = parse_array_spec("0-15%4").unwrap();
        assert_eq!(a.ranges, vec![(0, 15, 1)]);
        assert_eq!(a.max_running, 4);
        assert_eq!(a.indices().len(), 16);
        assert_eq!(parse_array_spec("1,3,5").unwrap().indices(), vec![1, 3, 5]);
        assert_eq!(
            parse_array_spec("0-15:4").unwrap().indices(),
            vec![0, 4, 8, 12]
        );
        assert_eq!(parse_array_spec("7").unwrap().indices(), vec![7]);
        for bad in [
            "",
            "a",
            "5-1",
            "1-",
            "-3",
            "1,,2",
            "0-10:0",
            "1%",
            "%2",
            "1-2-3",
            "99999999999",
        ] {
            assert!(parse_array_spec(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn index_sets() {
        assert_eq!(expand_indices("4-9,12"), vec![4, 5, 6, 7, 8, 9, 12]);
        assert_eq!(expand_indices("4-6%2"), vec![4, 5, 6]);
        assert_eq!(compress_indices(&[1, 2, 3, 7, 9, 10]), "1-3,7,9-10");
        assert_eq!(compress_indices(&[]), "");
    }

    #[test]
    fn job_ids() {
        assert_eq!(parse_job_id("12"), Some(JobIdArg::Job(12)));
        assert_eq!(parse_job_id("12_3"), Some(JobIdArg::Task(12, 3)));
        assert_eq!(
            parse_job_id("12_[1-3]"),
            Some(JobIdArg::Tasks(12, vec![1, 2, 3]))
        );
        assert_eq!(parse_job_id("12_*"), Some(JobIdArg::Job(12)));
        for bad in [
            "", "0", "abc", "12_", "12_x", "12_[", "12_[3-1]", "-1", "12.0",
        ] {
            assert!(parse_job_id(bad).is_none(), "{bad}");
        }
        assert_eq!(
            split_job_list("12_[1,3],14 15"),
            vec!["12_[1,3]", "14", "15"]
        );
    }
}
