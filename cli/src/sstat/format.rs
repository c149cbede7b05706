//! sstat's fields and table (pure): per-step figures from the agents,
//! aggregated over nodes, printed with Slurm's field names and widths.

use drover_proto::StepStats;

/// A step's figures over all its nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepRow {
    pub job_id: String,
    pub nodes: Vec<String>,
    pub ntasks: u32,
    pub max_rss_kb: u64,
    pub max_rss_node: String,
    pub ave_rss_kb: u64,
    pub min_cpu_usec: u64,
    pub min_cpu_node: String,
    pub ave_cpu_usec: u64,
    pub tot_cpu_usec: u64,
    pub pids: Vec<u32>,
    pub gpu_util_pct: u32,
    pub gpu_mem_mb: u64,
}

/// Group per-node stats into one row per step (in first-seen order).
pub fn rows(stats: &[StepStats]) -> Vec<StepRow> {
    let mut out: Vec<(String, Vec<&StepStats>)> = Vec::new();
    for s in stats {
        let id = format!("{}.{}", s.job_id, s.step);
        match out.iter_mut().find(|(k, _)| *k == id) {
            Some((_, v)) => v.push(s),
            None => out.push((id, vec![s])),
        }
    }
    out.into_iter()
        .map(|(id, v)| {
            let n = v.len() as u64;
            let max = v.iter().max_by_key(|s| s.mem_peak_kb).expect("non-empty");
            let min = v.iter().min_by_key(|s| s.cpu_usec).expect("non-empty");
            let tot: u64 = v.iter().map(|s| s.cpu_usec).sum();
            StepRow {
                job_id: id,
                nodes: v.iter().map(|s| s.node.clone()).collect(),
                // The batch step is one task per node.
                ntasks: v.len() as u32,
                max_rss_kb: max.mem_peak_kb,
                max_rss_node: max.node.clone(),
                ave_rss_kb: v.iter().map(|s| s.mem_now_kb).sum::<u64>() / n,
                min_cpu_usec: min.cpu_usec,
                min_cpu_node: min.node.clone(),
                ave_cpu_usec: tot / n,
                tot_cpu_usec: tot,
                pids: v.iter().flat_map(|s| s.pids.iter().copied()).collect(),
                gpu_util_pct: v.iter().map(|s| s.gpu_util_pct).max().unwrap_or(0),
                gpu_mem_mb: v.iter().map(|s| s.gpu_mem_mb).max().unwrap_or(0),
            }
        })
        .collect()
}

/// CPU time and memory are printed exactly as sacct prints them.
pub use crate::sacct::fields::{cpu_time_text as cpu_time, kb_text as mem_k};

fn tres(r: &StepRow, cpu: u64, mem: u64) -> String {
    let mut s = format!("cpu={},mem={}", cpu_time(cpu), mem_k(mem));
    if r.gpu_mem_mb > 0 || r.gpu_util_pct > 0 {
        s.push_str(&format!(
            ",gres/gpumem={}M,gres/gpuutil={}",
            r.gpu_mem_mb, r.gpu_util_pct
        ));
    }
    s
}

/// (canonical name, default width) of every field sstat knows.
pub const FIELDS: &[(&str, usize)] = &[
    ("JobID", 12),
    ("MaxVMSize", 10),
    ("MaxVMSizeNode", 14),
    ("MaxVMSizeTask", 14),
    ("AveVMSize", 10),
    ("MaxRSS", 10),
    ("MaxRSSNode", 10),
    ("MaxRSSTask", 10),
    ("AveRSS", 10),
    ("MaxPages", 8),
    ("MaxPagesNode", 12),
    ("MaxPagesTask", 12),
    ("AvePages", 10),
    ("MinCPU", 10),
    ("MinCPUNode", 10),
    ("MinCPUTask", 10),
    ("AveCPU", 10),
    ("NTasks", 8),
    ("Nodelist", 20),
    ("Pids", 20),
    ("TRESUsageInAve", 14),
    ("TRESUsageInMax", 14),
    ("TRESUsageInMaxNode", 18),
    ("TRESUsageInMin", 14),
    ("TRESUsageInTot", 14),
];

/// Slurm's default field list for sstat (the part Drover measures).
pub const DEFAULT_FORMAT: &str = "JobID,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,MinCPUTask,AveCPU,NTasks,TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,TRESUsageInMin,TRESUsageInTot";
/// `-i/--pidformat`.
pub const PID_FORMAT: &str = "JobID,Nodelist,Pids";

/// One requested column: field, width, left-justified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Col {
    pub name: &'static str,
    pub width: usize,
    pub left: bool,
}

/// Parse `--format` (`name`, `name%W`, `name%-W`; case-insensitive).
pub fn parse_format(spec: &str) -> Result<Vec<Col>, String> {
    let mut cols = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, width) = match part.split_once('%') {
            Some((n, w)) => (n, Some(w)),
            None => (part, None),
        };
        let &(canon, def) = FIELDS
            .iter()
            .find(|(f, _)| f.eq_ignore_ascii_case(name))
            .ok_or_else(|| format!("Invalid field requested: \"{name}\""))?;
        let (w, left) = match width {
            None => (def, false),
            Some(w) => {
                let left = w.starts_with('-');
                let n: usize = w
                    .trim_start_matches('-')
                    .parse()
                    .map_err(|_| format!("Invalid field width: \"{part}\""))?;
                (n, left)
            }
        };
        cols.push(Col {
            name: canon,
            width: w,
            left,
        });
    }
    Ok(cols)
}

pub fn value(r: &StepRow, field: &str) -> String {
    match field {
        "JobID" => r.job_id.clone(),
        "MaxVMSize" | "AveVMSize" | "MaxPages" | "AvePages" => "0".into(),
        "MaxVMSizeNode" | "MaxPagesNode" => r.max_rss_node.clone(),
        "MaxVMSizeTask" | "MaxPagesTask" | "MaxRSSTask" | "MinCPUTask" => "0".into(),
        "MaxRSS" => mem_k(r.max_rss_kb),
        "MaxRSSNode" => r.max_rss_node.clone(),
        "AveRSS" => mem_k(r.ave_rss_kb),
        "MinCPU" => cpu_time(r.min_cpu_usec),
        "MinCPUNode" => r.min_cpu_node.clone(),
        "AveCPU" => cpu_time(r.ave_cpu_usec),
        "NTasks" => r.ntasks.to_string(),
        "Nodelist" => drover_conf::hostlist::compress(&r.nodes),
        "Pids" => r
            .pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        "TRESUsageInAve" => tres(r, r.ave_cpu_usec, r.ave_rss_kb),
        "TRESUsageInMax" => tres(r, r.min_cpu_usec.max(r.ave_cpu_usec), r.max_rss_kb),
        "TRESUsageInMaxNode" => format!("cpu={},mem={}", r.min_cpu_node, r.max_rss_node),
        "TRESUsageInMin" => tres(r, r.min_cpu_usec, r.ave_rss_kb),
        "TRESUsageInTot" => tres(r, r.tot_cpu_usec, r.max_rss_kb),
        _ => String::new(),
    }
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Table,
    /// `-p`: `|` after every field.
    Parsable,
    /// `-P`: `|` between fields.
    Parsable2,
}

fn fit(v: &str, c: &Col) -> String {
    let v: String = if v.chars().count() > c.width {
        // Slurm truncates and marks the cut with '+'.
        let mut t: String = v.chars().take(c.width.saturating_sub(1)).collect();
        t.push('+');
        t
    } else {
        v.to_string()
    };
    if c.left {
        format!("{v:<w$}", w = c.width)
    } else {
        format!("{v:>w$}", w = c.width)
    }
}

pub fn render(rows: &[StepRow], cols: &[Col], style: Style, header: bool) -> String {
    let mut out = String::new();
    let line = |vals: Vec<String>| -> String {
        let vals: Vec<_> = vals
            .iter()
            .map(|v| drover_proto::text::printable(v))
            .collect();
        match style {
            Style::Table => {
                let mut s = vals.join(" ");
                s.push_str(" \n");
                s
            }
            Style::Parsable => format!("{}|\n", vals.join("|")),
            Style::Parsable2 => format!("{}\n", vals.join("|")),
        }
    };
    if header {
        out.push_str(&line(
            cols.iter()
                .map(|c| match style {
                    Style::Table => fit(c.name, c),
                    _ => c.name.to_string(),
                })
                .collect(),
        ));
        if style == Style::Table {
            out.push_str(&line(cols.iter().map(|c| "-".repeat(c.width)).collect()));
        }
    }
    for r in rows {
        out.push_str(&line(
            cols.iter()
                .map(|c| {
                    let v = value(r, c.name);
                    match style {
                        Style::Table => fit(&v, c),
                        _ => v,
                    }
                })
                .collect(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(node: &str, cpu: u64, peak: u64) -> StepStats {
        StepStats {
            job_id: 7,
            step: "batch".into(),
            node: node.into(),
            cpu_usec: cpu,
            mem_now_kb: peak / 2,
            mem_peak_kb: peak,
            ntasks: 3,
            pids: vec![10, 11],
            ..Default::default()
        }
    }

    #[test]
    fn aggregates_and_prints() {
        let r = rows(&[stat("n1", 1_500_000, 2048), stat("n2", 500_000, 4096)]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].job_id, "7.batch");
        assert_eq!(r[0].max_rss_node, "n2");
        assert_eq!(r[0].min_cpu_node, "n2");
        assert_eq!(value(&r[0], "AveCPU"), "00:00:01");
        assert_eq!(value(&r[0], "MaxRSS"), "4M");
        assert_eq!(value(&r[0], "Nodelist"), "n[1-2]");
        let cols = parse_format("jobid,maxrss%8,AveCPU").unwrap();
        let t = render(&r, &cols, Style::Table, true);
        assert_eq!(
            t,
            "       JobID   MaxRSS     AveCPU \n------------ -------- ---------- \n     7.batch       4M   00:00:01 \n"
        );
        let p = render(&r, &cols, Style::Parsable2, false);
        assert_eq!(p, "7.batch|4M|00:00:01\n");
        assert!(parse_format("Bogus").unwrap_err().contains("Bogus"));
        assert!(parse_format(DEFAULT_FORMAT).is_ok());
    }
}
