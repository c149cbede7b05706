//! Fuzz targets for what the commands read from users: `#SBATCH`
//! directives of a batch script, the command lines of sbatch, salloc, srun,
//! squeue and sacct (every option value goes through its parser), and the
//! JSON that `--json` writes from arbitrary strings. Each must not panic or
//! hang; an error must name where it is. They run under the fuzzer
//! (`fuzz/`, `bench/fuzz.sh`) and, over the saved inputs, in `cargo test`.

use crate::jsonw::{self, J};
use crate::sbatch::{directives, options, spec};
use crate::{opts, sacct, squeue, srun};

/// A fixed "now", so runs are reproducible.
const NOW: i64 = drover_conf::fuzz::NOW;

fn context(script: Vec<u8>) -> spec::Context {
    spec::Context {
        env: vec![("PATH".into(), "/usr/bin".into())],
        cwd: "/home/fuzz".into(),
        host: "login1".into(),
        script,
        script_args: Vec::new(),
        default_name: "job.sh".into(),
        command: "/home/fuzz/job.sh".into(),
    }
}

/// A batch script as sbatch reads it: the script check, then each
/// `#SBATCH` directive applied; an error names a line of the script.
pub fn sbatch_script(data: &[u8]) {
    if spec::check_script(data).is_err() {
        return;
    }
    let text = String::from_utf8_lossy(data);
    let found = match directives::parse(&text) {
        Ok(f) => f,
        Err(e) => {
            assert!(
                e.line >= 1 && e.line <= text.lines().count(),
                "directive error on line {} of a {}-line script: {}",
                e.line,
                text.lines().count(),
                e.message
            );
            return;
        }
    };
    let mut o = options::SbatchOpts::default();
    for (_line, f) in found {
        if o.apply(f.key, f.value.as_deref(), NOW).is_err() {
            return;
        }
    }
    let _ = spec::build(&o, &context(data.to_vec()));
}

/// A command line: the first byte picks the command, the rest is its
/// arguments separated by NUL bytes.
pub fn cli_args(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let args: Vec<String> = rest
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let no_uid = |_: &str| None;
    let uid = |name: &str| (name == "fuzz").then_some(1000);
    match which % 5 {
        // sbatch and salloc share their options.
        0 | 1 => {
            let Ok(p) = opts::parse(options::TABLE, &args, true) else {
                return;
            };
            let mut o = options::SbatchOpts::default();
            for f in &p.opts {
                if o.apply(f.key, f.value.as_deref(), NOW).is_err() {
                    return;
                }
            }
            let _ = spec::build(&o, &context(b"#!/bin/sh\ntrue\n".to_vec()));
        }
        2 => {
            if let Ok(p) = opts::parse(srun::args::TABLE, &args, true) {
                let inside = [
                    ("SLURM_JOB_ID".to_string(), "12".to_string()),
                    ("SLURM_NTASKS".to_string(), "4".to_string()),
                    ("SLURM_JOB_NUM_NODES".to_string(), "2".to_string()),
                ];
                let _ = srun::args::build(&p, &inside);
                let _ = srun::args::build(&p, &[]);
            }
        }
        3 => {
            let env = |k: &str| (k == "SQUEUE_FORMAT").then(|| "%i %j".to_string());
            let _ = squeue::args::parse_args(&args, &env, &uid, 1000);
            let _ = squeue::args::parse_args(&args, &|_| None, &no_uid, 0);
        }
        _ => {
            let _ = sacct::args::parse(&args, 1000, NOW, &uid);
            let _ = sacct::args::parse(&args, 0, NOW, &no_uid);
        }
    }
}

/// Build a JSON value from bytes: each byte says what comes next.
fn value<'a>(data: &mut &'a [u8], strings: &mut Vec<&'a str>, depth: usize) -> J<'a> {
    let Some((&b, rest)) = data.split_first() else {
        return J::Null;
    };
    *data = rest;
    match b % 8 {
        0 => J::Null,
        1 => J::Bool(b & 8 != 0),
        2 => J::Int(i64::from(b).wrapping_mul(-0x0123_4567_89ab_cdef)),
        3 => J::Num {
            set: b & 8 != 0,
            infinite: b & 16 != 0,
            number: i64::from(b) - 128,
        },
        4 | 5 => {
            let n = usize::from(b >> 3).min(data.len());
            let (s, rest) = data.split_at(n);
            *data = rest;
            let s = std::str::from_utf8(s).unwrap_or("\u{0}\"\\\u{1f}é");
            strings.push(s);
            if b % 8 == 4 {
                J::Str(s)
            } else {
                J::String(s.to_string())
            }
        }
        6 if depth < 16 => {
            let n = usize::from(b >> 5);
            J::Arr((0..n).map(|_| value(data, strings, depth + 1)).collect())
        }
        7 if depth < 16 => {
            let n = usize::from(b >> 5);
            let keys = ["a", "b\"", "c\\", "\u{7}", "é", "job_id", "", "x y"];
            J::Obj(
                (0..n)
                    .map(|i| (keys[i], value(data, strings, depth + 1)))
                    .collect(),
            )
        }
        _ => J::Null,
    }
}

/// `--json` output: the writer's text is valid JSON and the same value as
/// `serde_json` would make (keys in the writer's order: `serde_json`'s
/// own map sorts them), and every string reads back as itself.
pub fn json_output(data: &[u8]) {
    let mut input = data;
    let mut strings = Vec::new();
    let v = value(&mut input, &mut strings, 0);
    let mut out = String::new();
    jsonw::write(&mut out, &v, 0);
    let expected = jsonw::to_value(&v);
    let parsed: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("invalid JSON {out:?}: {e}"));
    assert_eq!(parsed, expected);
    for s in strings {
        let mut lit = String::new();
        jsonw::push_str_lit(&mut lit, s);
        assert_eq!(
            serde_json::from_str::<String>(&lit).ok().as_deref(),
            Some(s)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_conf::fuzz::replay;

    #[test]
    fn saved_inputs_replay() {
        let targets: [(&str, drover_conf::fuzz::Target); 3] = [
            ("sbatch_script", sbatch_script),
            ("cli_args", cli_args),
            ("json_output", json_output),
        ];
        for (name, f) in targets {
            assert!(replay(name, f) > 0, "no saved inputs for {name}");
        }
    }
}
