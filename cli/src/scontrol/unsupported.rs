//! scontrol's options, keywords and `show` entities that Slurm 23.11 has and
//! Drover does not: refused with Slurm's words for an unsupported operation
//! (`Requested operation not supported on this system`), never taken for
//! something else. Pure.

/// Options refused: `-u/--uid` (acting as another user) and `--yaml`.
pub const REFUSED_OPTIONS: &[&str] = &["uid", "yaml"];

/// Slurm's keywords Drover lacks, with the shortest abbreviation Slurm
/// takes (its `MAX(tag_len, N)`).
pub const KEYWORDS: &[(&str, usize)] = &[
    ("abort", 5),
    ("callerid", 3),
    ("cancel_reboot", 3),
    ("cluster", 2),
    ("completing", 2),
    ("errnumstr", 2),
    ("errnostr", 2),
    ("fairsharedampeningfactor", 3),
    ("fsdampeningfactor", 3),
    ("getaddrs", 8),
    ("getent", 6),
    ("gethost", 7),
    ("hash", 9),
    ("hash_file", 15),
    ("notify", 1),
    ("pidinfo", 3),
    ("reboot_nodes", 3),
    ("schedloglevel", 3),
    ("setdebug", 2),
    ("setdebugflags", 9),
    ("wait_job", 2),
];

/// `show` entities Drover lacks.
pub const SHOW_ENTITIES: &[(&str, usize)] = &[
    ("aliases", 1),
    ("assoc_mgr", 2),
    ("bbstat", 2),
    ("burstbuffer", 2),
    ("cache", 2),
    ("dwstat", 2),
    ("federations", 1),
    ("frontendname", 1),
    ("licenses", 2),
    ("slurmd", 2),
    ("topology", 1),
];

/// Slurm's `xstrncasecmp(tag, full, MAX(tag_len, min))`: the word is a
/// prefix of `full` at least `min` long (or all of it).
fn abbrev(word: &str, full: &str, min: usize) -> bool {
    let w = word.to_ascii_lowercase();
    !w.is_empty() && w.len() >= min.min(full.len()) && full.starts_with(&w)
}

/// The keyword of `KEYWORDS` a command word names, if any.
pub fn keyword(word: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .find(|(full, min)| abbrev(word, full, *min))
        .map(|(full, _)| *full)
}

/// The `show` entity of `SHOW_ENTITIES` a word names, if any.
pub fn show_entity(word: &str) -> Option<&'static str> {
    SHOW_ENTITIES
        .iter()
        .find(|(full, min)| abbrev(word, full, *min))
        .map(|(full, _)| *full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abbreviations() {
        assert_eq!(keyword("setdebug"), Some("setdebug"));
        assert_eq!(keyword("setd"), Some("setdebug"));
        assert_eq!(keyword("setdebugflags"), Some("setdebugflags"));
        assert_eq!(keyword("wait_job"), Some("wait_job"));
        assert_eq!(keyword("NOTIFY"), Some("notify"));
        assert_eq!(keyword("hash"), Some("hash"));
        assert_eq!(keyword("abo"), None);
        assert_eq!(keyword("show"), None);
        assert_eq!(keyword("bogus"), None);
        assert_eq!(show_entity("licenses"), Some("licenses"));
        assert_eq!(show_entity("li"), Some("licenses"));
        assert_eq!(show_entity("topo"), Some("topology"));
        assert_eq!(show_entity("burst"), Some("burstbuffer"));
        assert_eq!(show_entity("x"), None);
    }

    fn parse(a: &[&str]) -> Result<(super::super::Flags, super::super::Command), Vec<String>> {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        super::super::parse_args(&args)
    }

    #[test]
    fn refused_with_slurm_words() {
        let ns = "Requested operation not supported on this system";
        for (args, what) in [
            (&["setdebug", "debug"][..], "setdebug"),
            (&["reboot_nodes", "ALL"][..], "reboot_nodes"),
            (&["wait_job", "5"][..], "wait_job"),
            (&["show", "licenses"][..], "show licenses"),
            (&["show", "topology"][..], "show topology"),
            (&["-u", "5", "update", "ReservationName=r"][..], "-u"),
            (&["--yaml", "show", "config"][..], "--yaml"),
        ] {
            assert_eq!(
                parse(args).unwrap_err(),
                vec![format!("scontrol: error: {what}: {ns}")],
                "{args:?}"
            );
        }
        // Keywords no Slurm has stay Slurm's "invalid keyword".
        assert_eq!(
            parse(&["bogus"]).unwrap_err(),
            vec!["invalid keyword: bogus"]
        );
        assert!(matches!(
            parse(&["exit"]).unwrap().1,
            super::super::Command::Quit
        ));
        assert!(matches!(
            parse(&["quit"]).unwrap().1,
            super::super::Command::Quit
        ));
    }

    #[test]
    fn all_hide_future_federation() {
        let (f, _) = parse(&["-a", "show", "partition"]).unwrap();
        assert!(f.all);
        let (f, _) = parse(&["-a", "--hide", "show", "partition"]).unwrap();
        assert!(!f.all);
        let (f, _) = parse(&["all", "show", "partition"]).unwrap();
        assert!(f.all);
        let (f, _) =
            parse(&["-F", "--federation", "--local", "--sibling", "show", "node"]).unwrap();
        assert!(f.future && !f.all);
        let (f, _) = parse(&["-M", "c1", "show", "node"]).unwrap();
        assert_eq!(
            f.clusters,
            Some(("c1".to_string(), crate::refuse::ClustersFrom::Option))
        );
    }
}
