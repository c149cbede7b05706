//! Job steps (issue 6): srun inside an allocation, task fan-out, I/O,
//! exit codes, signals, accounting.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use drover_tests::{Cluster, Spec};

const WAIT: Duration = Duration::from_secs(60);

/// A running allocation on `nodes` nodes (a batch job that sleeps).
pub(crate) fn allocation(c: &Cluster, args: &[&str]) -> u32 {
    let mut all = vec!["-o", "/dev/null"];
    all.extend_from_slice(args);
    let id = c.sbatch(&all, "#!/bin/sh\nsleep 300\n");
    c.wait_state(&id.to_string(), &["RUNNING"], WAIT);
    id
}

/// srun with nothing from the allocation but SLURM_JOB_ID (as tools do).
pub(crate) fn srun_cmd(c: &Cluster, job: u32, args: &[&str]) -> Command {
    let mut cmd = c.cmd("srun");
    for (k, _) in std::env::vars() {
        if k.starts_with("SLURM_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("SLURM_JOB_ID", job.to_string()).args(args);
    cmd
}

pub(crate) fn srun(c: &Cluster, job: u32, args: &[&str]) -> Output {
    srun_cmd(c, job, args)
        .stdin(Stdio::null())
        .output()
        .expect("run srun")
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn fan_out_with_labels_and_task_environment() {
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-N2", "--ntasks-per-node=2"]);
    let o = srun(
        &c,
        job,
        &[
            "-l",
            "-n4",
            "-N2",
            "sh",
            "-c",
            "echo $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME $SLURM_STEP_ID $SLURM_STEP_NUM_TASKS $SLURM_STEP_NUM_NODES $SLURM_STEP_NODELIST $SLURM_JOB_ID",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            format!("0: 0 0 0 node1 0 4 2 node[1-2] {job}"),
            format!("1: 1 1 0 node1 0 4 2 node[1-2] {job}"),
            format!("2: 2 0 1 node2 0 4 2 node[1-2] {job}"),
            format!("3: 3 1 1 node2 0 4 2 node[1-2] {job}"),
        ],
        "stderr: {}",
        text(&o.stderr)
    );
    // The next step gets the next id; squeue -s / scontrol show step list it
    // while it runs.
    let mut child = srun_cmd(&c, job, &["-n1", "sleep", "37.25"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let step = format!("{job}.1");
    let mut seen = String::new();
    for _ in 0..400 {
        seen = c.ok("squeue", &["-s", "-h", "-o", "%i %j %N"]);
        if seen.contains(&step) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen.contains(&format!("{step} sleep node1")), "{seen}");
    let show = c.ok("scontrol", &["show", "step", &step]);
    assert!(show.contains(&format!("StepId={step}")), "{show}");
    assert!(show.contains("State=RUNNING"), "{show}");
    // Killing srun cleans up the step (a loaded machine may take a while:
    // waiting on the outcome, not timing it).
    child.kill().unwrap();
    let _ = child.wait();
    for _ in 0..2400 {
        seen = c.ok("squeue", &["-s", "-h", "-o", "%i"]);
        if !seen.contains(&step) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(!seen.contains(&step), "{seen}");
    // ... and its task.
    let mut left = drover_tests::pids_mentioning("sleep 37.25");
    for _ in 0..2400 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        left = drover_tests::pids_mentioning("sleep 37.25");
    }
    assert!(left.is_empty(), "task still running: {left:?}");
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn stdin_exit_codes_and_errors() {
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-N2", "-n2"]);
    // sh -s with a script on stdin: stdin goes to task 0.
    let mut child = srun_cmd(&c, job, &["sh", "-s"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"echo from-stdin $SLURM_PROCID\nexit 0\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "from-stdin 0\n");
    // Highest exit code wins, with Slurm's report per task.
    let o = srun(
        &c,
        job,
        &["-n2", "-N2", "sh", "-c", "exit $((SLURM_PROCID + 2))"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("srun: error: node1: task 0: Exited with exit code 2"),
        "{err}"
    );
    assert!(
        err.contains("srun: error: node2: task 1: Exited with exit code 3"),
        "{err}"
    );
    // A killed task: 128+signal.
    let o = srun(&c, job, &["-n1", "sh", "-c", "kill -9 $$"]);
    assert_eq!(o.status.code(), Some(137), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("task 0: Killed"),
        "{}",
        text(&o.stderr)
    );
    // A command that does not exist.
    let o = srun(&c, job, &["-n1", "/no/such/program"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("execve"), "{}", text(&o.stderr));
    // Too big for the allocation.
    let o = srun(&c, job, &["-N3", "true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("Requested node configuration is not available"),
        "{}",
        text(&o.stderr)
    );
    // --output file per task.
    let o = srun(
        &c,
        job,
        &[
            "-n2",
            "-N2",
            "-o",
            "out-%j-%t.txt",
            "sh",
            "-c",
            "echo task $SLURM_PROCID",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    for t in 0..2 {
        let f = c.path().join(format!("out-{job}-{t}.txt"));
        assert_eq!(std::fs::read_to_string(&f).unwrap(), format!("task {t}\n"));
    }
    // --kill-on-bad-exit: one failing task ends the others.
    let o = srun(
        &c,
        job,
        &[
            "-K",
            "-n2",
            "-N2",
            "sh",
            "-c",
            "if [ $SLURM_PROCID = 1 ]; then exit 4; fi; sleep 60",
        ],
    );
    assert!(o.status.code().unwrap_or(0) >= 4, "{:?}", o.status);
    // A step outside a running job is refused.
    let o = srun(&c, 999_999, &["true"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("Invalid job id"),
        "{}",
        text(&o.stderr)
    );
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn ctrl_c_forwards_sigint() {
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n1"]);
    let marker = c.path().join("ready");
    let script = format!(
        "trap 'echo got-int; exit 7' INT; touch {}; while true; do sleep 0.05; done",
        marker.display()
    );
    let child = srun_cmd(&c, job, &["-n1", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.wait_file(&marker, |_| true);
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("got-int"));
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn steps_inside_sbatch_reach_accounting() {
    let c = Cluster::start(Spec {
        accounting: Some("sqlite".into()),
        // Slurm records the ID.extern step with Contain.
        extra: vec!["PrologFlags=Contain".into()],
        ..Spec::default()
    });
    let out = c.path().join("steps.out");
    let id = c.sbatch(
        &["-N2", "-n2", "-o", &out.display().to_string()],
        "#!/bin/sh\nsrun -n2 -N2 -l hostname >/dev/null\nsrun -n1 sh -c 'echo step $SLURM_STEP_ID; exit 3'\nexit 0\n",
    );
    c.expect_end(id, "COMPLETED");
    let o = std::fs::read_to_string(&out).unwrap();
    assert!(o.contains("step 1"), "{o}");
    let t = c.wait_sacct(
        &[
            "-j",
            &id.to_string(),
            "-P",
            "-n",
            "-o",
            "JobID,State,ExitCode,NTasks",
        ],
        WAIT,
        // The allocation's final record (the steps' came before it).
        |t| t.contains(&format!("{id}.extern|COMPLETED")),
    );
    assert!(t.contains(&format!("{id}.0|COMPLETED|0:0|2")), "{t}");
    assert!(t.contains(&format!("{id}.1|FAILED|3:0|1")), "{t}");
    assert!(t.contains(&format!("{id}.batch|")), "{t}");
    assert!(t.contains(&format!("{id}.extern|COMPLETED|0:0|2")), "{t}");
    // Slurm's order: the allocation, batch, extern, then numbered steps.
    let ids: Vec<&str> = t.lines().filter_map(|l| l.split('|').next()).collect();
    let want: Vec<String> = ["", ".batch", ".extern", ".0", ".1"]
        .iter()
        .map(|s| format!("{id}{s}"))
        .collect();
    assert_eq!(ids, want, "{t}");
}

#[test]
fn salloc_grants_runs_and_releases() {
    let c = Cluster::start(Spec::default());
    let o = c
        .cmd("salloc")
        .args([
            "-N2",
            "sh",
            "-c",
            "echo job=$SLURM_JOB_ID nodes=$SLURM_JOB_NODELIST; srun -l -N2 printenv SLURM_STEP_ID; exit 3",
        ])
        .env_remove("SLURM_JOB_ID")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let granted = err
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .unwrap_or_else(|| panic!("{err}"))
        .to_string();
    assert!(
        err.contains(&format!("salloc: Relinquishing job allocation {granted}")),
        "{err}"
    );
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("job={granted} nodes=node[1-2]")),
        "{out}"
    );
    assert!(out.contains("0: 0\n") && out.contains("1: 0\n"), "{out}");
    // Released: the job ended with the command's exit code.
    let id: u32 = granted.parse().unwrap();
    assert_eq!(c.wait_done(id), "FAILED");
    assert_eq!(c.job_field(&granted, "ExitCode").as_deref(), Some("3:0"));

    // A busy cluster: salloc says it waits, then gets the nodes.
    let blocker = c.sbatch(
        &["-N2", "--exclusive", "-o", "/dev/null"],
        "#!/bin/sh\nsleep 300\n",
    );
    c.wait_state(&blocker.to_string(), &["RUNNING"], WAIT);
    let log = c.path().join("salloc.err");
    let child = c
        .cmd("salloc")
        .args(["-N1", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pending = c.wait_file(&log, |t| t.contains("queued and waiting for resources"));
    assert!(
        pending.contains("salloc: Pending job allocation"),
        "{pending}"
    );
    c.ok("scancel", &[&blocker.to_string()]);
    let o = child.wait_with_output().unwrap();
    let err = std::fs::read_to_string(&log).unwrap();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("salloc: Granted job allocation"), "{err}");
}

#[test]
fn srun_outside_an_allocation_makes_one() {
    let c = Cluster::start(Spec::default());
    let o = c
        .cmd("srun")
        .args(["-N2", "-n2", "-l", "-J", "mine", "printenv", "SLURM_NODEID"])
        .env_remove("SLURM_JOB_ID")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let mut lines: Vec<String> = text(&o.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, vec!["0: 0", "1: 1"]);
    let q = c.ok("squeue", &["-h", "-t", "all", "-n", "mine", "-o", "%i %T"]);
    assert!(q.trim().ends_with("COMPLETED"), "{q}");
}

/// Drives `srun --pty` through a pseudo-terminal (python3's pty module):
/// the remote side is a terminal of the given size that follows resizes,
/// Ctrl-C interrupts the foreground command, Ctrl-Z stops it, and the
/// shell's exit status is srun's.
const PTY_DRIVER: &str = r#"
import fcntl, os, pty, select, struct, sys, termios, time
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack('HHHH', 33, 111, 0, 0))
    os.execvp(sys.argv[1], sys.argv[1:])
buf = b''
def until(pat, send=None, t=30):
    global buf
    end = time.time() + t
    while pat not in buf:
        if send is not None:
            os.write(fd, send)
        r, _, _ = select.select([fd], [], [], 0.5 if send else max(0.0, end - time.time()))
        if time.time() > end:
            sys.exit('timeout waiting for %r in %r' % (pat, buf))
        if r:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                sys.exit('eof waiting for %r in %r' % (pat, buf))
os.write(fd, b'tty; stty size; echo mark-$((6*7))\r')
until(b'mark-42')
assert b'/dev/pts/' in buf and b'33 111' in buf, buf
os.write(fd, b'echo start-$((2+3)); sleep 100\r')
until(b'start-5')
time.sleep(0.2)
os.write(fd, b'\x03')
os.write(fd, b'echo back-$((3+4))\r')
until(b'back-7')
os.write(fd, b'echo z-$((1+8)); sleep 100\r')
until(b'z-9')
time.sleep(0.2)
os.write(fd, b'\x1a')
until(b'Stopped')
os.write(fd, b'kill -9 %1\r')
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 100, 0, 0))
until(b'40 100', send=b'stty size\r')
os.write(fd, b'exit 5\r')
while True:
    try:
        if not os.read(fd, 4096):
            break
    except OSError:
        break
_, status = os.waitpid(pid, 0)
print('exit', os.waitstatus_to_exitcode(status))
"#;

#[test]
fn pty_is_a_real_terminal() {
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n1"]);
    let driver = c.script("pty_driver.py", PTY_DRIVER);
    let o = Command::new("python3")
        .arg(&driver)
        .env("DROVER_CONF", &c.conf)
        .env_remove("SLURM_CONF")
        .env(
            "PATH",
            format!(
                "{}:{}",
                c.bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .current_dir(c.path())
        .args(["srun", "--pty", "bash", "--norc", "--noprofile"])
        .env("SLURM_JOB_ID", job.to_string())
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert_eq!(text(&o.stdout).trim(), "exit 5");
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn steps_get_their_own_cgroup_under_the_job() {
    let root = drover_proto::sys::geteuid() == 0;
    let memory = std::path::Path::new("/sys/fs/cgroup/memory");
    if !root || !memory.join("cgroup.procs").exists() {
        eprintln!("needs root and the v1 memory controller");
        return;
    }
    let c = Cluster::start(Spec {
        files: vec![("cgroup.conf".into(), "ConstrainRAMSpace=yes\n".into())],
        ..Spec::default()
    });
    let job = allocation(&c, &["-N2", "--mem=100M"]);
    let o = srun(
        &c,
        job,
        &[
            "-N2",
            "-n2",
            "-l",
            "sh",
            "-c",
            "grep memory /proc/self/cgroup",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let port = c.agent_port;
    for (t, node) in [(0, "node1"), (1, "node2")] {
        let want = format!("{t}: ");
        let line = out
            .lines()
            .find(|l| l.starts_with(&want))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(
            line.ends_with(&format!("/drover/{node}_{port}/job_{job}/step_0")),
            "{out}"
        );
    }
    // The job's limit holds on the node without the batch script too, and
    // that node's job group goes away with the step.
    let other = memory.join(format!("drover/node2_{port}/job_{job}"));
    let mut gone = false;
    for _ in 0..400 {
        if !other.exists() {
            gone = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(gone, "{} left behind", other.display());
    assert!(memory
        .join(format!("drover/node1_{port}/job_{job}"))
        .is_dir());
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn concurrent_steps_share_the_allocation() {
    let c = Cluster::start(Spec {
        nodes: 1,
        ..Spec::default()
    });
    let job = allocation(&c, &["-n2"]);
    // Step 0 holds both CPUs.
    let mut first = srun_cmd(&c, job, &["-n2", "sleep", "41.5"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let step0 = format!("{job}.0");
    let mut seen = String::new();
    for _ in 0..400 {
        seen = c.ok("squeue", &["-s", "-h", "-o", "%i %A"]);
        if seen.contains(&step0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(seen.contains(&format!("{step0} 2")), "{seen}");
    // --overlap shares them at once.
    let o = srun(&c, job, &["--overlap", "-n1", "echo", "shared"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "shared\n");
    // Otherwise a step waits for CPUs, saying so, and runs when they free up.
    let log = c.path().join("wait.err");
    let waiting = srun_cmd(&c, job, &["-n1", "echo", "after"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let msg = c.wait_file(&log, |t| t.contains("temporarily disabled"));
    assert!(
        msg.contains(&format!(
            "srun: Job {job} step creation temporarily disabled, retrying (Requested nodes are busy)"
        )),
        "{msg}"
    );
    // Ctrl-C reaches step 0's tasks: sleep dies of SIGINT (130).
    let _ = drover_proto::sys::kill(first.id() as i32, libc::SIGINT);
    let st = first.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    let o = waiting.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );
    assert_eq!(text(&o.stdout), "after\n");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("srun: Step created for StepId="));
    c.ok("scancel", &[&job.to_string()]);
}

#[test]
fn second_ctrl_c_within_a_second_kills_the_step() {
    let c = Cluster::start(Spec::default());
    let job = allocation(&c, &["-n1"]);
    let marker = c.path().join("ready2");
    let script = format!(
        "trap 'echo ignored' INT; touch {}; while true; do sleep 0.05; done",
        marker.display()
    );
    let out = c.path().join("ctrlc.out");
    let child = srun_cmd(&c, job, &["-n1", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.wait_file(&marker, |_| true);
    // The first Ctrl-C reaches the task (which ignores it) ...
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGINT);
    c.wait_file(&out, |t| t.contains("ignored"));
    // ... a second one within the second kills the step.
    let _ = drover_proto::sys::kill(child.id() as i32, libc::SIGINT);
    let o = child.wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(137), "{err}");
    assert!(err.contains("srun: forcing job termination"), "{err}");
    assert!(err.contains("task 0: Killed"), "{err}");
    c.ok("scancel", &[&job.to_string()]);
}
