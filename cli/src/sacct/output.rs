//! sacct's table writer: Slurm's print_fields rules (right-justified by
//! default, left for negative widths, a value longer than its column ends in
//! `+`, `-p`/`-P` parsable forms). Pure.

use super::fields::{value, Col, Ctx, Row};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Table,
    /// `-p`: every field followed by `|`.
    Parsable,
    /// `-P`: `|` between fields only.
    Parsable2,
}

fn spaces(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

/// One cell in table mode, followed by a space.
pub fn cell(out: &mut String, val: &str, width: i32, truncate_mark: bool) {
    let w = width.unsigned_abs() as usize;
    let len = val.chars().count();
    let text: std::borrow::Cow<'_, str> = if len > w {
        let mut t: String = val.chars().take(w.saturating_sub(1)).collect();
        if w > 0 {
            t.push(if truncate_mark {
                '+'
            } else {
                val.chars().nth(w - 1).unwrap_or(' ')
            });
        }
        t.into()
    } else {
        val.into()
    };
    let pad = w.saturating_sub(text.chars().count());
    if width < 0 {
        out.push_str(&text);
        spaces(out, pad);
    } else {
        spaces(out, pad);
        out.push_str(&text);
    }
    out.push(' ');
}

pub fn header(out: &mut String, cols: &[Col], mode: Mode) {
    header_delim(out, cols, mode, "|");
}

/// The header, with `--delimiter`'s separator for the parsable forms.
pub fn header_delim(out: &mut String, cols: &[Col], mode: Mode, delim: &str) {
    match mode {
        Mode::Table => {
            for c in cols {
                cell(out, c.name(), c.width, false);
            }
            out.push('\n');
            for c in cols {
                let w = c.width.unsigned_abs() as usize;
                for _ in 0..w {
                    out.push('-');
                }
                out.push(' ');
            }
            out.push('\n');
        }
        _ => {
            let names: Vec<&str> = cols.iter().map(|c| c.name()).collect();
            out.push_str(&names.join(delim));
            if mode == Mode::Parsable {
                out.push_str(delim);
            }
            out.push('\n');
        }
    }
}

pub fn line(out: &mut String, cols: &[Col], row: Row<'_>, ctx: &Ctx<'_>, mode: Mode) {
    line_delim(out, cols, row, ctx, mode, "|");
}

/// One line, with `--delimiter`'s separator for the parsable forms.
pub fn line_delim(
    out: &mut String,
    cols: &[Col],
    row: Row<'_>,
    ctx: &Ctx<'_>,
    mode: Mode,
    delim: &str,
) {
    for (i, c) in cols.iter().enumerate() {
        let v = value(c.name(), row, ctx);
        let v = drover_proto::text::printable(&v);
        match mode {
            Mode::Table => cell(out, &v, c.width, true),
            Mode::Parsable => {
                out.push_str(&v);
                out.push_str(delim);
            }
            Mode::Parsable2 => {
                out.push_str(&v);
                if i + 1 < cols.len() {
                    out.push_str(delim);
                }
            }
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sacct::fields::parse_format;
    use drover_proto::acct::{JobRecord, StepRecord};
    use drover_proto::JobState;

    fn ctx() -> Ctx<'static> {
        Ctx {
            now: 1000,
            group: &|g| g.to_string(),
            noconvert: false,
        }
    }

    #[test]
    fn table_layout_and_truncation() {
        let cols = parse_format("JobID,JobName,State,ExitCode").unwrap();
        let mut out = String::new();
        header(&mut out, &cols, Mode::Table);
        assert_eq!(
            out,
            "JobID           JobName      State ExitCode \n\
             ------------ ---------- ---------- -------- \n"
        );
        let j = JobRecord {
            job_id: 7,
            name: "a-very-long-name".into(),
            state: JobState::Cancelled as i32,
            cancelled: true,
            cancelled_by: 0,
            steps: vec![StepRecord {
                step_id: -5,
                name: "batch".into(),
                state: JobState::Cancelled as i32,
                exit_code: 0,
                exit_signal: 15,
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut out = String::new();
        line(&mut out, &cols, Row::Job(&j), &ctx(), Mode::Table);
        line(
            &mut out,
            &cols,
            Row::Step(&j, &j.steps[0]),
            &ctx(),
            Mode::Table,
        );
        assert_eq!(
            out,
            "7            a-very-lo+ CANCELLED+      0:0 \n\
             7.batch           batch  CANCELLED     0:15 \n"
        );
    }

    #[test]
    fn parsable_forms() {
        let cols = parse_format("JobID,State").unwrap();
        let j = JobRecord {
            job_id: 3,
            state: JobState::Completed as i32,
            ..Default::default()
        };
        let mut p = String::new();
        header(&mut p, &cols, Mode::Parsable);
        line(&mut p, &cols, Row::Job(&j), &ctx(), Mode::Parsable);
        assert_eq!(p, "JobID|State|\n3|COMPLETED|\n");
        let mut p2 = String::new();
        header(&mut p2, &cols, Mode::Parsable2);
        line(&mut p2, &cols, Row::Job(&j), &ctx(), Mode::Parsable2);
        assert_eq!(p2, "JobID|State\n3|COMPLETED\n");
        // --delimiter
        let mut d = String::new();
        header_delim(&mut d, &cols, Mode::Parsable2, ";;");
        line_delim(&mut d, &cols, Row::Job(&j), &ctx(), Mode::Parsable2, ";;");
        assert_eq!(d, "JobID;;State\n3;;COMPLETED\n");
    }
}
