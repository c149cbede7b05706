//! `PrivateData` (slurm.conf and droverdbd.conf): which records users who
//! are not operators may not see of others. Parsed here once for the
//! controller and the accounting daemon.

/// The parsed `PrivateData` list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Private {
    pub jobs: bool,
    pub nodes: bool,
    pub reservations: bool,
    pub usage: bool,
    pub users: bool,
    pub accounts: bool,
    /// `cloud`: powered-down CLOUD nodes are listed (hidden otherwise).
    pub cloud: bool,
}

/// Every value Slurm documents for `PrivateData`.
pub const VALUES: &[&str] = &[
    "accounts",
    "cloud",
    "events",
    "jobs",
    "nodes",
    "partitions",
    "reservations",
    "usage",
    "users",
];

/// Check a configured `PrivateData` list: a word that is not one of
/// [`VALUES`] is an error (a typo must not leave data visible silently).
pub fn check(words: &[String]) -> Result<Vec<String>, String> {
    for w in words {
        let lower = w.trim().to_ascii_lowercase();
        if !VALUES.contains(&lower.as_str()) {
            return Err(format!(
                "invalid value '{w}' (valid: {})",
                VALUES.join(", ")
            ));
        }
    }
    Ok(words.to_vec())
}

impl Private {
    /// From the configured words (case-insensitive). Slurm's other values
    /// (`events`, `partitions`) are accepted and hide nothing here.
    pub fn parse(words: &[String]) -> Private {
        let mut p = Private::default();
        for w in words {
            match w.trim().to_ascii_lowercase().as_str() {
                "jobs" => p.jobs = true,
                "nodes" => p.nodes = true,
                "reservations" => p.reservations = true,
                "usage" => p.usage = true,
                "users" => p.users = true,
                "accounts" => p.accounts = true,
                "cloud" => p.cloud = true,
                _ => {}
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_slurm_words() {
        let p = Private::parse(&words(&["jobs", "Usage", " nodes "]));
        assert!(p.jobs && p.usage && p.nodes);
        assert!(!p.reservations && !p.users && !p.accounts);
        assert_eq!(Private::parse(&[]), Private::default());
        let p = Private::parse(&words(&["reservations", "users", "accounts", "events"]));
        assert!(p.reservations && p.users && p.accounts && !p.jobs);
    }
}
