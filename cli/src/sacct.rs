//! `sacct`: job accounting. Accounting arrives with the accounting daemon;
//! until then sacct behaves as Slurm does on a cluster without it.

/// Is accounting storage switched off (`AccountingStorageType` none/unset)?
pub fn accounting_disabled(storage_type: &str) -> bool {
    let t = storage_type.trim().to_ascii_lowercase();
    t.is_empty() || t == "none" || t == "accounting_storage/none"
}

pub fn run(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "--usage") {
        println!("Usage: sacct [options]");
        println!("  Job accounting is not available yet on this Drover cluster.");
        return 0;
    }
    if args.iter().any(|a| a == "-V" || a == "--version") {
        crate::print_version();
        return 0;
    }
    let cfg = match crate::conn::load_config("sacct") {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    if accounting_disabled(&cfg.accounting_storage_type) {
        eprintln!("sacct: error: Slurm accounting storage is disabled");
    } else {
        eprintln!("sacct: error: Problem talking to the database: Connection refused");
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disabled_types() {
        assert!(accounting_disabled(""));
        assert!(accounting_disabled("accounting_storage/none"));
        assert!(accounting_disabled("NONE"));
        assert!(!accounting_disabled("accounting_storage/slurmdbd"));
    }
}
