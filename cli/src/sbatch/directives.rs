//! `#SBATCH` directives of a batch script. Pure.
//!
//! Directives are read from the lines after the interpreter line; they end
//! at the first line that is neither blank nor a comment. `#SBATCH` must
//! start the line (an indented `#SBATCH` is just a comment).

use crate::opts::{self, split_words, Found};

/// The words of each directive line, with its 1-based line number.
pub fn extract(script: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    for (idx, line) in script.lines().enumerate() {
        if idx == 0 && line.starts_with("#!") {
            continue;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            if rest.is_empty() || rest.starts_with(char::is_whitespace) {
                out.push((idx + 1, split_words(rest)));
            }
            continue;
        }
        let t = line.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        break;
    }
    out
}

/// A problem with a directive line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectiveError {
    pub line: usize,
    pub message: String,
}

/// Parse every directive line against sbatch's table.
pub fn parse(script: &str) -> Result<Vec<(usize, Found)>, DirectiveError> {
    let mut out = Vec::new();
    for (line, words) in extract(script) {
        if opts::is_het_directive(&words) {
            return Err(DirectiveError {
                line,
                message: opts::hetjob_refused(),
            });
        }
        let parsed =
            opts::parse(super::options::TABLE, &words, false).map_err(|e| DirectiveError {
                line,
                message: e.to_string(),
            })?;
        if let Some(p) = parsed.positional.first() {
            return Err(DirectiveError {
                line,
                message: format!("Invalid directive argument '{p}'"),
            });
        }
        out.extend(parsed.opts.into_iter().map(|f| (line, f)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(script: &str) -> Vec<(&'static str, Option<String>)> {
        parse(script)
            .unwrap()
            .into_iter()
            .map(|(_, f)| (f.key, f.value))
            .collect()
    }

    #[test]
    fn all_contract_forms() {
        let script = "#!/bin/bash\n\
#SBATCH --job-name=train.v1\n\
#SBATCH --partition gpu\n\
#SBATCH --account      lab\n\
#SBATCH --comment=\"quoted value here\"\n\
#SBATCH -J short\n\
#SBATCH -o /tmp/out-%j.txt\n\
#SBATCH -c 4\n\
#SBATCH --exclusive   \n\
#SBATCH -t 0:5:0\n\
#SBATCH --time 0-00:05:00\n\
#SBATCH --time=30\n\
#SBATCH --mem=954M\n\
#SBATCH --mem=4g\n\
#SBATCH --mem 1024M\n\
#SBATCH --mem=2048K\n\
#SBATCH --parsable\n\
#SBATCH -e /dev/null\n\
\n\
# a comment\n\
#SBATCH --qos=high\n\
echo hello\n\
#SBATCH --nodes=9\n";
        let v = vals(script);
        let expect: Vec<(&str, Option<String>)> = vec![
            ("job-name", Some("train.v1".into())),
            ("partition", Some("gpu".into())),
            ("account", Some("lab".into())),
            ("comment", Some("quoted value here".into())),
            ("job-name", Some("short".into())),
            ("output", Some("/tmp/out-%j.txt".into())),
            ("cpus-per-task", Some("4".into())),
            ("exclusive", None),
            ("time", Some("0:5:0".into())),
            ("time", Some("0-00:05:00".into())),
            ("time", Some("30".into())),
            ("mem", Some("954M".into())),
            ("mem", Some("4g".into())),
            ("mem", Some("1024M".into())),
            ("mem", Some("2048K".into())),
            ("parsable", None),
            ("error", Some("/dev/null".into())),
            ("qos", Some("high".into())),
        ];
        assert_eq!(v, expect);
    }

    #[test]
    fn shebang_variants_and_rules() {
        for sb in ["#!/bin/sh", "#!/bin/bash", "#!/usr/bin/env bash"] {
            let s = format!("{sb}\n#SBATCH -p a\n");
            assert_eq!(vals(&s), vec![("partition", Some("a".into()))]);
        }
        // Indented #SBATCH is a comment; #SBATCHX is not a directive.
        let s = "#!/bin/sh\n  #SBATCH -p a\n#SBATCHX -p b\n#SBATCH -p c\n";
        assert_eq!(vals(s), vec![("partition", Some("c".into()))]);
        // Trailing comments on a directive line.
        let s = "#!/bin/sh\n#SBATCH -p a # the partition\n";
        assert_eq!(vals(s), vec![("partition", Some("a".into()))]);
        // CRLF lines still parse (the DOS check happens elsewhere).
        let s = "#!/bin/sh\r\n#SBATCH -p a\r\n";
        assert_eq!(vals(s), vec![("partition", Some("a".into()))]);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("#!/bin/sh\n#SBATCH -p a\n#SBATCH --foo=1\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(e.message, "unrecognized option '--foo=1'".replace("=1", ""));
        let e = parse("#!/bin/sh\n#SBATCH -p a extra\n").unwrap_err();
        assert_eq!(e.line, 2);
    }
}
