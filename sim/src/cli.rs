//! `droversim` / `drover sim`: options, reading the files, running, writing
//! what was asked for. The only file of the crate with I/O.

use std::path::{Path, PathBuf};

use drover_conf::slurmconf::Config;

use crate::engine::{self, Options, Outcomes, Sim};
use crate::report;
use crate::synthetic::{self, Shape};
use crate::trace::{TraceJob, Workload};

pub const USAGE: &str = "\
Usage: drover sim -c slurm.conf (--sacct FILE | --swf FILE | --synthetic N) [options]

Replays a workload through the real controller core on simulated time and
prints a summary (utilisation, waits, bounded slowdown, per user and
partition, fair-share).

  -c, --conf FILE        slurm.conf of the cluster to simulate
      --gres-conf FILE   gres.conf (default: gres.conf beside the slurm.conf, if any)
      --sacct FILE       a workload from `sacct -P` output (with its header)
      --swf FILE         a workload in the Standard Workload Format
      --synthetic N      a generated workload of N jobs
      --seed S           seed of --synthetic (default 1)
      --load L           offered load of --synthetic, fraction of the CPUs (default 0.9)
      --bad-lines MODE   skip (default: each reported on stderr) or refuse (exit 1)
      --csv FILE         write one row per job (id, user, partition, submit,
                         start, end, wait, state, ...); - for stdout
      --compare FILE     also run with this slurm.conf; print both side by side
      --plot FILE        write an SVG: queue, running CPUs/GPUs, utilisation
      --tick SECS        periodic checks and full passes (default: bf_interval, else 30)
  -v                     the controller core's debug log on stderr
";

struct Args {
    conf: PathBuf,
    gres: Option<PathBuf>,
    sacct: Option<PathBuf>,
    swf: Option<PathBuf>,
    synthetic: Option<usize>,
    seed: u64,
    load: f64,
    refuse_bad: bool,
    csv: Option<String>,
    compare: Option<PathBuf>,
    plot: Option<PathBuf>,
    tick: Option<i64>,
    verbose: u8,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut a = Args {
        conf: PathBuf::new(),
        gres: None,
        sacct: None,
        swf: None,
        synthetic: None,
        seed: 1,
        load: 0.9,
        refuse_bad: false,
        csv: None,
        compare: None,
        plot: None,
        tick: None,
        verbose: 0,
    };
    let mut conf = None;
    let mut it = argv.iter();
    while let Some(opt) = it.next() {
        let (name, inline) = match opt.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (opt.as_str(), None),
        };
        if matches!(name, "-v" | "--verbose") {
            a.verbose += 1;
            continue;
        }
        if matches!(name, "-h" | "--help") {
            return Err(String::new());
        }
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("option {name} needs a value"))
        };
        let num = |v: String, what: &str| -> Result<u64, String> {
            v.parse::<u64>()
                .map_err(|_| format!("option {what}: '{v}' is not a number"))
        };
        match name {
            "-c" | "--conf" => conf = Some(PathBuf::from(value()?)),
            "--gres-conf" => a.gres = Some(value()?.into()),
            "--sacct" => a.sacct = Some(value()?.into()),
            "--swf" => a.swf = Some(value()?.into()),
            "--synthetic" => a.synthetic = Some(num(value()?, name)? as usize),
            "--seed" => a.seed = num(value()?, name)?,
            "--load" => {
                let v = value()?;
                a.load = v
                    .parse::<f64>()
                    .ok()
                    .filter(|l| *l > 0.0 && *l <= 10.0)
                    .ok_or_else(|| format!("option --load: '{v}' is not a fraction in (0, 10]"))?;
            }
            "--bad-lines" => {
                a.refuse_bad = match value()?.as_str() {
                    "skip" => false,
                    "refuse" => true,
                    v => {
                        return Err(format!(
                            "option --bad-lines: '{v}' is neither skip nor refuse"
                        ))
                    }
                }
            }
            "--csv" => a.csv = Some(value()?),
            "--compare" => a.compare = Some(value()?.into()),
            "--plot" => a.plot = Some(value()?.into()),
            "--tick" => {
                let v = num(value()?, name)?;
                if v == 0 {
                    return Err("option --tick: must be at least 1 second".into());
                }
                a.tick = Some(v as i64);
            }
            other => return Err(format!("unknown option '{other}'")),
        }
    }
    a.conf = conf.ok_or("a slurm.conf is needed: -c FILE")?;
    let sources = [a.sacct.is_some(), a.swf.is_some(), a.synthetic.is_some()];
    match sources.iter().filter(|s| **s).count() {
        0 => return Err("a workload is needed: --sacct FILE, --swf FILE or --synthetic N".into()),
        1 => {}
        _ => return Err("only one workload: --sacct, --swf or --synthetic".into()),
    }
    Ok(a)
}

/// Read a slurm.conf and check its gres.conf (the one given, else the one
/// beside it if there is one) against it.
fn load_conf(path: &Path, gres: Option<&Path>) -> Result<Config, String> {
    let (cfg, warnings) = drover_conf::slurmconf::load(path).map_err(|e| e.to_string())?;
    for w in warnings {
        eprintln!("drover sim: {w}");
    }
    let beside = path.with_file_name("gres.conf");
    let gres_path = match gres {
        Some(g) => Some(g.to_path_buf()),
        None => beside.exists().then_some(beside),
    };
    if let Some(g) = gres_path {
        let (gc, warnings) = drover_conf::gresconf::load(&g).map_err(|e| e.to_string())?;
        for w in warnings {
            eprintln!("drover sim: {w}");
        }
        for n in &cfg.nodes {
            let configured = n.gres_count("gpu");
            let listed: u64 = gc
                .for_node(&n.name)
                .iter()
                .filter(|e| e.name == "gpu")
                .map(|e| e.count.unwrap_or(e.files.len() as u64))
                .sum();
            if listed > 0 && listed != configured {
                eprintln!(
                    "drover sim: {}: node {} has {listed} GPUs in gres.conf but Gres=gpu:{configured} in {}; the simulation uses slurm.conf's",
                    g.display(),
                    n.name,
                    path.display()
                );
            }
        }
    }
    Ok(cfg)
}

fn shape(cfg: &Config) -> Shape {
    let parts = partitions(cfg)
        .into_iter()
        .filter_map(|name| {
            let p = cfg.partition(&name)?;
            let nodes = cfg.partition_nodes(&name);
            (!nodes.is_empty()).then(|| synthetic::Part {
                node_cpus: nodes.iter().map(|n| n.cpus).collect(),
                node_gpus: nodes
                    .iter()
                    .map(|n| {
                        let t = n
                            .gres
                            .iter()
                            .find(|g| g.name == "gpu")
                            .and_then(|g| g.r#type.clone())
                            .unwrap_or_default();
                        (n.gres_count("gpu") as u32, t)
                    })
                    .collect(),
                max_time: p.max_time_min,
                name,
            })
        })
        .collect();
    Shape {
        partitions: parts,
        total_cpus: cfg.nodes.iter().map(|n| u64::from(n.cpus)).sum(),
    }
}

/// Partition names, the default first.
fn partitions(cfg: &Config) -> Vec<String> {
    let mut p: Vec<String> = cfg.partitions.iter().map(|p| p.name.clone()).collect();
    if let Some(d) = cfg.default_partition() {
        p.retain(|x| *x != d.name);
        p.insert(0, d.name.clone());
    }
    p
}

fn read(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn workload(a: &Args, cfg: &Config) -> Result<Vec<TraceJob>, String> {
    let w: Workload = if let Some(p) = &a.sacct {
        crate::sacct::parse(&read(p)?, &p.display().to_string())
    } else if let Some(p) = &a.swf {
        let order: Vec<String> = cfg.partitions.iter().map(|p| p.name.clone()).collect();
        crate::swf::parse(&read(p)?, &p.display().to_string(), &order)
    } else {
        let n = a.synthetic.unwrap_or(0);
        return Ok(synthetic::generate(n, a.seed, &shape(cfg), a.load));
    };
    for b in &w.bad {
        eprintln!("drover sim: {b}");
    }
    if !w.bad.is_empty() {
        if a.refuse_bad {
            return Err(format!(
                "{} malformed line(s) in the workload (--bad-lines refuse)",
                w.bad.len()
            ));
        }
        eprintln!("drover sim: {} malformed line(s) skipped", w.bad.len());
    }
    Ok(w.jobs)
}

fn simulate(cfg: Config, jobs: Vec<TraceJob>, tick: Option<i64>) -> Outcomes {
    let tick = tick.unwrap_or_else(|| engine::default_tick(&cfg));
    Sim::new(
        cfg,
        jobs,
        Options {
            tick,
            samples: 2000,
        },
    )
    .run()
}

fn write(path: &str, text: &str) -> Result<(), String> {
    if path == "-" {
        print!("{text}");
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))
}

/// The command; returns the exit status.
pub fn run(argv: &[String]) -> i32 {
    let a = match parse_args(argv) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("drover sim: {e}");
            eprint!("{USAGE}");
            return 1;
        }
    };
    drover_proto::logging::init(a.verbose, "drover_ctld=warn");
    match go(&a) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("drover sim: {e}");
            1
        }
    }
}

fn go(a: &Args) -> Result<(), String> {
    let cfg = load_conf(&a.conf, a.gres.as_deref())?;
    let other = match &a.compare {
        Some(p) => Some(load_conf(p, None)?),
        None => None,
    };
    let jobs = workload(a, &cfg)?;
    if jobs.is_empty() {
        return Err("the workload has no job to replay".into());
    }
    let b_jobs = other.as_ref().map(|_| jobs.clone());
    let out = simulate(cfg, jobs, a.tick);
    if let Some(c) = &a.csv {
        write(c, &report::csv(&out))?;
    }
    if let Some(p) = &a.plot {
        let title = format!("drover sim: {}", a.conf.display());
        write(&p.display().to_string(), &crate::svg::plot(&out, &title))?;
    }
    let sa = report::summary(&out);
    match (other, b_jobs, &a.compare) {
        (Some(cfg_b), Some(jobs_b), Some(path_b)) => {
            let out_b = simulate(cfg_b, jobs_b, a.tick);
            let sb = report::summary(&out_b);
            print!(
                "{}",
                report::compare(
                    &sa,
                    &sb,
                    &a.conf.display().to_string(),
                    &path_b.display().to_string()
                )
            );
        }
        _ => print!("{}", report::render(&sa, &out)),
    }
    Ok(())
}
