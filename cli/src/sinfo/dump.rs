//! `sinfo -v`: Slurm's dump of the parameters sinfo runs with
//! (`_print_options` in src/sinfo/opts.c), printed on standard output
//! before the listing. Pure.

use super::fields::NodeField as F;

/// What the dump shows, as given on the command line.
pub struct Dump<'a> {
    pub dead: bool,
    pub exact: bool,
    /// The `-o` format in force (`None` with `-O`: Slurm shows `(null)`).
    pub format: Option<&'a str>,
    pub fields: Vec<F>,
    pub iterate: u64,
    pub long: bool,
    pub no_header: bool,
    pub node_format: bool,
    pub nodes: Option<&'a str>,
    pub partition: Option<&'a str>,
    pub responding: bool,
    pub states: Option<&'a str>,
    pub summarize: bool,
    pub verbose: usize,
    pub all: bool,
    pub reservation: bool,
}

fn tf(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

impl Dump<'_> {
    fn has(&self, want: &[F]) -> bool {
        self.fields.iter().any(|f| want.contains(f))
    }

    /// The dump's lines, as Slurm prints them.
    pub fn text(&self) -> String {
        let rule = "-----------------------------\n";
        let filtering = self.nodes.is_some()
            || self.partition.is_some()
            || self.states.is_some()
            || self.dead
            || self.responding;
        let node_field = self.has(&[F::NodeList, F::Hostnames, F::NodeAddr]);
        let part_field = self.has(&[F::Partition, F::PartitionName]);
        let mut s = String::from(rule);
        let mut line = |k: &str, v: &str| {
            s.push_str(k);
            s.push_str(v);
            s.push('\n');
        };
        line("dead        = ", tf(self.dead));
        line("exact       = ", &(self.exact as u8).to_string());
        line("filtering   = ", tf(filtering));
        line("format      = ", self.format.unwrap_or("(null)"));
        line("iterate     = ", &self.iterate.to_string());
        line("long        = ", tf(self.long));
        line("no_header   = ", tf(self.no_header));
        line("node_field  = ", tf(node_field));
        line("node_format = ", tf(self.node_format));
        line("nodes       = ", self.nodes.unwrap_or("n/a"));
        line("part_field  = ", tf(part_field));
        line("partition   = ", self.partition.unwrap_or("n/a"));
        line("responding  = ", tf(self.responding));
        line("states      = ", self.states.unwrap_or("(null)"));
        line("sort        = ", "(null)");
        line("summarize   = ", tf(self.summarize));
        line("verbose     = ", &self.verbose.to_string());
        s.push_str(rule);
        let flags: [(&str, bool); 25] = [
            ("all_flag        = ", self.all),
            ("alloc_mem_flag  = ", self.has(&[F::AllocMem])),
            ("avail_flag      = ", self.has(&[F::Avail])),
            ("cpus_flag       = ", self.has(&[F::Cpus, F::CpusAIOT])),
            ("default_time_flag =", self.has(&[F::DefaultTime])),
            ("disk_flag       = ", self.has(&[F::Disk])),
            ("features_flag   = ", self.has(&[F::Features])),
            ("features_flag_act = ", self.has(&[F::FeaturesAct])),
            ("groups_flag     = ", self.has(&[F::Groups])),
            ("gres_flag       = ", self.has(&[F::Gres])),
            ("job_size_flag   = ", self.has(&[F::JobSize])),
            ("max_time_flag   = ", self.has(&[F::TimeLimit])),
            ("memory_flag     = ", self.has(&[F::Memory])),
            ("partition_flag  = ", part_field),
            ("port_flag       = ", self.has(&[F::Port])),
            (
                "priority_job_factor_flag   = ",
                self.has(&[F::PrioJobFactor]),
            ),
            ("priority_tier_flag   = ", self.has(&[F::PrioTier])),
            ("reason_flag     = ", self.has(&[F::Reason])),
            ("reason_timestamp_flag = ", self.has(&[F::Timestamp])),
            ("reason_user_flag = ", self.has(&[F::User, F::UserLong])),
            ("reservation_flag = ", self.reservation),
            ("root_flag       = ", self.has(&[F::Root])),
            ("oversubscribe_flag      = ", self.has(&[F::OverSubscribe])),
            (
                "state_flag      = ",
                self.has(&[F::StateCompact, F::StateLong, F::StateComplete]),
            ),
            ("weight_flag     = ", self.has(&[F::Weight])),
        ];
        for (k, v) in flags {
            s.push_str(k);
            s.push_str(tf(v));
            s.push('\n');
        }
        s.push_str("-----------------------------\n\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dump_has_slurms_lines_and_flags_from_the_format() {
        let d = Dump {
            dead: false,
            exact: false,
            format: Some("%#P %.5a %.10l %.6D %.6t %N"),
            fields: vec![
                F::Partition,
                F::Avail,
                F::TimeLimit,
                F::Nodes,
                F::StateCompact,
                F::NodeList,
            ],
            iterate: 0,
            long: false,
            no_header: false,
            node_format: false,
            nodes: None,
            partition: Some("debug"),
            responding: false,
            states: None,
            summarize: false,
            verbose: 1,
            all: true,
            reservation: false,
        };
        let t = d.text();
        assert!(t.starts_with("-----------------------------\ndead        = false\nexact       = 0\nfiltering   = true\nformat      = %#P %.5a %.10l %.6D %.6t %N\n"), "{t}");
        assert!(
            t.contains("\nnodes       = n/a\npart_field  = true\npartition   = debug\n"),
            "{t}"
        );
        assert!(t.contains("\nstates      = (null)\nsort        = (null)\nsummarize   = false\nverbose     = 1\n"), "{t}");
        assert!(t.contains("\nall_flag        = true\n"), "{t}");
        assert!(
            t.contains(
                "\navail_flag      = true\ncpus_flag       = false\ndefault_time_flag =false\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("\nmax_time_flag   = true\n") && t.contains("\nstate_flag      = true\n"),
            "{t}"
        );
        assert!(
            t.ends_with("weight_flag     = false\n-----------------------------\n\n"),
            "{t}"
        );
    }
}
