//! A digest of a configuration as parsed (Slurm's slurm.conf hash): agents
//! send theirs at registration and the controller warns when it differs
//! from its own. It covers every logical line, `Include`d files spliced in,
//! keys in any case; comments, blank lines, spacing and line continuations
//! do not change it. FNV-1a, 64 bits: a check for drift between honest
//! copies, not a signature.

use crate::lexer::Pair;

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

fn feed(h: &mut u64, bytes: &[u8]) {
    for b in bytes {
        *h ^= u64::from(*b);
        *h = h.wrapping_mul(PRIME);
    }
}

/// The digest of parsed lines (never 0: 0 means "not sent").
pub(crate) fn of_lines(lines: &[Vec<Pair>]) -> u64 {
    let mut h = OFFSET;
    for line in lines {
        for p in line {
            feed(&mut h, p.key.to_ascii_lowercase().as_bytes());
            feed(&mut h, b"=");
            feed(&mut h, p.value.as_bytes());
            feed(&mut h, b"\x1f");
        }
        feed(&mut h, b"\n");
    }
    h.max(1)
}

#[cfg(test)]
mod tests {
    use crate::slurmconf::parse_str;

    fn digest(text: &str) -> u64 {
        let mut no_include = |p: &str| Err(format!("no include {p}"));
        parse_str(text, "t.conf", &mut no_include)
            .expect("parses")
            .0
            .conf_hash
    }

    #[test]
    fn layout_does_not_count_content_does() {
        let a = digest("ClusterName=c\nSlurmdTimeout=30\nNodeName=n1 CPUs=2\n");
        assert_ne!(a, 0);
        // Comments, blank lines, spacing, key case: the same configuration.
        assert_eq!(
            a,
            digest("# c\n\nclustername=c   # x\nSLURMDTIMEOUT=30\nNodeName=n1 \\\n  CPUs=2\n")
        );
        // Any value, or the order of lines: another one.
        assert_ne!(
            a,
            digest("ClusterName=c\nSlurmdTimeout=31\nNodeName=n1 CPUs=2\n")
        );
        assert_ne!(
            a,
            digest("ClusterName=c\nSlurmdTimeout=30\nNodeName=n1 CPUs=4\n")
        );
        assert_ne!(
            a,
            digest("SlurmdTimeout=30\nClusterName=c\nNodeName=n1 CPUs=2\n")
        );
    }
}
