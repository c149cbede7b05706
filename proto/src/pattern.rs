//! Output file name patterns (`--output`/`--error`): `%j %J %A %a %x %N %u %n %t %s %%`,
//! with an optional zero-padding width (`%4a`). Pure, shared by the agent
//! (which opens the files) and the controller (which shows them).

/// Values a pattern may refer to.
#[derive(Debug, Clone, Default)]
pub struct PatternVars<'a> {
    pub job_id: u32,
    /// Array master id (`%A`); for a non-array job the job id.
    pub array_job_id: u32,
    /// Array task id (`%a`); None for a non-array job (Slurm prints 4294967294).
    pub array_task_id: Option<u32>,
    pub job_name: &'a str,
    /// First node of the allocation (`%N`).
    pub node: &'a str,
    pub user: &'a str,
    /// Node index within the step (`%n`).
    pub node_id: u32,
    /// Task id (`%t`).
    pub task_id: u32,
    /// Step id text (`%s`): "batch", "0", ...
    pub step: &'a str,
}

/// Expand a pattern; relative results are joined to `work_dir`.
pub fn expand_path(pattern: &str, vars: &PatternVars<'_>, work_dir: &str) -> String {
    let p = expand(pattern, vars);
    if p.starts_with('/') || work_dir.is_empty() {
        p
    } else {
        format!("{}/{}", work_dir.trim_end_matches('/'), p)
    }
}

/// Expand `%` escapes; unknown escapes are kept as written.
pub fn expand(pattern: &str, v: &PatternVars<'_>) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
            width.push(d);
            chars.next();
        }
        let w: usize = width.parse::<usize>().unwrap_or(0).min(10);
        let num = |n: u64| format!("{n:0w$}");
        match chars.next() {
            Some('%') => out.push('%'),
            Some('j') => out.push_str(&num(v.job_id.into())),
            Some('J') => {
                out.push_str(&num(v.job_id.into()));
                if !v.step.is_empty() && v.step != "batch" {
                    out.push('.');
                    out.push_str(v.step);
                }
            }
            Some('A') => out.push_str(&num(v.array_job_id.into())),
            Some('a') => out.push_str(&num(v.array_task_id.map_or(4294967294, u64::from))),
            Some('x') => out.push_str(v.job_name),
            Some('N') => out.push_str(v.node),
            Some('u') => out.push_str(v.user),
            Some('n') => out.push_str(&num(v.node_id.into())),
            Some('t') => out.push_str(&num(v.task_id.into())),
            Some('s') => out.push_str(v.step),
            Some(other) => {
                out.push('%');
                out.push_str(&width);
                out.push(other);
            }
            None => {
                out.push('%');
                out.push_str(&width);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_all_escapes() {
        let v = PatternVars {
            job_id: 42,
            array_job_id: 40,
            array_task_id: Some(2),
            job_name: "train.v1",
            node: "node3",
            user: "alice",
            node_id: 0,
            task_id: 0,
            step: "batch",
        };
        assert_eq!(expand("slurm-%j.out", &v), "slurm-42.out");
        assert_eq!(expand("%x_%A_%a.%N.%u%%", &v), "train.v1_40_2.node3.alice%");
        assert_eq!(expand("%4a-%5j-%q-%", &v), "0002-00042-%q-%");
        assert_eq!(expand_path("o/%j", &v, "/home/a/"), "/home/a/o/42");
        assert_eq!(expand_path("/dev/null", &v, "/x"), "/dev/null");
    }
}
