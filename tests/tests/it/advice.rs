//! Why a job failed and what to ask for next time, through the real
//! daemons: a cgroup OOM kill gets OUT_OF_MEMORY and a concrete --mem in
//! seff; a script that dies of "CUDA out of memory" gets the GPU OOM
//! finding in scontrol show job, sacct's SystemComment and seff, with the
//! cluster's bigger GPU types; seff summarises arrays; `drover advise`
//! groups a user's recent jobs.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use drover_tests::{Cluster, Spec};

/// The message PyTorch prints when a CUDA allocation fails, as the end of
/// a traceback.
const TORCH_OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. \
GPU 0 has a total capacity of 14.58 GiB of which 9.56 MiB is free. Including non-PyTorch memory, \
this process has 14.57 GiB memory in use. Of the allocated memory 14.38 GiB is allocated by \
PyTorch, and 61.51 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory \
is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  \
See documentation for Memory Management  \
(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";

/// `drover advise ARGS` against the test cluster.
fn advise(c: &Cluster, args: &[&str]) -> Output {
    Command::new(drover_tests::bin_dir().join("drover"))
        .arg("advise")
        .args(args)
        .env("DROVER_CONF", &c.conf)
        .env_remove("SLURM_CONF")
        .current_dir(c.path())
        .output()
        .expect("run drover advise")
}

fn advise_ok(c: &Cluster, args: &[&str]) -> String {
    let o = advise(c, args);
    assert!(
        o.status.success(),
        "drover advise {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn seff(c: &Cluster, id: &str) -> String {
    c.ok("seff", &[id])
}

/// seff once the record of `id` in accounting is final (records arrive
/// after the job ends).
fn seff_when_final(c: &Cluster, id: u32, state: &str) -> String {
    c.wait_sacct(
        &["-j", &id.to_string(), "-X", "-P", "-n", "-o", "JobID,State"],
        Duration::from_secs(60),
        |t| t.contains(&format!("{id}|{state}")),
    );
    seff(c, &id.to_string())
}

#[test]
fn gpu_oom_is_reported_everywhere_with_bigger_gpu_types() {
    let topology = "GresTypes=gpu\n\
         NodeName=node1 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Gres=gpu:t4:1\n\
         NodeName=node2 NodeAddr=127.0.0.1 Port={AGENT_PORT} CPUs=4 RealMemory=4000 Gres=gpu:l40s:1\n\
         PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP\n"
        .to_string();
    let c = Cluster::start(Spec {
        topology: Some(topology),
        accounting: Some("sqlite".into()),
        ..Spec::default()
    });
    // stderr joined into stdout (no -e): the agent reads the -o file.
    let out = c.path().join("train.out");
    let g = c.sbatch(
        &[
            "--gres=gpu:t4:1",
            "-t",
            "60",
            "-J",
            "train",
            "-o",
            out.to_str().unwrap(),
        ],
        &format!(
            "#!/bin/sh\necho 'epoch 1: loss 0.93'\n\
             echo 'Traceback (most recent call last):' >&2\n\
             echo '  File \"train.py\", line 12, in <module>' >&2\n\
             echo '{TORCH_OOM}' >&2\nexit 1\n"
        ),
    );
    // An array: task 1 completes, task 2 fails for another reason, task 3
    // runs out of GPU memory (ROCm's words this time), each with its own -e.
    let err = c.path().join("arr-%a.err");
    let a = c.sbatch(
        &[
            "--array=1-3",
            "-t",
            "60",
            "-o",
            "/dev/null",
            "-e",
            err.to_str().unwrap(),
        ],
        "#!/bin/sh\ncase $SLURM_ARRAY_TASK_ID in\n\
         2) echo 'ValueError: bad shape' >&2; exit 1;;\n\
         3) echo 'torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB' >&2; exit 1;;\n\
         esac\nexit 0\n",
    );
    c.expect_end(g, "FAILED");
    let gid = g.to_string();
    // scontrol show job: Slurm's SystemComment line.
    let show = c.ok("scontrol", &["show", "job", &gid]);
    assert!(
        show.contains(
            "SystemComment=GPU out of memory: torch.OutOfMemoryError: CUDA out of memory. \
             Tried to allocate 20.00 GiB."
        ),
        "{show}"
    );
    assert!(show.contains("ExitCode=1:0"), "{show}");
    // sacct's SystemComment.
    let acct = c.wait_sacct(
        &[
            "-j",
            &gid,
            "-X",
            "-P",
            "-n",
            "-o",
            "JobID,State,SystemComment",
        ],
        Duration::from_secs(60),
        |t| t.contains("|FAILED|"),
    );
    assert!(
        acct.starts_with(&format!(
            "{g}|FAILED|GPU out of memory: torch.OutOfMemoryError: CUDA out of memory."
        )),
        "{acct}"
    );
    // seff: Slurm's lines first, then the failure and the advice naming
    // the cluster's GPU type with more memory.
    let s = seff_when_final(&c, g, "FAILED");
    assert!(s.starts_with(&format!("Job ID: {g}\n")), "{s}");
    assert!(s.contains("State: FAILED (exit code 1)\n"), "{s}");
    let failure = s
        .find("Failure: GPU out of memory: torch.OutOfMemoryError")
        .expect(&s);
    assert!(failure > s.find("Memory Efficiency").unwrap(), "{s}");
    assert!(
        s.contains(
            "Advice: Out of GPU memory: the job needed more than its t4 GPU (16 GiB) holds; \
             use a smaller batch size, or a GPU type with more memory: l40s (48 GiB) \
             (e.g. --gres=gpu:l40s:1).\n"
        ),
        "{s}"
    );
    // The array: one summary.
    for t in 1..=3 {
        c.wait_state(
            &format!("{a}_{t}"),
            &["COMPLETED", "FAILED"],
            Duration::from_secs(60),
        );
    }
    let plain = c.ok("scontrol", &["show", "job", &format!("{a}_2")]);
    assert!(!plain.contains("SystemComment"), "{plain}");
    c.wait_sacct(
        &["-j", &a.to_string(), "-X", "-P", "-n", "-o", "JobID,State"],
        Duration::from_secs(60),
        |t| t.lines().count() == 3 && !t.contains("RUNNING") && !t.contains("PENDING"),
    );
    let s = seff(&c, &a.to_string());
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines[0], format!("Array Job ID: {a}"), "{s}");
    assert!(s.contains("Tasks: 3 (COMPLETED 1, FAILED 2)\n"), "{s}");
    assert!(
        s.contains("Failure: 1 task(s) ran out of GPU memory\n"),
        "{s}"
    );
    // Task 3 had no GPU of its own (it printed ROCm's message anyway).
    assert!(
        s.contains(
            "Advice: Out of GPU memory, with no GPU allocated to the job: ask for one with \
             --gres=gpu:TYPE:N; types here: t4 (16 GiB), l40s (48 GiB).\n"
        ),
        "{s}"
    );
    // One task: its own report.
    let one = seff(&c, &format!("{a}_3"));
    assert!(
        one.contains("Failure: GPU out of memory: torch.OutOfMemoryError: HIP out of memory."),
        "{one}"
    );
    // drover advise: the jobs of the last week, grouped.
    let adv = advise_ok(&c, &["--since", "1"]);
    assert!(adv.starts_with("Jobs of "), "{adv}");
    assert!(adv.contains(" that ended in the last 1 days: 4 ("), "{adv}");
    assert!(
        adv.contains("- 1 job ran out of GPU memory (GPU t4): the job needed more than its t4 GPU"),
        "{adv}"
    );
    assert!(adv.contains(&format!("    jobs: {g}\n")), "{adv}");
    assert!(
        adv.contains("- 1 job asked --time=01:00:00 and ran 00:00:0"),
        "the completed task: {adv}"
    );
    assert!(adv.contains(": ask --time=00:05:00\n"), "{adv}");
    let bad = advise(&c, &["--since", "x"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid --since 'x'"));
}

fn root() -> bool {
    drover_proto::sys::is_root()
}

#[test]
fn host_oom_gets_a_concrete_mem() {
    if !root() || !Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists() {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let c = Cluster::start(Spec {
        nodes: 1,
        mem_mb: 200,
        accounting: Some("sqlite".into()),
        files: vec![("cgroup.conf".into(), "ConstrainRAMSpace=yes\n".into())],
        ..Spec::default()
    });
    let id = c.sbatch(
        &["--mem=32M", "-o", "/dev/null"],
        "#!/bin/sh\nperl -e '$x = \"a\" x 268435456'\n",
    );
    c.expect_end(id, "OUT_OF_MEMORY");
    let s = seff_when_final(&c, id, "OUT_OF_MEMORY");
    assert!(s.contains("State: OUT_OF_MEMORY (exit code 0)\n"), "{s}");
    assert!(
        s.contains(
            "Advice: Out of memory: peak memory reached the 32 MiB limit; ask --mem=128M.\n"
        ),
        "{s}"
    );
    assert!(!s.contains("Failure:"), "a host OOM is no GPU failure: {s}");
    // A request the node cannot grow into: capped, then refused.
    let big = c.sbatch(
        &["--mem=150M", "-o", "/dev/null"],
        "#!/bin/sh\nperl -e '$x = \"a\" x 268435456'\n",
    );
    c.expect_end(big, "OUT_OF_MEMORY");
    let s = seff_when_final(&c, big, "OUT_OF_MEMORY");
    assert!(
        s.contains(
            "Advice: Out of memory: peak memory reached the 150 MiB limit; \
             ask --mem=200M (the most a node of partition debug has).\n"
        ),
        "{s}"
    );
    let adv = advise_ok(&c, &["-u", "root"]);
    assert!(
        adv.contains("- 1 job ran out of memory with --mem=32M: ask --mem=128M\n"),
        "{adv}"
    );
    assert!(adv.contains(&format!("    jobs: {id}\n")), "{adv}");
}

/// The agent reads a job's stderr with the job user's rights: a user who
/// swaps the file for a link to a file only root may read gets nothing
/// from it (and learns nothing about it).
#[test]
fn stderr_is_read_with_the_users_rights() {
    if !root() {
        eprintln!("needs root (a job of another user)");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let secret = c.path().join("secret");
    std::fs::write(&secret, "RuntimeError: CUDA out of memory (root's file)\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dir = c.path().join("nobody");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let submit = |name: &str, body: &str| -> u32 {
        let script = dir.join(format!("{name}.sh"));
        std::fs::write(&script, body).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = dir.join(format!("{name}.err"));
        let o = c.run_as(
            65534,
            "sbatch",
            &[
                "--parsable",
                "-D",
                dir.to_str().unwrap(),
                "-o",
                "/dev/null",
                "-e",
                err.to_str().unwrap(),
                script.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    // The user's own message is found...
    let own = submit(
        "own",
        "#!/bin/sh\necho 'RuntimeError: CUDA error: out of memory' >&2\nexit 1\n",
    );
    // ...a root-only file behind a link is not.
    let swap = submit(
        "swap",
        &format!(
            "#!/bin/sh\nrm -f {e}\nln -s {s} {e}\nexit 1\n",
            e = dir.join("swap.err").display(),
            s = secret.display()
        ),
    );
    c.expect_end(own, "FAILED");
    c.expect_end(swap, "FAILED");
    let show = c.ok("scontrol", &["show", "job", &own.to_string()]);
    assert!(
        show.contains("SystemComment=GPU out of memory: RuntimeError: CUDA error: out of memory"),
        "{show}"
    );
    let show = c.ok("scontrol", &["show", "job", &swap.to_string()]);
    assert!(!show.contains("SystemComment"), "{show}");
    assert!(std::fs::symlink_metadata(dir.join("swap.err"))
        .unwrap()
        .file_type()
        .is_symlink());
}
