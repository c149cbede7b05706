//! squeue's ordering (`--sort`, default `P,t,-p`). Pure.

use std::cmp::Ordering;

use drover_proto::JobState;

use super::format::{self, Row};

pub fn start_key(r: &Row<'_>, now: i64) -> i64 {
    let j = r.job;
    if j.start_time == 0 {
        now + 100
    } else if format::state_of(r) == JobState::Pending && j.start_time < now {
        now
    } else {
        j.start_time
    }
}

pub fn id_key(r: &Row<'_>) -> (u32, u32) {
    match format::array_kind(r) {
        format::ArrayKind::NotArray => (r.job.job_id, 0),
        format::ArrayKind::Task(t) => (r.job.array_job_id, t),
        format::ArrayKind::Meta(_) => (r.job.array_job_id, u32::MAX),
    }
}

/// A precomputed sort key value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum SortVal<'a> {
    Int(i64),
    Str(&'a str),
    Pair(u32, u32),
}

fn key_of<'a>(r: &Row<'a>, key: char, now: i64) -> SortVal<'a> {
    let j = r.job;
    let state = format::state_of(r);
    match key {
        'B' => SortVal::Str(&j.batch_host),
        'C' => SortVal::Int(i64::from(j.num_cpus)),
        'D' => SortVal::Int(i64::from(j.num_nodes)),
        'e' => SortVal::Int(j.end_time),
        'g' => SortVal::Str(&j.group_name),
        'G' => SortVal::Int(i64::from(j.group_id)),
        'i' | 'A' => {
            let (a, b) = id_key(r);
            SortVal::Pair(a, b)
        }
        'j' => SortVal::Str(&j.name),
        'l' => SortVal::Int(i64::from(j.time_limit)),
        'L' => SortVal::Int(if j.time_limit == drover_proto::INFINITE {
            i64::MAX
        } else {
            i64::from(j.time_limit) * 60 - format::time_used(j, state, now)
        }),
        'm' => SortVal::Int(j.min_memory_mb as i64),
        'M' => SortVal::Int(format::time_used(j, state, now)),
        'p' | 'Q' => SortVal::Int(i64::from(j.priority)),
        'P' => SortVal::Str(&j.partition),
        'q' => SortVal::Str(&j.qos),
        'S' => SortVal::Int(start_key(r, now)),
        't' => SortVal::Str(state.short_name()),
        'T' => SortVal::Str(state.long_name()),
        'u' => SortVal::Str(&j.user_name),
        'U' => SortVal::Int(i64::from(j.user_id)),
        'v' => SortVal::Str(&j.reservation),
        'V' => SortVal::Int(j.submit_time),
        'a' => SortVal::Str(&j.account),
        _ => SortVal::Int(0),
    }
}

/// Sort as squeue does: the `--sort` keys in order (`-` reverses one),
/// then start time (latest first), then job id. Equivalent to Slurm's
/// stable sorts applied from the last key to the first.
pub fn sort_rows(rows: &mut Vec<Row<'_>>, spec: &str, now: i64) {
    let chars: Vec<char> = spec.chars().collect();
    let mut keys: Vec<(char, bool)> = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, ',' | '+' | '-') {
            continue;
        }
        // 'N' compares host names naturally; keep it out of the key table.
        keys.push((c, i > 0 && chars[i - 1] == '-'));
    }
    let nk = keys.len() + 2;
    let n = rows.len();
    // Every key becomes an integer rank, so comparing rows is comparing
    // small integer arrays. ('N' is compared naturally on the fly.)
    let mut table: Vec<i64> = vec![0; n * nk];
    for (k, &(c, _)) in keys.iter().enumerate() {
        if c == 'N' {
            continue;
        }
        let col: Vec<SortVal<'_>> = rows.iter().map(|r| key_of(r, c, now)).collect();
        let mut strs: Vec<&str> = col
            .iter()
            .filter_map(|v| match v {
                SortVal::Str(s) => Some(*s),
                _ => None,
            })
            .collect();
        strs.sort_unstable();
        strs.dedup();
        for (i, v) in col.iter().enumerate() {
            table[i * nk + k] = match *v {
                SortVal::Int(x) => x,
                SortVal::Pair(a, b) => (i64::from(a) << 32) | i64::from(b),
                SortVal::Str(s) => strs.binary_search(&s).unwrap_or(0) as i64,
            };
        }
    }
    for (i, r) in rows.iter().enumerate() {
        table[i * nk + nk - 2] = -start_key(r, now);
        let (a, b) = id_key(r);
        table[i * nk + nk - 1] = (i64::from(a) << 32) | i64::from(b);
    }
    let order: Vec<usize> = if nk <= 8 && !keys.iter().any(|k| k.0 == 'N') {
        // Fast path: fixed-size keys, reversed columns bit-inverted.
        let mut packed: Vec<([i64; 8], u32)> = (0..n)
            .map(|i| {
                let mut a = [0i64; 8];
                for k in 0..nk {
                    let v = table[i * nk + k];
                    a[k] = if k < keys.len() && keys[k].1 { !v } else { v };
                }
                (a, i as u32)
            })
            .collect();
        packed.sort_unstable();
        packed.into_iter().map(|(_, i)| i as usize).collect()
    } else {
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&x, &y| {
            let kx = &table[x * nk..(x + 1) * nk];
            let ky = &table[y * nk..(y + 1) * nk];
            for (k, &(c, reverse)) in keys.iter().enumerate() {
                let o = if c == 'N' {
                    drover_conf::hostlist::natural_cmp(&rows[x].job.nodes, &rows[y].job.nodes)
                } else {
                    kx[k].cmp(&ky[k])
                };
                let o = if reverse { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            kx[nk - 2..].cmp(&ky[nk - 2..])
        });
        order
    };
    let sorted: Vec<Row<'_>> = order.into_iter().map(|i| rows[i]).collect();
    *rows = sorted;
}
