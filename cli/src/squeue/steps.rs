//! `squeue -s`: job steps (pure rendering). Fields: `%i` step id, `%j`
//! name, `%P` partition, `%u` user, `%M` time used, `%N` nodes, `%A` tasks,
//! `%b` TRES... (unknown letters print as written).

use drover_proto::{JobInfo, JobState};

/// Slurm's default step format.
pub const DEFAULT: &str = "%.15i %.8j %.9P %.8u %.9M %N";

fn header(c: char) -> &'static str {
    match c {
        'i' => "STEPID",
        'j' => "NAME",
        'P' => "PARTITION",
        'u' => "USER",
        'M' => "TIME",
        'N' => "NODELIST",
        'A' => "TASKS",
        'S' => "START_TIME",
        _ => "",
    }
}

/// Format pieces: literal text or (field, width, right-aligned).
fn pieces(fmt: &str) -> Vec<Result<(char, usize, bool), String>> {
    let mut out = Vec::new();
    let mut lit = String::new();
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            lit.push(c);
            continue;
        }
        if !lit.is_empty() {
            out.push(Err(std::mem::take(&mut lit)));
        }
        let mut right = false;
        if it.peek() == Some(&'.') {
            right = true;
            it.next();
        }
        let mut w = String::new();
        while let Some(d) = it.peek().copied().filter(char::is_ascii_digit) {
            w.push(d);
            it.next();
        }
        if let Some(f) = it.next() {
            out.push(Ok((f, w.parse().unwrap_or(0), right)));
        }
    }
    if !lit.is_empty() {
        out.push(Err(lit));
    }
    out
}

fn pad(out: &mut String, v: &str, w: usize, right: bool) {
    let v = drover_proto::text::printable(v);
    let v: String = if w > 0 {
        v.chars().take(w).collect()
    } else {
        v.into_owned()
    };
    let n = v.chars().count();
    if right && w > n {
        out.push_str(&" ".repeat(w - n));
    }
    out.push_str(&v);
    if !right && w > n {
        out.push_str(&" ".repeat(w - n));
    }
}

/// Running steps of the given jobs, one line each (header unless `no_header`);
/// with `only` (`-s LIST`), just the steps it names (`(job, None)`: all of
/// that job's).
pub fn render(
    out: &mut String,
    fmt: Option<&str>,
    no_header: bool,
    only: Option<&[(u32, Option<u32>)]>,
    jobs: &[JobInfo],
    now: i64,
) {
    let wanted = |job: u32, step: u32| {
        only.is_none_or(|l| {
            l.iter()
                .any(|(j, s)| *j == job && s.is_none_or(|s| s == step))
        })
    };
    let ps = pieces(fmt.unwrap_or(DEFAULT));
    if !no_header {
        for p in &ps {
            match p {
                Ok((c, w, r)) => pad(out, header(*c), *w, *r),
                Err(l) => out.push_str(l),
            }
        }
        out.push('\n');
    }
    for j in jobs.iter().filter(|j| j.state == JobState::Running as i32) {
        for s in j
            .steps
            .iter()
            .filter(|s| s.end_time == 0 && wanted(j.job_id, s.step_id))
        {
            for p in &ps {
                match p {
                    Ok((c, w, r)) => {
                        let v = match c {
                            'i' => format!("{}.{}", j.job_id, s.step_id),
                            'j' => s.name.clone(),
                            'P' => j.partition.clone(),
                            'u' => j.user_name.clone(),
                            'M' => drover_conf::units::format_elapsed(
                                (now - s.start_time).max(0) as u64
                            ),
                            'N' => s.nodelist.clone(),
                            'A' => s.ntasks.to_string(),
                            'S' => crate::timefmt::make_time_str(s.start_time),
                            other => format!("%{other}"),
                        };
                        pad(out, &v, *w, *r);
                    }
                    Err(l) => out.push_str(l),
                }
            }
            out.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_proto::StepInfo;

    #[test]
    fn default_and_custom_formats() {
        let j = JobInfo {
            job_id: 5,
            state: JobState::Running as i32,
            partition: "debug".into(),
            user_name: "alice".into(),
            steps: vec![
                StepInfo {
                    step_id: 0,
                    name: "hostname".into(),
                    nodelist: "n[1-2]".into(),
                    ntasks: 4,
                    start_time: 100,
                    ..Default::default()
                },
                StepInfo {
                    step_id: 1,
                    end_time: 150,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let mut out = String::new();
        render(&mut out, None, false, None, std::slice::from_ref(&j), 165);
        assert_eq!(
            out,
            "         STEPID     NAME PARTITION     USER      TIME NODELIST\n\
             \x20           5.0 hostname     debug    alice      1:05 n[1-2]\n"
        );
        let mut out = String::new();
        render(
            &mut out,
            Some("%i|%A|%N"),
            true,
            None,
            std::slice::from_ref(&j),
            165,
        );
        assert_eq!(out, "5.0|4|n[1-2]\n");
        // -s LIST: only the steps named.
        let mut out = String::new();
        render(
            &mut out,
            Some("%i"),
            true,
            Some(&[(5, Some(1))]),
            std::slice::from_ref(&j),
            165,
        );
        assert_eq!(out, "");
        render(
            &mut out,
            Some("%i"),
            true,
            Some(&[(5, None)]),
            std::slice::from_ref(&j),
            165,
        );
        assert_eq!(out, "5.0\n");
        let mut out = String::new();
        render(&mut out, Some("%i"), true, Some(&[(6, Some(0))]), &[j], 165);
        assert_eq!(out, "");
    }
}
