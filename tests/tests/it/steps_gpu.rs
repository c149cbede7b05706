//! Job steps and GPUs (issue 6): a step sees its job's GPUs and nothing
//! else, and concurrent steps get GPUs of their own.

use std::process::Stdio;

use drover_tests::Cluster;

use super::steps::{allocation, srun, srun_cmd, text};

/// A one-node cluster with two fake GPUs and a device cgroup.
fn gpu_cluster(devs: &std::path::Path) -> Option<Cluster> {
    drover_tests::gpu_cluster(devs, "ConstrainDevices=yes\n")
}

#[test]
fn steps_see_the_jobs_gpus_and_nothing_else() {
    let devs = tempfile::tempdir().unwrap();
    let Some(c) = gpu_cluster(devs.path()) else {
        return;
    };
    let d = devs.path().display().to_string();
    let job = allocation(&c, &["--gres=gpu:1"]);
    let probe = format!(
        "echo CUDA=$CUDA_VISIBLE_DEVICES JOBGPUS=$SLURM_JOB_GPUS; \
         cat {d}/nvidia0 2>&1 | sed 's/^cat: //'; cat {d}/nvidia1 2>&1 | sed 's/^cat: //'"
    );
    let o = srun(&c, job, &["sh", "-c", &probe]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("CUDA=0 JOBGPUS="), "{out}");
    let gpu: u32 = out
        .split("JOBGPUS=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|g| g.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    // Own GPU opens (no driver: ENXIO), the other one is denied.
    assert!(
        out.contains(&format!("nvidia{gpu}: No such device or address")),
        "{out}"
    );
    assert!(
        out.contains(&format!("nvidia{}: Operation not permitted", 1 - gpu)),
        "{out}"
    );
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn steps_get_their_own_gpus() {
    let devs = tempfile::tempdir().unwrap();
    let Some(c) = gpu_cluster(devs.path()) else {
        return;
    };
    let job = allocation(&c, &["--gres=gpu:2", "-n2"]);
    let go = c.path().join("gpu-go");
    let a_out = c.path().join("a.out");
    let script = format!(
        "echo $SLURM_STEP_GPUS $CUDA_VISIBLE_DEVICES; while [ ! -e {} ]; do sleep 0.02; done",
        go.display()
    );
    let a = srun_cmd(&c, job, &["--gpus=1", "-n1", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&a_out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let first = c.wait_file(&a_out, |t| t.ends_with('\n'));
    let d = devs.path().display().to_string();
    let probe = format!(
        "echo $SLURM_STEP_GPUS $CUDA_VISIBLE_DEVICES; \
         cat {d}/nvidia0 2>&1 | sed 's/^cat: //'; cat {d}/nvidia1 2>&1 | sed 's/^cat: //'"
    );
    let o = srun(&c, job, &["--gpus=1", "-n1", "sh", "-c", &probe]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let second = text(&o.stdout);
    // One GPU each, different ones; each step's own device group hides the
    // other, so CUDA numbers its one GPU 0 (as Slurm with ConstrainDevices).
    let parse = |t: &str| -> (u32, u32) {
        let v: Vec<u32> = t
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(v.len(), 2, "{t}");
        (v[0], v[1])
    };
    let (ga, ca) = parse(&first);
    let (gb, cb) = parse(&second);
    assert_ne!(ga, gb, "{first} / {second}");
    assert_eq!((ca, cb), (0, 0), "{first} / {second}");
    // Its own GPU opens (no driver: ENXIO), the job's other one is denied.
    assert!(
        second.contains(&format!("nvidia{gb}: No such device or address")),
        "{second}"
    );
    assert!(
        second.contains(&format!("nvidia{ga}: Operation not permitted")),
        "{second}"
    );
    // A step wanting more GPUs than the job has is refused at once (even
    // while its CPUs are busy).
    let o = srun(&c, job, &["--gpus=3", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("Invalid generic resource (gres) specification"),
        "{}",
        text(&o.stderr)
    );
    std::fs::write(&go, "").unwrap();
    let mut a = a;
    assert!(a.wait().unwrap().success());
    c.ok("scancel", &[&job.to_string()]);
}
