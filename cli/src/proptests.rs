//! Property tests: the parsers and renderers never panic, whatever the input.

use proptest::prelude::*;

use drover_conf::hostlist;

use crate::{fmtspec, jobids, opts, sbatch, squeue, timefmt};

fn arg_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-a-zA-Z0-9=:%._\\[\\], ]{0,16}",
        Just("--".to_string()),
        Just("-".to_string()),
        Just("--time".to_string()),
        Just("-t".to_string()),
        Just("--exclusive=".to_string()),
        Just("-Jx".to_string()),
        "\\PC{0,8}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn option_parser_never_panics(args in proptest::collection::vec(arg_strategy(), 0..8), stop in any::<bool>()) {
        let _ = opts::parse(sbatch::options::TABLE, &args, stop);
        let _ = opts::parse(squeue::TABLE, &args, stop);
        let _ = opts::parse(crate::scancel::TABLE, &args, stop);
        let _ = opts::parse(crate::scontrol::TABLE, &args, stop);
        let _ = opts::parse(crate::sinfo::TABLE, &args, stop);
    }

    #[test]
    fn directive_lines_never_panic(body in "\\PC{0,200}", lines in proptest::collection::vec("#SBATCH[ -~]{0,40}", 0..6)) {
        let script = format!("#!/bin/sh\n{}\n{body}\n", lines.join("\n"));
        let _ = opts::split_words(&body);
        if let Ok(found) = sbatch::directives::parse(&script) {
            let mut o = sbatch::options::SbatchOpts::default();
            for (_, f) in found {
                let _ = o.apply(f.key, f.value.as_deref(), 1_700_000_000);
            }
        }
    }

    #[test]
    fn option_values_never_panic(key_idx in 0usize..200, value in "\\PC{0,24}") {
        let table = sbatch::options::TABLE;
        let key = table[key_idx % table.len()].key;
        let mut o = sbatch::options::SbatchOpts::default();
        let _ = o.apply(key, Some(&value), 1_700_000_000);
        let _ = o.apply(key, None, 1_700_000_000);
    }

    #[test]
    fn format_parsers_never_panic(fmt in "[%.\\-0-9a-zA-Z|,: ]{0,40}|\\PC{0,40}") {
        let (f, _) = squeue::format::parse_format(&fmt);
        let (g, _) = squeue::format::parse_long_format(&fmt);
        let (h, _) = crate::sinfo::fields::parse_format(&fmt);
        let (i, _) = crate::sinfo::fields::parse_long_format(&fmt);
        let job = drover_proto::JobInfo {
            job_id: 1,
            name: fmt.clone(),
            array_job_id: 1,
            is_array_meta: true,
            array_pending: fmt.clone(),
            ..Default::default()
        };
        let row = squeue::format::Row::new(&job);
        let mut out = String::new();
        for spec in [&f, &g] {
            squeue::format::render_header(&mut out, spec);
            squeue::format::render_row(&mut out, spec, &row, 0);
        }
        let node = drover_proto::NodeInfo { name: fmt.clone(), state: fmt.clone(), ..Default::default() };
        let part = drover_proto::PartitionInfo { name: fmt.clone(), is_default: true, ..Default::default() };
        let parts = vec![(&part, vec![&node])];
        for spec in [&h, &i] {
            let groups = crate::sinfo::group::group(spec, &parts, false);
            let aw = crate::sinfo::group::auto_widths(&groups, true, true);
            crate::sinfo::format::render_header(&mut out, spec, &aw);
            for gr in &groups {
                crate::sinfo::format::render_line(&mut out, spec, gr, &aw);
            }
        }
    }

    #[test]
    fn cells_never_panic(v in "\\PC{0,30}", w in 0usize..40, right in any::<bool>(), cut in any::<bool>()) {
        let mut s = String::new();
        fmtspec::push_cell(&mut s, &v, w, right, cut);
        prop_assert!(!s.contains('\n'));
        if w > 0 && (!right || cut) {
            prop_assert_eq!(s.chars().count(), w);
        }
    }

    #[test]
    fn cells_fitted_in_place_are_written_cells(
        before in "[a-z ]{0,5}",
        v in "\\PC{0,80}|[ -~]{0,80}",
        w in 0usize..100,
        right in any::<bool>(),
        cut in any::<bool>(),
    ) {
        let mut written = before.clone();
        fmtspec::push_cell(&mut written, &v, w, right, cut);
        let mut fitted = before.clone();
        fitted.push_str(&v);
        fmtspec::fit_cell(&mut fitted, before.len(), w, right, cut);
        prop_assert_eq!(fitted, written);
    }

    #[test]
    fn texts_never_panic(s in "\\PC{0,30}|[0-9\\[\\],_%:\\-]{0,20}") {
        let _ = hostlist::expand(&s);
        let _ = jobids::parse_job_id(&s);
        let _ = jobids::parse_array_spec(&s);
        let _ = jobids::expand_indices(&s);
        let _ = timefmt::parse_time_limit(&s);
        let _ = drover_conf::datetime::parse_begin(&s, 1_700_000_000, &timefmt::Local);
        let _ = sbatch::options::parse_signal_spec(&s);
        let _ = sbatch::options::valid_dependency(&s);
        let _ = crate::scontrol::update::parse_update(std::slice::from_ref(&s));
    }
}
