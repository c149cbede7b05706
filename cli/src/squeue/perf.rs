//! Timing checks over 10,000 jobs (`cargo test --release -p drover-cli perf -- --ignored --nocapture`).

mod full {
    use crate::squeue::format::tests::job;
    use crate::squeue::format::Row;
    use crate::squeue::*;
    use drover_proto::{JobInfo, JobState};

    struct CountingSink(usize);

    impl std::io::Write for CountingSink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// `cargo test --release -p drover-cli perf -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn render_ten_thousand_jobs() {
        let jobs: Vec<JobInfo> = (0..10_000u32)
            .map(|i| {
                let mut j = job(
                    i + 1,
                    &format!("job-{i}"),
                    if i % 3 == 0 {
                        JobState::Running
                    } else {
                        JobState::Pending
                    },
                );
                j.start_time = 1_700_000_000;
                j.nodes = format!("node{}", i % 100);
                j.priority = i * 7 % 1000;
                j
            })
            .collect();
        let args: Vec<String> = Vec::new();
        {
            use prost::Message;
            let resp = drover_proto::GetJobsResponse {
                jobs: jobs.clone(),
                now: 0,
            };
            let bytes = resp.encode_to_vec();
            let t = std::time::Instant::now();
            let back = drover_proto::GetJobsResponse::decode(bytes.as_slice()).unwrap();
            println!(
                "decode {} jobs ({} bytes): {:?}",
                back.jobs.len(),
                bytes.len(),
                t.elapsed()
            );
        }
        let p = match parse_args(&args, &|_| None, &|_| None, 0).unwrap() {
            Parsed::Run(p) => *p,
            _ => unreachable!(),
        };
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let mut out = String::with_capacity(1 << 20);
            render(&mut out, &p, &jobs, 1_700_000_100);
            let table = t.elapsed();
            let t = std::time::Instant::now();
            let rows: Vec<Row<'_>> = jobs.iter().map(Row::new).collect();
            let mut sink = CountingSink(0);
            crate::json::squeue_to(&mut sink, &rows, 1_700_000_100, "c", &args).unwrap();
            let json = t.elapsed();
            println!(
                "table {:?} ({} bytes), json {:?} ({} bytes)",
                table,
                out.len(),
                json,
                sink.0
            );
        }
    }
}

mod table {
    use crate::squeue::format::tests::job;
    use crate::squeue::*;
    use drover_proto::{JobInfo, JobState};

    #[test]
    #[ignore]
    fn table_only() {
        let jobs: Vec<JobInfo> = (0..10_000u32)
            .map(|i| {
                let mut j = job(
                    i + 1,
                    &format!("job-{i}"),
                    if i % 3 == 0 {
                        JobState::Running
                    } else {
                        JobState::Pending
                    },
                );
                j.start_time = 1_700_000_000;
                j.nodes = format!("node{}", i % 100);
                j.priority = i * 7 % 1000;
                j
            })
            .collect();
        let args: Vec<String> = Vec::new();
        let p = match parse_args(&args, &|_| None, &|_| None, 0).unwrap() {
            Parsed::Run(p) => *p,
            _ => unreachable!(),
        };
        let mut best = std::time::Duration::MAX;
        for _ in 0..50 {
            let t = std::time::Instant::now();
            let mut rows = Vec::with_capacity(jobs.len());
            for j in &jobs {
                filter(j, &p, &mut rows);
            }
            let f = t.elapsed();
            sort_rows(&mut rows, &p.sort, 1_700_000_100);
            let s = t.elapsed();
            let mut out = String::with_capacity(1 << 20);
            let mut scratch = String::new();
            for r in &rows {
                format::render_row(&mut out, &mut scratch, &p.format, r, 1_700_000_100);
                out.push('\n');
            }
            let e = t.elapsed();
            if e < best {
                best = e;
                println!("filter {f:?} sort {s:?} render {e:?}");
            }
        }
    }
}
