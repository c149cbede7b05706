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

/// The sort keys of a listing's rows, gathered row by row (the row's job
/// may be gone by the time they are sorted): integers as they are, strings
/// copied once into one buffer and ranked at the end.
pub struct SortKeys {
    /// `--sort` keys in order, each with "reversed".
    keys: Vec<(char, bool)>,
    /// Row-major, `keys.len() + 2` cells a row (then start time and id);
    /// a string key's cell is the index of its text in `spans`.
    table: Vec<i64>,
    /// The strings of string keys: `text[start..end]`.
    text: String,
    spans: Vec<(u32, u32)>,
    /// The last string kept for each key (rows in a run often share one):
    /// `Some` for string keys once a row has one.
    last: Vec<Option<usize>>,
}

impl SortKeys {
    /// Keys for a `--sort` spec (`P,t,-p`: `-` reverses one).
    pub fn new(spec: &str) -> SortKeys {
        let chars: Vec<char> = spec.chars().collect();
        let mut keys: Vec<(char, bool)> = Vec::new();
        for (i, &c) in chars.iter().enumerate() {
            if matches!(c, ',' | '+' | '-') {
                continue;
            }
            keys.push((c, i > 0 && chars[i - 1] == '-'));
        }
        let last = vec![None; keys.len()];
        SortKeys {
            keys,
            table: Vec::new(),
            text: String::new(),
            spans: Vec::new(),
            last,
        }
    }

    fn width(&self) -> usize {
        self.keys.len() + 2
    }

    /// The keys of the next row.
    pub fn push(&mut self, r: &Row<'_>, now: i64) {
        for k in 0..self.keys.len() {
            let c = self.keys[k].0;
            let v = if c == 'N' {
                SortVal::Str(&r.job.nodes)
            } else {
                key_of(r, c, now)
            };
            let cell = match v {
                SortVal::Int(x) => x,
                SortVal::Pair(a, b) => (i64::from(a) << 32) | i64::from(b),
                SortVal::Str(s) => self.keep(k, s) as i64,
            };
            self.table.push(cell);
        }
        self.table.push(-start_key(r, now));
        let (a, b) = id_key(r);
        self.table.push((i64::from(a) << 32) | i64::from(b));
    }

    /// The index of `s` among the kept strings (the last one of key `k`
    /// again when equal).
    fn keep(&mut self, k: usize, s: &str) -> usize {
        if let Some(i) = self.last[k] {
            if self.str_at(i) == s {
                return i;
            }
        }
        let start = self.text.len() as u32;
        self.text.push_str(s);
        self.spans.push((start, self.text.len() as u32));
        let i = self.spans.len() - 1;
        self.last[k] = Some(i);
        i
    }

    fn str_at(&self, i: usize) -> &str {
        let (a, b) = self.spans[i];
        &self.text[a as usize..b as usize]
    }

    /// The rows in squeue's order: the `--sort` keys in turn, then start
    /// time (latest first), then job id. Equivalent to Slurm's stable sorts
    /// applied from the last key to the first.
    pub fn order(mut self) -> Vec<usize> {
        let nk = self.width();
        let n = self.table.len() / nk;
        // Every text key becomes its text's rank among the kept texts, so
        // comparing rows is comparing small integer arrays: each kept text
        // ranked once (jobs in a row share one), then every cell mapped.
        // ('N' compares host names naturally, on the fly.)
        let ranked: Vec<usize> = (0..self.keys.len())
            .filter(|&k| self.keys[k].0 != 'N' && self.last[k].is_some())
            .collect();
        if !ranked.is_empty() {
            let mut by_text: Vec<u32> = (0..self.spans.len() as u32).collect();
            by_text.sort_unstable_by(|&a, &b| self.str_at(a as usize).cmp(self.str_at(b as usize)));
            let mut rank = vec![0i64; self.spans.len()];
            let mut r = 0;
            for w in 0..by_text.len() {
                let here = by_text[w] as usize;
                if w > 0 && self.str_at(here) != self.str_at(by_text[w - 1] as usize) {
                    r += 1;
                }
                rank[here] = r;
            }
            for i in 0..n {
                for &k in &ranked {
                    let cell = &mut self.table[i * nk + k];
                    *cell = rank[*cell as usize];
                }
            }
        }
        let keys = &self.keys;
        let table = &self.table;
        if nk <= 8 && !keys.iter().any(|k| k.0 == 'N') {
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
            return packed.into_iter().map(|(_, i)| i as usize).collect();
        }
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&x, &y| {
            let kx = &table[x * nk..(x + 1) * nk];
            let ky = &table[y * nk..(y + 1) * nk];
            for (k, &(c, reverse)) in keys.iter().enumerate() {
                let o = if c == 'N' {
                    drover_conf::hostlist::natural_cmp(
                        self.str_at(kx[k] as usize),
                        self.str_at(ky[k] as usize),
                    )
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
    }
}
