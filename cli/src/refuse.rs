//! Options of Slurm's query commands (squeue, sinfo, scancel, scontrol,
//! sacct) that Drover recognises but does not support: refused with Slurm's
//! words for an unsupported operation (ESLURM_NOT_SUPPORTED), never silently
//! ignored. And `-M/--clusters` (or `SLURM_CLUSTERS`), which on a Drover
//! cluster can only name the cluster itself. Pure.

use crate::opts::{Parsed, NOT_SUPPORTED};

/// `CMD: error: OPTION: Requested operation not supported on this system`.
pub fn not_supported(cmd: &str, what: &str) -> String {
    format!("{cmd}: error: {what}: {NOT_SUPPORTED}")
}

/// The first option of `keys` on the command line, refused (as the user
/// spelled it). `Ok` when none was given.
pub fn refuse_options(cmd: &str, p: &Parsed, keys: &[&str]) -> Result<(), Vec<String>> {
    match p.opts.iter().find(|f| keys.contains(&f.key)) {
        Some(f) => Err(vec![not_supported(cmd, &f.spelled)]),
        None => Ok(()),
    }
}

/// The first variable of `vars` set (non-empty) in the environment, refused.
pub fn refuse_env(
    cmd: &str,
    env: &dyn Fn(&str) -> Option<String>,
    vars: &[&str],
) -> Result<(), Vec<String>> {
    match vars.iter().find(|v| env(v).is_some()) {
        Some(v) => Err(vec![not_supported(cmd, v)]),
        None => Ok(()),
    }
}

/// Where a `-M` list came from, for Slurm's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClustersFrom {
    Option,
    Env,
}

/// The `-M` list asked for: the command line's, else `SLURM_CLUSTERS`.
pub fn clusters_asked(
    option: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<(String, ClustersFrom)> {
    match option {
        Some(v) => Some((v.to_string(), ClustersFrom::Option)),
        None => env("SLURM_CLUSTERS").map(|v| (v, ClustersFrom::Env)),
    }
}

/// Check a `-M` list against the one cluster Drover serves (`all` and the
/// cluster's own name, in any case, are it). The error is Slurm's
/// `print_db_notok` line (without the command's prefix).
pub fn check_clusters(list: &str, from: ClustersFrom, local: &str) -> Result<(), String> {
    let names: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let ok = !names.is_empty()
        && names
            .iter()
            .all(|n| n.eq_ignore_ascii_case("all") || n.eq_ignore_ascii_case(local));
    if ok {
        return Ok(());
    }
    let whence = match from {
        ClustersFrom::Option => "--cluster",
        ClustersFrom::Env => "SLURM_CLUSTERS",
    };
    Err(format!(
        "'{list}' can't be reached now, or it is an invalid entry for {whence}.  \
         Use 'sacctmgr list clusters' to see available clusters."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opts::{opt, parse, Arg, OptDef};

    const T: &[OptDef] = &[
        opt("yaml", None, Arg::Optional, "yaml"),
        opt("sibling", None, Arg::Required, "sibling"),
        opt("noheader", Some('h'), Arg::No, "noheader"),
    ];

    #[test]
    fn refuses_as_spelled() {
        let p = parse(T, &["-h", "--yaml=v0.0.40"], false).unwrap();
        assert_eq!(
            refuse_options("squeue", &p, &["yaml", "sibling"]).unwrap_err(),
            vec!["squeue: error: --yaml: Requested operation not supported on this system"]
        );
        let p = parse(T, &["-h"], false).unwrap();
        assert!(refuse_options("squeue", &p, &["yaml"]).is_ok());
        let env = |k: &str| (k == "X_FOO").then(|| "1".to_string());
        assert_eq!(
            refuse_env("sacct", &env, &["X_BAR", "X_FOO"]).unwrap_err()[0],
            "sacct: error: X_FOO: Requested operation not supported on this system"
        );
    }

    #[test]
    fn clusters() {
        assert!(check_clusters("linux", ClustersFrom::Option, "linux").is_ok());
        assert!(check_clusters("ALL", ClustersFrom::Option, "linux").is_ok());
        assert!(check_clusters("Linux,all", ClustersFrom::Env, "linux").is_ok());
        assert_eq!(
            check_clusters("other", ClustersFrom::Option, "linux").unwrap_err(),
            "'other' can't be reached now, or it is an invalid entry for --cluster.  \
             Use 'sacctmgr list clusters' to see available clusters."
        );
        assert!(check_clusters("linux,other", ClustersFrom::Env, "linux")
            .unwrap_err()
            .contains("invalid entry for SLURM_CLUSTERS."));
        assert!(check_clusters("", ClustersFrom::Option, "linux").is_err());
        let env = |k: &str| (k == "SLURM_CLUSTERS").then(|| "c1".to_string());
        assert_eq!(
            clusters_asked(None, &env),
            Some(("c1".to_string(), ClustersFrom::Env))
        );
        assert_eq!(
            clusters_asked(Some("c2"), &env),
            Some(("c2".to_string(), ClustersFrom::Option))
        );
    }
}
