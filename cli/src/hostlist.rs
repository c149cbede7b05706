//! Hostlist expressions (`node[1-3,5],gpu-[01-02]`) both ways, as Slurm
//! prints them. Pure.

/// Expanding more hosts than this is refused (a typo like `n[1-999999999]`).
pub const MAX_HOSTS: usize = 1 << 20;

/// Split at commas that are not inside brackets.
pub fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
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

/// Expand a hostlist expression into host names, in order.
pub fn expand(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for piece in split_top_level(s.trim()) {
        let piece = piece.trim();
        if piece.is_empty() {
            continue;
        }
        expand_one(piece, &mut out)?;
        if out.len() > MAX_HOSTS {
            return Err(format!("hostlist '{s}' is too large"));
        }
    }
    Ok(out)
}

fn expand_one(piece: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = piece.find('[') else {
        if piece.contains(']') {
            return Err(format!("invalid hostlist '{piece}'"));
        }
        out.push(piece.to_string());
        return Ok(());
    };
    let close = piece[open..]
        .find(']')
        .map(|c| c + open)
        .ok_or_else(|| format!("invalid hostlist '{piece}'"))?;
    let prefix = &piece[..open];
    let inner = &piece[open + 1..close];
    let rest = &piece[close + 1..];
    let mut tails = Vec::new();
    if rest.is_empty() {
        tails.push(String::new());
    } else {
        expand_one(rest, &mut tails)?;
    }
    if inner.is_empty() {
        return Err(format!("invalid hostlist '{piece}'"));
    }
    for range in inner.split(',') {
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (range.trim(), range.trim()),
        };
        let bad = || format!("invalid hostlist '{piece}'");
        if lo.is_empty() || hi.is_empty() || !lo.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        if !hi.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let a: u64 = lo.parse().map_err(|_| bad())?;
        let b: u64 = hi.parse().map_err(|_| bad())?;
        if b < a {
            return Err(bad());
        }
        if (b - a) as usize > MAX_HOSTS
            || out.len() + ((b - a) as usize + 1) * tails.len() > MAX_HOSTS
        {
            return Err(format!("hostlist '{piece}' is too large"));
        }
        let width = if lo.len() > 1 && lo.starts_with('0') {
            lo.len()
        } else {
            0
        };
        for n in a..=b {
            for t in &tails {
                out.push(format!("{prefix}{n:0width$}{t}"));
            }
        }
    }
    Ok(())
}

/// A host name split into prefix, numeric suffix and its zero-padded width.
fn split_host(h: &str) -> (&str, Option<(u64, usize)>) {
    let digits = h.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 18 {
        return (h, None);
    }
    let (p, d) = h.split_at(h.len() - digits);
    let n: u64 = d.parse().unwrap_or(0);
    let width = if d.len() > 1 && d.starts_with('0') {
        d.len()
    } else {
        0
    };
    (p, Some((n, width)))
}

/// Compress host names into Slurm's ranged form, keeping first-seen order of
/// prefixes and merging consecutive numbers (`n1,n2,n3,n5` -> `n[1-3,5]`).
/// Duplicates are dropped; numbers within a prefix are sorted.
pub fn compress<S: AsRef<str>>(hosts: &[S]) -> String {
    // (prefix, width) -> numbers, in first-seen order.
    let mut groups: Vec<(String, usize, Vec<u64>)> = Vec::new();
    let mut plain: Vec<(usize, String)> = Vec::new();
    let mut order: Vec<(bool, usize)> = Vec::new();
    for h in hosts {
        let h = h.as_ref();
        if h.is_empty() {
            continue;
        }
        match split_host(h) {
            (p, Some((n, w))) => {
                if let Some(gi) = groups.iter().position(|g| g.0 == p && g.1 == w) {
                    groups[gi].2.push(n);
                } else {
                    groups.push((p.to_string(), w, vec![n]));
                    order.push((true, groups.len() - 1));
                }
            }
            (p, None) => {
                if !plain.iter().any(|(_, x)| x == p) {
                    plain.push((plain.len(), p.to_string()));
                    order.push((false, plain.len() - 1));
                }
            }
        }
    }
    let mut parts: Vec<String> = Vec::with_capacity(order.len());
    for (is_group, idx) in order {
        if !is_group {
            parts.push(plain[idx].1.clone());
            continue;
        }
        let (prefix, width, nums) = &mut groups[idx];
        nums.sort_unstable();
        nums.dedup();
        if nums.len() == 1 {
            parts.push(format!("{prefix}{:0w$}", nums[0], w = *width));
            continue;
        }
        let mut s = String::with_capacity(prefix.len() + 16);
        s.push_str(prefix);
        s.push('[');
        let mut k = 0;
        let mut first = true;
        while k < nums.len() {
            let start = nums[k];
            let mut end = start;
            while k + 1 < nums.len() && nums[k + 1] == end + 1 {
                k += 1;
                end = nums[k];
            }
            if !first {
                s.push(',');
            }
            first = false;
            if start == end {
                s.push_str(&format!("{start:0w$}", w = *width));
            } else {
                s.push_str(&format!("{start:0w$}-{end:0w$}", w = *width));
            }
            k += 1;
        }
        s.push(']');
        parts.push(s);
    }
    parts.join(",")
}

/// Order host names the way Slurm's hostlist sort does: by prefix, then number.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (pa, na) = split_host(a);
    let (pb, nb) = split_host(b);
    pa.cmp(pb)
        .then_with(|| na.map(|x| x.0).cmp(&nb.map(|x| x.0)))
        .then_with(|| a.cmp(b))
}

/// Compress after sorting naturally (Slurm's `hostlist_sort` + ranged string).
pub fn compress_sorted<S: AsRef<str>>(hosts: &[S]) -> String {
    let mut v: Vec<&str> = hosts.iter().map(|h| h.as_ref()).collect();
    v.sort_by(|a, b| natural_cmp(a, b));
    compress(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands() {
        assert_eq!(
            expand("node[1-3]").unwrap(),
            vec!["node1", "node2", "node3"]
        );
        assert_eq!(
            expand("lab-gpu-[01-02,07],x").unwrap(),
            vec!["lab-gpu-01", "lab-gpu-02", "lab-gpu-07", "x"]
        );
        assert_eq!(
            expand("r[1-2]n[1-2]").unwrap(),
            vec!["r1n1", "r1n2", "r2n1", "r2n2"]
        );
        assert_eq!(expand("a,b, c").unwrap(), vec!["a", "b", "c"]);
        assert!(expand("").unwrap().is_empty());
        assert!(expand("n[3-1]").is_err());
        assert!(expand("n[1-").is_err());
        assert!(expand("n[a-b]").is_err());
        assert!(expand("n[]").is_err());
        assert!(expand("n[1-99999999999]").is_err());
    }

    #[test]
    fn compresses() {
        assert_eq!(
            compress(&["node1", "node2", "node3", "node5"]),
            "node[1-3,5]"
        );
        assert_eq!(compress(&["node1"]), "node1");
        assert_eq!(compress(&["n01", "n02", "x", "n03"]), "n[01-03],x");
        assert_eq!(compress(&["n9", "n10"]), "n[9-10]");
        assert_eq!(compress(&["a", "a", "b"]), "a,b");
        assert_eq!(compress::<&str>(&[]), "");
        assert_eq!(compress_sorted(&["n10", "n2", "n1"]), "n[1-2,10]");
        let all = expand("pfx[1-3,5],host2").unwrap();
        assert_eq!(compress(&all), "pfx[1-3,5],host2");
    }
}
