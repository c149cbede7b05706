//! The job srun asks for when it runs outside an allocation: the
//! allocation options of its command line and input variables, as sbatch
//! takes them.

use crate::opts;

/// The job srun allocates when run outside an allocation.
pub fn alloc_spec(p: &opts::Parsed) -> Result<drover_proto::JobSpec, String> {
    const SHARED: &[&str] = &[
        "ntasks",
        "nodes",
        "ntasks-per-node",
        "cpus-per-task",
        "nodelist",
        "exclusive",
        "oversubscribe",
        "gpus",
        "gpus-per-node",
        "gpus-per-task",
        "gres",
        "mem",
        "mem-per-cpu",
        "job-name",
        "partition",
        "time",
        "account",
        "qos",
        "chdir",
        "dependency",
        "overcommit",
        "begin",
        "clusters",
        "comment",
        "constraint",
        "cpus-per-gpu",
        "distribution",
        "exclude",
        "gpu-bind",
        "gres-flags",
        "hold",
        "mail-type",
        "mail-user",
        "mem-bind",
        "mem-per-gpu",
        "mincpus",
        "nice",
        "nodefile",
        "priority",
        "reservation",
        "signal",
        "wckey",
    ];
    let now = crate::timefmt::now();
    let mut o = crate::sbatch::options::SbatchOpts::default();
    for f in p.opts.iter().filter(|f| SHARED.contains(&f.key)) {
        o.apply(f.key, f.value.as_deref(), now)?;
    }
    o.read_nodefile()?;
    let cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .map_err(|e| format!("getcwd failed: {e}"))?;
    let prog = p.positional.first().cloned().unwrap_or_default();
    let ctx = crate::sbatch::spec::Context {
        env: std::env::vars().collect(),
        cwd,
        host: drover_proto::auth::hostname(),
        script: Vec::new(),
        script_args: Vec::new(),
        default_name: std::path::Path::new(&prog)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or(prog.clone()),
        command: p.positional.join(" "),
    };
    Ok(crate::sbatch::spec::build(&o, &ctx))
}
