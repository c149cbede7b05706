//! Starting a step's task processes (blocking; called from spawn_blocking).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::process::Stdio;

use drover_proto::pattern::{expand_path, PatternVars};
use drover_proto::{StepLaunchRequest, StepNode};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::task_env::{task_environment, TaskPlace};
use super::{cpubind, gpubind};
use crate::agent::Shared;
use crate::asuser::Creds;
use crate::cgroup::job::JobCgroup;
use crate::cgroup::plan::{denied_devices, Plan};
use crate::cgroup::Dev;
use crate::job_env::EnvContext;
use crate::stepd::run_script::chdir_plan;
use crate::sys::task::{cpu_set, open_pty, TaskBind, TaskStart};
use drover_proto::bindopt::{parse_cpu_bind, parse_gpu_bind};

/// Slurm's exit code when a task cannot be started (execve failed).
const EXEC_FAILED: i32 = 2;

/// The errno a task's child reports when its switch to the user left a
/// way back to root (nothing else between fork and exec returns it).
const PRIVILEGES_LEFT: i32 = libc::ENOTRECOVERABLE;

pub struct Task {
    pub task_id: u32,
    pub pgid: Option<i32>,
    pub child: Option<Child>,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    /// Exit code reported when the task did not start.
    pub failed_code: i32,
    /// Why it did not start (sent to srun as the task's error output).
    pub failed_msg: String,
    /// `--pty`: the terminal's master side (task 0).
    pub pty: Option<File>,
}

pub struct Started {
    pub tasks: Vec<Task>,
    /// The job's cgroup, when the tasks joined a step group in it.
    pub cgroup: Option<JobCgroup>,
    /// The step made the job's group (no batch script on this node): the
    /// last step of the job here removes it.
    pub owns_job_group: bool,
}

/// Which tasks read srun's stdin (`--input`): "" = task 0, "all", "none",
/// a task number; anything else is a file.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    Task(u32),
    All,
    None,
    File(String),
}

pub fn parse_input(s: &str) -> Input {
    match s {
        "" => Input::Task(0),
        "all" => Input::All,
        "none" => Input::None,
        n => match n.parse::<u32>() {
            Ok(t) => Input::Task(t),
            Err(_) => Input::File(n.to_string()),
        },
    }
}

/// The step group's join files (`Version::join_file`), when the job has
/// cgroups here.
/// On the batch host the supervisor made the job's group (its plan is in
/// the job directory); on the other nodes the step makes it (`owned`).
fn step_cgroup(
    shared: &Shared,
    req: &StepLaunchRequest,
    deny: &[Dev],
) -> (Option<JobCgroup>, Vec<CString>, bool) {
    let job = req.job.clone().unwrap_or_default();
    let dir = crate::jobdir::job_dir(&shared.settings.spool_dir, job.job_id);
    let Some(mine) = crate::batch_launch::cgroup_plan(&shared.settings, &job) else {
        return (None, Vec::new(), false);
    };
    // Emulated nodes share one job directory: the plan there is ours only
    // if it names this node's group.
    let batch_plan = std::fs::read_to_string(dir.join(crate::stepd::CGROUP_PLAN_FILE))
        .ok()
        .and_then(|t| Plan::parse(&t).ok())
        .filter(|p| p.job_rel == mine.job_rel);
    let owned = batch_plan.is_none();
    let plan = batch_plan.unwrap_or(mine);
    let cg = JobCgroup::open(plan);
    if owned {
        if let Err(e) = cg.create() {
            tracing::warn!("job {}: cgroup: {e}", job.job_id);
            return (None, Vec::new(), false);
        }
    }
    // srun --mem is per node.
    let mem = req
        .step
        .as_ref()
        .map(|s| s.mem_mb)
        .filter(|m| *m > 0)
        .map(|m| m.saturating_mul(1 << 20));
    match cg.create_step(&format!("step_{}", req.step_id), mem, deny) {
        Ok(files) => (Some(cg), files, owned),
        Err(e) => {
            tracing::warn!("job {}: step cgroup: {e}", job.job_id);
            (None, Vec::new(), false)
        }
    }
}

/// The job's GPUs on this node (node indices, ascending).
fn job_gpus(req: &StepLaunchRequest) -> Vec<u32> {
    let job = req.job.clone().unwrap_or_default();
    crate::allocation::gpus_on_node(&crate::allocation::of(&job), &job.node)
}

/// The devices of the node a process may not open when its GPUs are
/// `gpus` (the job's other GRES stay allowed).
fn denied_for(shared: &Shared, req: &StepLaunchRequest, gpus: &[u32]) -> Vec<Dev> {
    let job = req.job.clone().unwrap_or_default();
    let Some(node) = shared.settings.nodes.iter().find(|n| n.name == job.node) else {
        return Vec::new();
    };
    let alloc = crate::allocation::of(&job);
    let allowed: Vec<(String, u32)> = crate::allocation::on_node(&alloc, &job.node)
        .into_iter()
        .flat_map(|a| a.gres.iter())
        .flat_map(|g| g.indices.iter().map(|i| (g.name.clone(), *i)))
        .filter(|(n, i)| n != "gpu" || gpus.contains(i))
        .collect();
    let dev_of = |f: &str| crate::cgroup::char_dev(f);
    denied_devices(&node.gres, &allowed, &dev_of)
}

/// With ConstrainDevices, the devices a group may not open that its parent
/// may: the job's GPUs that are not the step's (`inner` = the step's GPUs,
/// `outer` = None), or the step's that are not the task's. Empty when the
/// inner list has them all, or there is no list.
fn extra_denied(
    shared: &Shared,
    req: &StepLaunchRequest,
    outer: Option<&[u32]>,
    inner: &[u32],
) -> Vec<Dev> {
    if !shared.settings.cgroup_conf.constrain_devices || inner.is_empty() {
        return Vec::new();
    }
    let all = job_gpus(req);
    let parent = denied_for(shared, req, outer.unwrap_or(&all));
    denied_for(shared, req, inner)
        .into_iter()
        .filter(|d| !parent.contains(d))
        .collect()
}

/// Open a task's output file as the job's user (never as root: the user
/// names the path); `truncate` starts it afresh (the first task of the step
/// on this node to use it), else output is appended.
fn open_output(path: &str, creds: Creds, truncate: bool) -> std::io::Result<File> {
    crate::asuser::run(creds, || {
        OpenOptions::new()
            .create(true)
            .append(true)
            .truncate(false)
            .mode(0o644)
            .open(path)
            .and_then(|f| {
                if truncate {
                    f.set_len(0)?;
                }
                Ok(f)
            })
    })
}

pub fn start_tasks(shared: &Shared, req: &StepLaunchRequest, this: &StepNode) -> Started {
    let job = req.job.clone().unwrap_or_default();
    let step = req.step.clone().unwrap_or_default();
    let spec = job.spec.clone().unwrap_or_default();
    let deny = extra_denied(shared, req, None, &this.gpu_ids);
    let (cgroup, join, owns_job_group) = step_cgroup(shared, req, &deny);
    let node_conf = shared.settings.nodes.iter().find(|n| n.name == job.node);
    let topo = cpubind::Topo {
        sockets: node_conf.map_or(1, |n| n.sockets.max(1)),
        cores: node_conf.map_or(this.cpus, |n| n.cores_per_socket.max(1)),
        threads: node_conf.map_or(1, |n| n.threads_per_core.max(1)),
    };
    let step_cpus: Vec<u32> = if this.cpu_ids.is_empty() {
        (0..this.cpus).collect()
    } else {
        this.cpu_ids.clone()
    };
    let cpu_opt = parse_cpu_bind(&step.cpu_bind).unwrap_or_default();
    let cpu_plan = cpubind::plan(
        &cpu_opt,
        shared.live().task_affinity,
        topo,
        &cpubind::Step {
            cpus: &step_cpus,
            ntasks: this.task_ids.len() as u32,
            cpus_per_task: step.cpus_per_task.max(1),
        },
    );
    if let Some(e) = &cpu_plan.error {
        tracing::warn!("job {} step {}: {e}", job.job_id, req.step_id);
    }
    let gpu_opt = parse_gpu_bind(&step.gpu_bind).unwrap_or_default();
    let mut step_gpus = this.gpu_ids.clone();
    step_gpus.sort_unstable();
    let all_gpus = job_gpus(req);
    let gpus = gpubind::Gpus {
        step: &step_gpus,
        job: &all_gpus,
        constrained: shared.settings.cgroup_conf.constrain_devices,
        gpus_per_task: step.gpus_per_task,
        ntasks: this.task_ids.len() as u32,
    };
    let mut extra = cpu_plan.env.clone();
    if !step.gpu_bind.is_empty() {
        extra.push(("SLURM_GPU_BIND".into(), step.gpu_bind.clone()));
    }
    let host_cpus = crate::hostinfo::online_cpus();
    let (home, shell) = crate::stepd::sys::user_home_shell(job.uid);
    let conf = shared.settings.config_path.to_string_lossy().into_owned();
    let ctx = EnvContext {
        task_pid: 0,
        conf_path: &conf,
        home: home.as_deref(),
        shell: shell.as_deref(),
        now: crate::stepd::sys::now_secs(),
        // As for the batch script: with a device cgroup CUDA sees only the
        // job's GPUs, numbered from 0.
        local_gpu_index: cgroup.as_ref().is_some_and(|c| !c.plan.deny.is_empty()),
        step_gpus_only: cgroup.is_some() && !deny.is_empty(),
    };
    // As the batch script: the task enters its directory as the user and,
    // when it cannot, runs in /tmp with Slurm's line on its stderr.
    let cwd = [step.cwd.as_str(), spec.work_dir.as_str()]
        .into_iter()
        .find(|d| !d.is_empty())
        .unwrap_or("/tmp")
        .to_string();
    let chdir = chdir_plan(&cwd);
    let input = parse_input(&step.input);
    let step_text = req.step_id.to_string();
    let mut truncated: Vec<String> = Vec::new();
    // The user's groups as initgroups gives them (see sys::creds).
    let job_groups = crate::sys::creds::job_groups(job.uid, job.gid, &job.groups);
    let creds = Creds {
        uid: job.uid,
        gid: job.gid,
        groups: &job_groups,
    };
    let mut tasks = Vec::new();
    for (local, &task_id) in this.task_ids.iter().enumerate() {
        let mine = gpubind::task_gpus(&gpu_opt, &gpus, local as u32).filter(|m| *m != step_gpus);
        // With ConstrainDevices the task gets a device group of its own.
        let mut task_join = join.clone();
        let mut own_devices = false;
        if let (Some(cg), Some(m)) = (&cgroup, &mine) {
            let tdeny = extra_denied(shared, req, Some(&step_gpus), m);
            if !tdeny.is_empty() {
                match cg.create_task(
                    &format!("step_{}", req.step_id),
                    local as u32,
                    &tdeny,
                    &join,
                ) {
                    Ok(files) => {
                        task_join = files;
                        own_devices = true;
                    }
                    Err(e) => {
                        tracing::warn!("job {} task {task_id}: device group: {e}", job.job_id)
                    }
                }
            }
        }
        let mut env = task_environment(
            req,
            this,
            TaskPlace {
                task_id,
                local_id: local as u32,
                gpus: mine.as_deref(),
                own_devices,
                extra: &extra,
            },
            &ctx,
        );
        let mut bind = TaskBind::default();
        let set = cpu_plan.sets.get(local).cloned().flatten();
        if let Some(ids) = &set {
            bind.cpus = Some(cpu_set(ids, host_cpus));
        }
        if let Some(e) = &cpu_plan.error {
            bind.before_pid
                .extend_from_slice(format!("slurmstepd: error: {e}\n").as_bytes());
        }
        if let Some(name) = cpu_plan.verbose {
            let applied: Option<Vec<u32>> = set
                .as_ref()
                .map(|s| s.iter().map(|c| c % host_cpus.max(1)).collect());
            let (a, b) = cpubind::verbose_parts(
                name,
                &this.node,
                task_id,
                local as u32,
                applied.as_deref(),
                &step_cpus,
            );
            bind.before_pid.extend_from_slice(a.as_bytes());
            bind.after_pid = b.clone().into_bytes();
            bind.after_pid_failed = b.replace(" set\n", " set FAILED\n").into_bytes();
        }
        if gpu_opt.verbose && !step_gpus.is_empty() {
            let visible = env
                .iter()
                .find(|(k, _)| k == "CUDA_VISIBLE_DEVICES")
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            let line = gpubind::verbose_line(
                mine.as_deref().unwrap_or(&step_gpus),
                &step_gpus,
                local as u32,
                visible,
            );
            if bind.after_pid.is_empty() {
                bind.before_pid.extend_from_slice(line.as_bytes());
            } else {
                bind.after_pid.extend_from_slice(line.as_bytes());
                bind.after_pid_failed.extend_from_slice(line.as_bytes());
            }
        }
        let vars = PatternVars {
            job_id: job.job_id,
            array_job_id: job.job_id,
            array_task_id: None,
            job_name: &spec.name,
            node: &this.node,
            user: &job.user_name,
            node_id: this.node_id,
            task_id,
            step: &step_text,
        };
        let mut task = Task {
            task_id,
            pgid: None,
            child: None,
            stdin: None,
            stdout: None,
            stderr: None,
            failed_code: EXEC_FAILED,
            failed_msg: String::new(),
            pty: None,
        };
        let Some(prog) = step.argv.first() else {
            tasks.push(task);
            continue;
        };
        let mut cmd = Command::new(prog);
        // The environment is installed in the child (with its pid in
        // SLURM_TASK_PID), not given to Command.
        crate::sys::task_pid::reserve(&mut env);
        let envp = crate::sys::task_pid::Envp::new(&env);
        cmd.args(&step.argv[1..]).kill_on_drop(false);
        let file = |pattern: &str, truncated: &mut Vec<String>| -> Stdio {
            if pattern == "none" || pattern == "/dev/null" {
                return Stdio::null();
            }
            let path = expand_path(pattern, &vars, &cwd);
            // Truncate once per step on this node; tasks sharing a file append.
            let first = !truncated.contains(&path);
            if first {
                truncated.push(path.clone());
            }
            match open_output(&path, creds, first) {
                Ok(f) => Stdio::from(f),
                Err(_) => Stdio::null(),
            }
        };
        let stdin = match &input {
            Input::All => Stdio::piped(),
            Input::Task(t) if *t == task_id => Stdio::piped(),
            Input::File(p) => {
                match crate::asuser::run(creds, || File::open(expand_path(p, &vars, &cwd))) {
                    Ok(f) => Stdio::from(f),
                    Err(_) => Stdio::null(),
                }
            }
            _ => Stdio::null(),
        };
        let pty = if step.pty && task_id == 0 {
            match open_pty(job.uid, job.gid) {
                Ok(p) => Some(p),
                Err(e) => {
                    task.failed_msg =
                        format!("slurmstepd: error: cannot open a pseudo-terminal: {e}\n");
                    tasks.push(task);
                    continue;
                }
            }
        } else {
            None
        };
        cmd.stdin(stdin);
        if let Some((_, slave)) = &pty {
            let io = |f: &File| {
                f.try_clone()
                    .map(Stdio::from)
                    .unwrap_or_else(|_| Stdio::null())
            };
            cmd.stdin(io(slave)).stdout(io(slave)).stderr(io(slave));
        } else if step.output.is_empty() {
            cmd.stdout(Stdio::piped());
        } else {
            cmd.stdout(file(&step.output, &mut truncated));
        }
        if pty.is_some() {
            // stderr is the terminal too.
        } else if step.error.is_empty() {
            if step.output.is_empty() {
                cmd.stderr(Stdio::piped());
            } else {
                cmd.stderr(file(&step.output, &mut truncated));
            }
        } else {
            cmd.stderr(file(&step.error, &mut truncated));
        }
        let (uid, gid) = (job.uid, job.gid);
        crate::sys::task::set_task_start(
            &mut cmd,
            TaskStart {
                ctty: pty.is_some(),
                join: task_join,
                bind,
                uid,
                gid,
                groups: job_groups.clone(),
                chdir: chdir.clone(),
                privileges_left: PRIVILEGES_LEFT,
                envp,
            },
        );
        match cmd.spawn() {
            Ok(mut child) => {
                task.pgid = child.id().map(|p| p as i32);
                task.stdin = child.stdin.take();
                task.stdout = child.stdout.take();
                task.stderr = child.stderr.take();
                task.child = Some(child);
                task.pty = pty.map(|(m, _)| m);
            }
            Err(e) if e.raw_os_error() == Some(PRIVILEGES_LEFT) => {
                let msg = format!(
                    "cannot drop privileges to uid {uid}: root could be regained after the switch"
                );
                tracing::error!("task {task_id}: {msg}");
                task.failed_msg = format!("slurmstepd: error: {msg}\n");
            }
            Err(e) => {
                let msg = e.to_string();
                let msg = msg.split(" (os error").next().unwrap_or(&msg);
                tracing::debug!("task {task_id}: execve({prog}): {msg}");
                task.failed_msg = format!("slurmstepd: error: execve(): {prog}: {msg}\n");
            }
        }
        tasks.push(task);
    }
    Started {
        tasks,
        cgroup,
        owns_job_group,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_forms() {
        assert_eq!(parse_input(""), Input::Task(0));
        assert_eq!(parse_input("3"), Input::Task(3));
        assert_eq!(parse_input("all"), Input::All);
        assert_eq!(parse_input("none"), Input::None);
        assert_eq!(parse_input("in.txt"), Input::File("in.txt".into()));
    }
}
