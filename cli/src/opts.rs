//! A small table-driven command-line parser with getopt_long's behaviour
//! (the parser every Slurm command uses), shared by all commands and by
//! sbatch's `#SBATCH` directive lines.
//!
//! Supported forms: `--key=value`, `--key value`, unambiguous prefixes of
//! long names (`--part=debug`), `-k value`, `-kvalue`, bundled short flags
//! (`-hl`), optional arguments (`--nice`, `--nice=5`, `-k5`) and `--` to end
//! the options. With `stop_at_positional` the first non-option ends option
//! parsing (sbatch: what follows the script name belongs to the script);
//! otherwise options and positionals may be mixed (scancel `ID -s KILL`).

use std::fmt;

/// Whether an option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    No,
    Required,
    Optional,
}

/// One entry of an option table.
#[derive(Debug, Clone, Copy)]
pub struct OptDef {
    /// Long name without the dashes (`job-name`); "" for short-only options.
    pub long: &'static str,
    pub short: Option<char>,
    pub arg: Arg,
    /// Canonical key the command matches on (often the long name).
    pub key: &'static str,
}

/// Shorthand constructor for tables.
pub const fn opt(long: &'static str, short: Option<char>, arg: Arg, key: &'static str) -> OptDef {
    OptDef {
        long,
        short,
        arg,
        key,
    }
}

/// One option found on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub key: &'static str,
    pub value: Option<String>,
    /// How the user spelled the option (`--time`, `-t`), for messages.
    pub spelled: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub opts: Vec<Found>,
    pub positional: Vec<String>,
}

impl Parsed {
    /// Last value given for `key` (options are last-wins).
    pub fn last(&self, key: &str) -> Option<&Found> {
        self.opts.iter().rev().find(|f| f.key == key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.opts.iter().any(|f| f.key == key)
    }

    pub fn value(&self, key: &str) -> Option<&str> {
        self.last(key).and_then(|f| f.value.as_deref())
    }

    pub fn count(&self, key: &str) -> usize {
        self.opts.iter().filter(|f| f.key == key).count()
    }
}

/// getopt_long's complaints, worded as glibc words them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptError {
    Unrecognized(String),
    InvalidShort(char),
    MissingLong(String),
    MissingShort(char),
    Ambiguous(String, Vec<String>),
    NoArgAllowed(String),
}

impl fmt::Display for OptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptError::Unrecognized(o) => write!(f, "unrecognized option '{o}'"),
            OptError::InvalidShort(c) => write!(f, "invalid option -- '{c}'"),
            OptError::MissingLong(o) => write!(f, "option '{o}' requires an argument"),
            OptError::MissingShort(c) => write!(f, "option requires an argument -- '{c}'"),
            OptError::Ambiguous(o, poss) => {
                write!(f, "option '{o}' is ambiguous; possibilities:")?;
                for p in poss {
                    write!(f, " '--{p}'")?;
                }
                Ok(())
            }
            OptError::NoArgAllowed(o) => write!(f, "option '{o}' doesn't allow an argument"),
        }
    }
}

impl std::error::Error for OptError {}

/// Find a long option by exact name or unambiguous prefix.
fn find_long<'t>(table: &'t [OptDef], name: &str) -> Result<&'t OptDef, OptError> {
    if let Some(d) = table.iter().find(|d| !d.long.is_empty() && d.long == name) {
        return Ok(d);
    }
    let cands: Vec<&OptDef> = table
        .iter()
        .filter(|d| !d.long.is_empty() && !name.is_empty() && d.long.starts_with(name))
        .collect();
    match cands.len() {
        0 => Err(OptError::Unrecognized(format!("--{name}"))),
        1 => Ok(cands[0]),
        _ => {
            // Several names for the same option are not ambiguous.
            let first = cands[0];
            if cands
                .iter()
                .all(|c| c.key == first.key && c.arg == first.arg)
            {
                Ok(first)
            } else {
                Err(OptError::Ambiguous(
                    format!("--{name}"),
                    cands.iter().map(|c| c.long.to_string()).collect(),
                ))
            }
        }
    }
}

/// A command's usual start: parse `args` against `table`; a bad option
/// prints `CMD: error` and the usage (exit 1); `--help`/`--usage` print the
/// usage and `--version` the version (exit 0). `Err` is the exit code.
pub fn parse_command(
    cmd: &str,
    usage: &str,
    table: &[OptDef],
    args: &[String],
) -> Result<Parsed, i32> {
    let p = match parse(table, args, false) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{cmd}: {e}");
            eprint!("{usage}");
            return Err(1);
        }
    };
    if p.has("help") || p.has("usage") {
        print!("{usage}");
        return Err(0);
    }
    if p.has("version") {
        crate::print_version();
        return Err(0);
    }
    Ok(p)
}

/// Parse `args` (without the program name) against `table`.
pub fn parse<S: AsRef<str>>(
    table: &[OptDef],
    args: &[S],
    stop_at_positional: bool,
) -> Result<Parsed, OptError> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_ref();
        i += 1;
        if a == "--" {
            out.positional
                .extend(args[i..].iter().map(|s| s.as_ref().to_string()));
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let def = find_long(table, name)?;
            let spelled = format!("--{}", def.long);
            let value = match (def.arg, inline) {
                (Arg::No, Some(_)) => return Err(OptError::NoArgAllowed(spelled)),
                (Arg::No, None) => None,
                (Arg::Optional, v) => v.map(str::to_string),
                (Arg::Required, Some(v)) => Some(v.to_string()),
                (Arg::Required, None) => {
                    if i < args.len() {
                        i += 1;
                        Some(args[i - 1].as_ref().to_string())
                    } else {
                        return Err(OptError::MissingLong(spelled));
                    }
                }
            };
            out.opts.push(Found {
                key: def.key,
                value,
                spelled,
            });
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a.chars().skip(1).collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let def = table
                    .iter()
                    .find(|d| d.short == Some(c))
                    .ok_or(OptError::InvalidShort(c))?;
                let spelled = format!("-{c}");
                let rest: String = chars[j..].iter().collect();
                let value = match def.arg {
                    Arg::No => None,
                    Arg::Optional => {
                        j = chars.len();
                        if rest.is_empty() {
                            None
                        } else {
                            Some(rest)
                        }
                    }
                    Arg::Required => {
                        j = chars.len();
                        if !rest.is_empty() {
                            Some(rest)
                        } else if i < args.len() {
                            i += 1;
                            Some(args[i - 1].as_ref().to_string())
                        } else {
                            return Err(OptError::MissingShort(c));
                        }
                    }
                };
                out.opts.push(Found {
                    key: def.key,
                    value,
                    spelled,
                });
            }
            continue;
        }
        // A positional argument (including a lone "-").
        out.positional.push(a.to_string());
        if stop_at_positional {
            out.positional
                .extend(args[i..].iter().map(|s| s.as_ref().to_string()));
            break;
        }
    }
    Ok(out)
}

/// Split one directive line the way sbatch does: whitespace separates words,
/// single and double quotes group (and are removed), a backslash escapes the
/// next character outside single quotes, and an unquoted word starting with
/// `#` begins a comment that ends the line.
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                } else if c == '\\' && q == '"' {
                    match chars.peek() {
                        Some(&n) if n == '"' || n == '\\' => {
                            cur.push(n);
                            chars.next();
                        }
                        _ => cur.push(c),
                    }
                } else {
                    cur.push(c);
                }
            }
            None => {
                if c.is_whitespace() {
                    if in_word {
                        words.push(std::mem::take(&mut cur));
                        in_word = false;
                    }
                } else if c == '#' && !in_word {
                    break;
                } else if c == '"' || c == '\'' {
                    quote = Some(c);
                    in_word = true;
                } else if c == '\\' {
                    in_word = true;
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                } else {
                    in_word = true;
                    cur.push(c);
                }
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// Slurm's text for a feature the system does not have (ESLURM_NOT_SUPPORTED).
pub const NOT_SUPPORTED: &str = "Requested operation not supported on this system";

/// Why a heterogeneous job (`:` components, `#SBATCH hetjob`) is refused.
pub fn hetjob_refused() -> String {
    format!("Heterogeneous jobs are not supported: {NOT_SUPPORTED}")
}

/// Does a command line ask for a heterogeneous job? `positional` is what
/// follows the options: for sbatch a leading `:` (later ones are the
/// script's arguments), for srun and salloc a `:` anywhere (Slurm splits
/// their whole command line into components at each `:`).
pub fn het_separator(positional: &[String], anywhere: bool) -> bool {
    if anywhere {
        positional.iter().any(|a| a == ":")
    } else {
        positional.first().is_some_and(|a| a == ":")
    }
}

/// `#SBATCH hetjob` (or its old name `packjob`): a component separator.
pub fn is_het_directive(words: &[String]) -> bool {
    words.len() == 1 && matches!(words[0].as_str(), "hetjob" | "packjob")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &[OptDef] = &[
        opt("time", Some('t'), Arg::Required, "time"),
        opt("job-name", Some('J'), Arg::Required, "job-name"),
        opt("exclusive", None, Arg::Optional, "exclusive"),
        opt("nice", None, Arg::Optional, "nice"),
        opt("noheader", Some('h'), Arg::No, "noheader"),
        opt("long", Some('l'), Arg::No, "long"),
        opt("nodes", Some('N'), Arg::Required, "nodes"),
        opt("nodelist", Some('w'), Arg::Required, "nodelist"),
        opt("partition", Some('p'), Arg::Required, "partition"),
    ];

    fn p(args: &[&str]) -> Result<Parsed, OptError> {
        parse(T, args, false)
    }

    #[test]
    fn long_forms() {
        let r = p(&["--time=30", "--job-name", "a b", "--exclusive"]).unwrap();
        assert_eq!(r.value("time"), Some("30"));
        assert_eq!(r.value("job-name"), Some("a b"));
        assert!(r.has("exclusive"));
        assert_eq!(r.value("exclusive"), None);
        let r = p(&["--exclusive=user", "--nice", "x"]).unwrap();
        assert_eq!(r.value("exclusive"), Some("user"));
        assert_eq!(r.value("nice"), None);
        assert_eq!(r.positional, vec!["x"]);
    }

    #[test]
    fn short_forms() {
        let r = p(&["-t", "0:5:0", "-Jname", "-hl"]).unwrap();
        assert_eq!(r.value("time"), Some("0:5:0"));
        assert_eq!(r.value("job-name"), Some("name"));
        assert!(r.has("noheader") && r.has("long"));
        let r = p(&["-ht5"]).unwrap();
        assert_eq!(r.value("time"), Some("5"));
    }

    #[test]
    fn prefixes_and_errors() {
        assert_eq!(p(&["--part=x"]).unwrap().value("partition"), Some("x"));
        assert!(matches!(p(&["--node=3"]), Err(OptError::Ambiguous(..))));
        assert_eq!(p(&["--nodes=3"]).unwrap().value("nodes"), Some("3"));
        assert_eq!(
            p(&["--foo"]).unwrap_err().to_string(),
            "unrecognized option '--foo'"
        );
        assert_eq!(p(&["-z"]).unwrap_err().to_string(), "invalid option -- 'z'");
        assert_eq!(
            p(&["--time"]).unwrap_err().to_string(),
            "option '--time' requires an argument"
        );
        assert_eq!(
            p(&["-t"]).unwrap_err().to_string(),
            "option requires an argument -- 't'"
        );
        assert_eq!(
            p(&["--long=3"]).unwrap_err().to_string(),
            "option '--long' doesn't allow an argument"
        );
    }

    #[test]
    fn positional_modes() {
        let r = parse(T, &["1", "-h", "2"], false).unwrap();
        assert_eq!(r.positional, vec!["1", "2"]);
        assert!(r.has("noheader"));
        let r = parse(T, &["-h", "script.sh", "-t", "5"], true).unwrap();
        assert_eq!(r.positional, vec!["script.sh", "-t", "5"]);
        assert!(!r.has("time"));
        let r = parse(T, &["--", "-h"], false).unwrap();
        assert_eq!(r.positional, vec!["-h"]);
    }

    #[test]
    fn words() {
        assert_eq!(split_words("--time 30"), vec!["--time", "30"]);
        assert_eq!(split_words("  --time      30  "), vec!["--time", "30"]);
        assert_eq!(
            split_words(r#"--job-name="my job" -o out"#),
            vec!["--job-name=my job", "-o", "out"]
        );
        assert_eq!(split_words("--exclusive   "), vec!["--exclusive"]);
        assert_eq!(split_words("-J x # comment"), vec!["-J", "x"]);
        assert_eq!(split_words("--comment='a # b'"), vec!["--comment=a # b"]);
        assert_eq!(
            split_words(r#"--wrap="echo \"hi\"""#),
            vec![r#"--wrap=echo "hi""#]
        );
        assert_eq!(split_words("a\\ b"), vec!["a b"]);
        assert!(split_words("").is_empty());
        assert_eq!(split_words("\"unterminated"), vec!["unterminated"]);
    }

    #[test]
    fn heterogeneous_requests() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(het_separator(&v(&[":", "job.sh"]), false));
        assert!(!het_separator(&v(&["job.sh", ":"]), false));
        assert!(het_separator(&v(&["hostname", ":", "hostname"]), true));
        assert!(!het_separator(&v(&["echo", "a:b"]), true));
        assert!(is_het_directive(&v(&["hetjob"])));
        assert!(is_het_directive(&v(&["packjob"])));
        assert!(!is_het_directive(&v(&["-n", "hetjob"])));
        assert!(hetjob_refused().ends_with("Requested operation not supported on this system"));
    }
}
