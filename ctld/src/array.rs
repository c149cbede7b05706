//! Job array index expressions: `0-15`, `1,3,5`, `0-15:4`, with `%N` throttle.

/// Parsed `--array` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    pub tasks: Vec<u32>,
    pub max_running: u32,
}

pub use drover_conf::slurmconf::MAX_ARRAY_SIZE_LIMIT;

/// Parse and validate against `MaxArraySize` (task ids must be below it).
pub fn parse(s: &str, max_array_size: u32) -> Result<ArraySpec, String> {
    let bad = || "Invalid job array specification".to_string();
    let (list, throttle) = match s.split_once('%') {
        Some((l, t)) => (l, t.trim().parse::<u32>().map_err(|_| bad())?),
        None => (s, 0),
    };
    let mut tasks = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(bad());
        }
        let (range, step) = match part.split_once(':') {
            Some((r, st)) => (r, st.parse::<u32>().map_err(|_| bad())?),
            None => (part, 1),
        };
        if step == 0 {
            return Err(bad());
        }
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (
                a.parse::<u32>().map_err(|_| bad())?,
                b.parse::<u32>().map_err(|_| bad())?,
            ),
            None => {
                let v = range.parse::<u32>().map_err(|_| bad())?;
                (v, v)
            }
        };
        if b < a || b >= max_array_size {
            return Err(bad());
        }
        let mut i = a;
        while i <= b {
            tasks.push(i);
            if tasks.len() > max_array_size as usize {
                return Err(bad());
            }
            i = match i.checked_add(step) {
                Some(n) => n,
                None => break,
            };
        }
    }
    tasks.sort_unstable();
    tasks.dedup();
    if tasks.is_empty() {
        return Err(bad());
    }
    Ok(ArraySpec {
        tasks,
        max_running: throttle,
    })
}

/// `[0,1,2,5,7,8]` -> `0-2,5,7-8`.
pub fn ranges(tasks: &[u32]) -> String {
    drover_conf::hostlist::ranges(tasks)
}

/// Inverse of [`ranges`] (lenient: bad pieces are skipped). Task ids are
/// below Slurm's largest `MaxArraySize`, which also bounds the list: a
/// selector `12_0-4294967294` from any user once made a 16 GiB vector.
pub fn parse_ranges(s: &str) -> Vec<u32> {
    parse(s, MAX_ARRAY_SIZE_LIMIT)
        .map(|a| a.tasks)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(parse("0-3", 1001).unwrap().tasks, vec![0, 1, 2, 3]);
        assert_eq!(parse("1,3,5", 1001).unwrap().tasks, vec![1, 3, 5]);
        assert_eq!(parse("0-15:4", 1001).unwrap().tasks, vec![0, 4, 8, 12]);
        let t = parse("0-9%2", 1001).unwrap();
        assert_eq!((t.tasks.len(), t.max_running), (10, 2));
        assert!(parse("0-1001", 1001).is_err());
        assert!(parse("5-1", 1001).is_err());
        assert!(parse("a", 1001).is_err());
        assert!(parse("", 1001).is_err());
    }

    #[test]
    fn ranges_are_bounded_by_the_largest_array() {
        // Found by the array_expr fuzz target: these used to allocate
        // gigabytes (an out-of-memory kill of the controller).
        assert_eq!(parse_ranges("0-4294967294"), Vec::<u32>::new());
        assert_eq!(parse_ranges("0-999999999"), Vec::<u32>::new());
        assert_eq!(parse_ranges("4000000").len(), 1);
        assert_eq!(parse_ranges("0-4000000").len(), 4_000_001);
        assert!(parse("1-3:0", 1001).is_err());
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(parse_ranges("0-2,5,7-8"), vec![0, 1, 2, 5, 7, 8]);
    }
}
