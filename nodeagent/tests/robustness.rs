//! Garbage in, no panic out: the parsers and pure builders on random input.

use drover_nodeagent::job_env::{array_summary, job_environment, EnvContext};
use drover_nodeagent::proctree::parse_stat;
use drover_nodeagent::status::JobStatus;
use drover_nodeagent::stepd::protocol::Request;
use drover_proto::{GresAlloc, JobInfo, JobSpec, LaunchRequest, NodeAlloc};

/// A tiny deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn num(&mut self) -> u32 {
        match self.below(4) {
            0 => 0,
            1 => u32::MAX,
            2 => self.below(10) as u32,
            _ => self.next() as u32,
        }
    }
    fn text(&mut self) -> String {
        const ALPHABET: &[u8] = b"0123456789-,:%[]()= \nabcxyzSIGTERM\xff";
        let len = self.below(24) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize])
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[test]
fn parsers_never_panic() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let t = r.text();
        let _ = array_summary(&t);
        let _ = Request::parse(&t);
        let _ = JobStatus::parse(&t);
        let _ = JobStatus::parse_done_line(&format!("done {t}"));
        let _ = parse_stat(&t);
        let _ = drover_nodeagent::args::parse(t.split(' ').map(str::to_string));
        let _ = drover_nodeagent::jobdir::parse_job_dir_name(&t);
    }
}

#[test]
fn environment_builder_never_panics() {
    let mut r = Rng(42);
    for _ in 0..3_000 {
        let nodes = r.below(4);
        let alloc: Vec<NodeAlloc> = (0..nodes)
            .map(|i| NodeAlloc {
                node: if r.below(3) == 0 {
                    r.text()
                } else {
                    format!("n{i}")
                },
                cpus: r.num(),
                tasks: r.num(),
                mem_mb: u64::from(r.num()),
                gres: (0..r.below(3))
                    .map(|_| GresAlloc {
                        name: if r.below(2) == 0 {
                            "gpu".into()
                        } else {
                            r.text()
                        },
                        r#type: r.text(),
                        indices: (0..r.below(4)).map(|_| r.num()).collect(),
                        count: r.next(),
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        let req = LaunchRequest {
            job_id: r.num(),
            node: if r.below(2) == 0 {
                "n0".into()
            } else {
                r.text()
            },
            spec: Some(JobSpec {
                name: r.text(),
                array: r.text(),
                ntasks: r.num(),
                ntasks_per_node: r.num(),
                cpus_per_task: r.num(),
                gpus: r.num(),
                gpus_per_node: r.num(),
                mem_per_cpu_mb: u64::from(r.num()),
                environment: (0..r.below(5)).map(|_| r.text()).collect(),
                ..Default::default()
            }),
            info: Some(JobInfo {
                nodes: r.text(),
                num_cpus: r.num(),
                time_limit: r.num(),
                start_time: r.next() as i64,
                array_job_id: r.num(),
                array_task_id: r.num(),
                array_spec: r.text(),
                alloc,
                ..Default::default()
            }),
            ..Default::default()
        };
        let env = job_environment(&req, &EnvContext::default());
        assert!(env.iter().any(|(k, _)| k == "SLURM_JOB_ID"));
        let _ = drover_nodeagent::stepd::run_script::io_paths(&req);
    }
}

#[test]
fn huge_hostlists_are_bounded() {
    let req = LaunchRequest {
        info: Some(JobInfo {
            nodes: "n[0-4294967295]".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let _ = job_environment(&req, &EnvContext::default());
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
}
