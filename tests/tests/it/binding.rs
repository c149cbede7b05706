//! Task binding (issue 10): `--cpu-bind` with TaskPlugin=task/affinity,
//! `--gpus-per-task` and `--gpu-bind`, through the real daemons and srun.

use drover_tests::{Cluster, Spec};

use super::steps::{allocation, srun, text};

/// `Cpus_allowed_list` of each task, by task id, from `-l` output.
fn allowed(out: &str) -> Vec<(u32, String)> {
    let mut v: Vec<(u32, String)> = out
        .lines()
        .filter_map(|l| {
            let (task, rest) = l.split_once(": ")?;
            let list = rest.strip_prefix("Cpus_allowed_list:")?;
            Some((task.trim().parse().ok()?, list.trim().to_string()))
        })
        .collect();
    v.sort();
    v
}

fn one_node(extra: &[&str]) -> Cluster {
    Cluster::start(Spec {
        nodes: 1,
        cpus: 2,
        extra: extra.iter().map(|s| s.to_string()).collect(),
        ..Spec::default()
    })
}

const PROBE: &str = "grep Cpus_allowed_list /proc/self/status; \
     echo BIND=$SLURM_CPU_BIND TYPE=$SLURM_CPU_BIND_TYPE LIST=$SLURM_CPU_BIND_LIST VERBOSE=$SLURM_CPU_BIND_VERBOSE";

#[test]
fn cpu_bind_gives_each_task_its_cpus() {
    let c = one_node(&["TaskPlugin=task/affinity"]);
    let job = allocation(&c, &["-n2"]);
    // cores: one CPU each, different ones, and Slurm's variables.
    let o = srun(
        &c,
        job,
        &["-l", "-n2", "-c1", "--cpu-bind=cores", "sh", "-c", PROBE],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert_eq!(
        allowed(&out),
        vec![(0, "0".into()), (1, "1".into())],
        "{out}"
    );
    assert!(
        out.contains("0: BIND=quiet,mask_cpu:0x1,0x2 TYPE=mask_cpu: LIST=0x1,0x2 VERBOSE=quiet"),
        "{out}"
    );
    // map_cpu, verbose: the other way round, and Slurm's lines on stderr.
    let o = srun(
        &c,
        job,
        &[
            "-l",
            "-n2",
            "--cpu-bind=verbose,map_cpu:1,0",
            "sh",
            "-c",
            PROBE,
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(
        allowed(&out),
        vec![(0, "1".into()), (1, "0".into())],
        "{out}"
    );
    assert!(
        out.contains("1: BIND=verbose,map_cpu:1,0 TYPE=map_cpu: LIST=1,0 VERBOSE=verbose"),
        "{out}"
    );
    for (task, mask) in [(0, "0x2"), (1, "0x1")] {
        let line = err
            .lines()
            .find(|l| l.contains(&format!("cpu-bind=MAP  - node1, task  {task}  {task} [")))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(line.ends_with(&format!("]: mask {mask} set")), "{line}");
    }
    // none: not bound, both CPUs.
    let o = srun(
        &c,
        job,
        &["-l", "-n2", "--cpu-bind=none", "sh", "-c", PROBE],
    );
    let out = text(&o.stdout);
    assert_eq!(
        allowed(&out),
        vec![(0, "0-1".into()), (1, "0-1".into())],
        "{out}"
    );
    assert!(out.contains("BIND=quiet,none TYPE=none LIST= "), "{out}");
    // Bad values: refused with Slurm's words, nothing runs.
    let o = srun(&c, job, &["--cpu-bind=bogus", "true"]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("srun: error: unrecognized --cpu-bind argument \"bogus\"")
            && err.contains("srun: fatal: Failed to parse --cpu-bind= values."),
        "{err}"
    );
    let o = srun(&c, job, &["--gpu-bind=nearest", "true"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("srun: error: Invalid --gpu-bind argument: nearest"),
        "{}",
        text(&o.stderr)
    );
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn without_task_affinity_nothing_is_bound() {
    let c = one_node(&[]);
    let job = allocation(&c, &["-n2"]);
    let o = srun(
        &c,
        job,
        &["-l", "-n2", "--cpu-bind=cores", "sh", "-c", PROBE],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(allowed(&out).iter().all(|(_, l)| l == "0-1"), "{out}");
    assert!(out.contains("0: BIND= TYPE="), "{out}");
    c.ok("scancel", &[&job.to_string()]);
}

/// Per task: (CUDA_VISIBLE_DEVICES, which fake GPUs open, which are denied).
fn gpu_probe(c: &Cluster, job: u32, devs: &str, args: &[&str]) -> (Vec<String>, String) {
    let probe = format!(
        "echo CUDA=$CUDA_VISIBLE_DEVICES; \
         for g in 0 1; do cat {devs}/nvidia$g 2>&1 | sed 's/^cat: //'; done"
    );
    let mut all = vec!["-l", "-n2"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["sh", "-c", &probe]);
    let o = srun(c, job, &all);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let mut per_task: Vec<String> = (0..2)
        .map(|t| {
            out.lines()
                .filter(|l| l.starts_with(&format!("{t}: ")))
                .map(|l| l[3..].to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    per_task
        .iter_mut()
        .for_each(|s| *s = s.replace(&format!("{devs}/"), ""));
    (per_task, text(&o.stderr))
}

#[test]
fn gpus_per_task_with_constrained_devices() {
    let devs = tempfile::tempdir().unwrap();
    let Some(c) = drover_tests::gpu_cluster(devs.path(), "ConstrainDevices=yes\n") else {
        return;
    };
    let d = devs.path().display().to_string();
    let job = allocation(&c, &["--gres=gpu:2", "-n2"]);
    let (t, _) = gpu_probe(&c, job, &d, &["--gpus-per-task=1"]);
    // Each task its own device group: CUDA numbers its one GPU 0, it opens
    // its own (no driver: ENXIO) and not the other task's.
    let own = |s: &str| -> u32 {
        assert!(s.starts_with("CUDA=0|"), "{s}");
        let ok: Vec<u32> = (0..2)
            .filter(|g| s.contains(&format!("nvidia{g}: No such device or address")))
            .collect();
        let denied: Vec<u32> = (0..2)
            .filter(|g| s.contains(&format!("nvidia{g}: Operation not permitted")))
            .collect();
        assert_eq!((ok.len(), denied.len()), (1, 1), "{s}");
        ok[0]
    };
    assert_eq!((own(&t[0]), own(&t[1])), (0, 1), "{t:?}");
    // map_gpu under ConstrainDevices counts among the job's GPUs.
    let (t, err) = gpu_probe(
        &c,
        job,
        &d,
        &["--gpus-per-task=1", "--gpu-bind=verbose,map_gpu:1,0"],
    );
    assert_eq!((own(&t[0]), own(&t[1])), (1, 0), "{t:?}");
    assert!(
        err.contains(
            "gpu-bind: usable_gres=0x2; bit_alloc=0x3; local_inx=0; global_list=1; local_list=0"
        ),
        "{err}"
    );
    // --gpu-bind=none: both tasks see both GPUs.
    let (t, _) = gpu_probe(&c, job, &d, &["--gpus-per-task=1", "--gpu-bind=none"]);
    assert!(t.iter().all(|s| s.starts_with("CUDA=0,1|")), "{t:?}");
    assert!(t.iter().all(|s| !s.contains("not permitted")), "{t:?}");
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn gpus_per_task_without_device_constraint() {
    let devs = tempfile::tempdir().unwrap();
    let Some(c) = drover_tests::gpu_cluster(devs.path(), "") else {
        return;
    };
    let d = devs.path().display().to_string();
    let job = allocation(&c, &["--gres=gpu:2", "-n2"]);
    let cuda = |t: &[String]| -> Vec<String> {
        t.iter()
            .map(|s| s.split('|').next().unwrap_or_default().to_string())
            .collect()
    };
    let (t, _) = gpu_probe(&c, job, &d, &["--gpus-per-task=1"]);
    assert_eq!(cuda(&t), vec!["CUDA=0", "CUDA=1"], "{t:?}");
    let (t, _) = gpu_probe(
        &c,
        job,
        &d,
        &["--gpus-per-task=1", "--gpu-bind=map_gpu:1,0"],
    );
    assert_eq!(cuda(&t), vec!["CUDA=1", "CUDA=0"], "{t:?}");
    let (t, _) = gpu_probe(&c, job, &d, &["--gpus=2", "--gpu-bind=single:2"]);
    assert_eq!(cuda(&t), vec!["CUDA=0", "CUDA=0"], "{t:?}");
    c.ok("scancel", &[&job.to_string()]);
}
