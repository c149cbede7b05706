//! What clients see: JobInfo / NodeInfo / PartitionInfo built from state.

use drover_conf::hostlist;
use drover_proto::pattern::{expand_path, PatternVars};
use drover_proto::{JobInfo, JobState, NodeInfo, PartitionInfo, INFINITE};

use drover_conf::slurmconf::Config;

use crate::ctld::Ctld;
use crate::job::Job;
use crate::users::NameCache;

fn mem_text(mb: u64) -> String {
    if mb > 0 && mb.is_multiple_of(1024) {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

impl Ctld {
    /// Everything about a job (launches, scontrol, waiters).
    pub fn job_info(&mut self, job: &Job) -> JobInfo {
        let mut i = job_info(&self.cfg, &mut self.names, job, true, self.now);
        self.add_expected_start(&mut i);
        i
    }

    /// A job by id; `details` adds expanded paths and per-node allocations.
    pub fn job_info_by_id(&mut self, id: u32, details: bool) -> Option<JobInfo> {
        let job = self.jobs.get(&id)?;
        let mut i = job_info(&self.cfg, &mut self.names, job, details, self.now);
        self.add_expected_start(&mut i);
        Some(i)
    }

    /// A pending job's start time is the one backfill planned (Slurm's
    /// expected start), its end that plus the time limit.
    pub(crate) fn add_expected_start(&self, i: &mut JobInfo) {
        if i.state != JobState::Pending as i32 {
            return;
        }
        if let Some(&s) = self.sched.expected.get(&i.job_id) {
            i.start_time = s;
            i.end_time = if i.time_limit == INFINITE || i.time_limit == 0 {
                0
            } else {
                s + i64::from(i.time_limit) * 60
            };
        }
    }
}

/// JobInfo of one job. Without `details`, the fields squeue's common formats
/// never show (expanded output paths, per-node allocation, TRES strings, work
/// dir, command, group, comment, features, dependency, node lists, mail,
/// wckey) are left empty: a 10,000-job queue is then a small message, cheap
/// to build and to decode. Clients ask for `details` when they show them.
pub fn job_info(
    cfg: &Config,
    names: &mut NameCache,
    job: &Job,
    details: bool,
    now: i64,
) -> JobInfo {
    let mut i = JobInfo::default();
    fill_job_info(cfg, names, job, details, now, &mut i);
    i
}

/// `dst` = `src`, in `dst`'s buffer (no allocation once it is big enough).
fn set(dst: &mut String, src: &str) {
    dst.clear();
    dst.push_str(src);
}

/// [`set`] with `details`, else empty.
fn set_detail(dst: &mut String, details: bool, src: &str) {
    dst.clear();
    if details {
        dst.push_str(src);
    }
}

/// [`job_info`] written over `out`, every field of it, reusing its strings'
/// buffers: a listing fills one scratch record per job and encodes it
/// (`jobwire.rs`), allocating nothing for most jobs.
pub fn fill_job_info(
    cfg: &Config,
    names: &mut NameCache,
    job: &Job,
    details: bool,
    now: i64,
    out: &mut JobInfo,
) {
    let spec = job.spec();
    let rt = job.rt();
    let state = job.state();
    let user = names.user(job.rec.uid);
    let running = !rt.alloc.is_empty();
    // Counts come from the resolved request (partition defaults
    // applied at submit), the allocation once running.
    let no_request;
    let req = match job.request() {
        Some(r) => r,
        None => {
            no_request = Default::default();
            &no_request
        }
    };
    let want = crate::request::totals(req);
    let cpt = req.cpus_per_task.max(1);
    let n_cpus = if running {
        rt.alloc.iter().map(|a| a.cpus).sum()
    } else {
        want.cpus as u32
    };
    let n_nodes = if running {
        rt.alloc.len() as u32
    } else {
        req.min_nodes.max(1)
    };
    let (min_mem, per_cpu) = match crate::request::min_memory(req) {
        // --exclusive without --mem: the node's memory, once known.
        (0, _) => (rt.alloc.first().map_or(0, |a| a.mem_mb), false),
        m => m,
    };
    // Every field, by name: a field added to JobInfo must be set here (a
    // reused record would otherwise show the previous job's value).
    let JobInfo {
        job_id,
        array_job_id,
        array_task_id,
        array_pending,
        array_max_running,
        is_array_meta,
        state: state_out,
        state_reason,
        reason_detail,
        user_id,
        user_name,
        group_id,
        group_name,
        name,
        partition,
        account,
        qos,
        priority,
        nice,
        time_limit,
        submit_time,
        eligible_time,
        start_time,
        end_time,
        suspend_time,
        nodes,
        req_nodes,
        exc_nodes,
        num_nodes,
        num_cpus,
        num_tasks,
        cpus_per_task,
        min_memory_mb,
        mem_per_cpu,
        tres_per_node,
        tres_req,
        tres_alloc,
        features,
        dependency,
        work_dir,
        std_out,
        std_err,
        std_in,
        command,
        exit_code,
        exit_signal,
        restart_count,
        requeue,
        exclusive,
        comment,
        batch_host,
        hold,
        alloc,
        pre_sus_time,
        submit_host,
        reservation,
        derived_exit_code,
        cancelled_by,
        min_cpus_per_node,
        array_spec,
        wckey,
        ntasks_per_node,
        gres_detail,
        batch_flag,
        oom,
        mail_type,
        mail_user,
        time_min,
        steps,
        oversubscribe,
        stopped,
        system_comment,
        last_changed,
    } = out;
    nodes.clear();
    if running {
        let node_names: Vec<&str> = rt.alloc.iter().map(|a| a.node.as_str()).collect();
        nodes.push_str(&hostlist::compress(&node_names));
    }
    tres_req.clear();
    tres_alloc.clear();
    if details {
        let total_mem: u64 = if running {
            rt.alloc.iter().map(|a| a.mem_mb).sum()
        } else {
            want.mem
        };
        let gpus: u64 = if running {
            rt.alloc
                .iter()
                .flat_map(|a| a.gres.iter())
                .filter(|g| g.name == "gpu")
                .map(|g| g.indices.len() as u64 + g.count)
                .sum()
        } else {
            want.gpus
        };
        use std::fmt::Write;
        let _ = write!(
            tres_req,
            "cpu={n_cpus},mem={},node={n_nodes},billing={n_cpus}",
            mem_text(total_mem)
        );
        if gpus > 0 {
            let _ = write!(tres_req, ",gres/gpu={gpus}");
        }
        if running {
            tres_alloc.push_str(tres_req);
        }
    }
    tres_per_node.clear();
    if !spec.gres.is_empty() {
        for (k, g) in spec.gres.split(',').enumerate() {
            if k > 0 {
                tres_per_node.push(',');
            }
            tres_per_node.push_str("gres/");
            tres_per_node.push_str(g.trim_start_matches("gres/"));
        }
    } else if spec.gpus_per_node > 0 {
        use std::fmt::Write;
        let _ = if spec.gpus_type.is_empty() {
            write!(tres_per_node, "gres/gpu:{}", spec.gpus_per_node)
        } else {
            write!(
                tres_per_node,
                "gres/gpu:{}:{}",
                spec.gpus_type, spec.gpus_per_node
            )
        };
    }
    if details {
        let vars = PatternVars {
            job_id: job.id(),
            array_job_id: if rt.array_job_id != 0 {
                rt.array_job_id
            } else {
                job.id()
            },
            array_task_id: (rt.array_job_id != 0 && !rt.is_array_meta).then_some(rt.array_task_id),
            job_name: &spec.name,
            node: if rt.batch_host.is_empty() {
                "%N"
            } else {
                &rt.batch_host
            },
            user: &user,
            node_id: 0,
            task_id: 0,
            step: "batch",
        };
        let default_out = if rt.array_job_id != 0 {
            "slurm-%A_%a.out"
        } else {
            "slurm-%j.out"
        };
        let out_pat = if spec.std_out.is_empty() {
            default_out
        } else {
            &spec.std_out
        };
        *std_out = expand_path(out_pat, &vars, &spec.work_dir);
        *std_err = if spec.std_err.is_empty() {
            std_out.clone()
        } else {
            expand_path(&spec.std_err, &vars, &spec.work_dir)
        };
        *std_in = if spec.std_in.is_empty() {
            "/dev/null".to_string()
        } else {
            expand_path(&spec.std_in, &vars, &spec.work_dir)
        };
        *gres_detail = rt
            .alloc
            .iter()
            .map(|a| {
                let gpus: Vec<u32> = a
                    .gres
                    .iter()
                    .filter(|g| g.name == "gpu")
                    .flat_map(|g| g.indices.iter().copied())
                    .collect();
                if gpus.is_empty() {
                    String::new()
                } else {
                    format!("gpu(IDX:{})", crate::array::ranges(&gpus))
                }
            })
            .collect::<Vec<_>>()
            .join(";");
        set(group_name, &names.group(job.rec.gid));
        alloc.clone_from(&rt.alloc);
    } else {
        std_out.clear();
        std_err.clear();
        std_in.clear();
        gres_detail.clear();
        group_name.clear();
        alloc.clear();
    }
    *job_id = job.id();
    *array_job_id = rt.array_job_id;
    *array_task_id = rt.array_task_id;
    if job.is_meta() {
        *array_pending = crate::array::ranges(&job.pending_tasks);
    } else {
        array_pending.clear();
    }
    *array_max_running = rt.array_max_running;
    *is_array_meta = rt.is_array_meta;
    *state_out = state as i32;
    set(
        state_reason,
        if rt.reason.is_empty() {
            "None"
        } else {
            &rt.reason
        },
    );
    set_detail(reason_detail, details, &rt.reason_detail);
    *user_id = job.rec.uid;
    set(user_name, &user);
    *group_id = job.rec.gid;
    set(name, &spec.name);
    set(
        partition,
        if rt.partition.is_empty() {
            &spec.partition
        } else {
            &rt.partition
        },
    );
    set(account, &spec.account);
    set(
        qos,
        if spec.qos.is_empty() {
            "normal"
        } else {
            &spec.qos
        },
    );
    *priority = if rt.hold != 0 { 0 } else { rt.priority };
    *nice = spec.nice;
    *time_limit = if rt.time_limit == 0 {
        INFINITE
    } else {
        rt.time_limit
    };
    *submit_time = rt.submit_time;
    // Slurm shows a --begin time not reached yet as EligibleTime.
    *eligible_time = if rt.eligible_time == 0 && state == JobState::Pending {
        spec.begin_time
    } else {
        rt.eligible_time
    };
    *start_time = rt.start_time;
    *stopped = rt.stopped && state == JobState::Running;
    *end_time = if rt.end_time != 0 {
        rt.end_time
    } else {
        crate::suspend::shown_end(rt, state, now).unwrap_or(0)
    };
    *suspend_time = rt.suspend_time;
    set_detail(req_nodes, details, &spec.nodelist);
    set_detail(exc_nodes, details, &spec.exclude);
    *num_nodes = n_nodes;
    *num_cpus = n_cpus;
    *num_tasks = req.ntasks.max(1);
    *cpus_per_task = cpt;
    *min_memory_mb = min_mem;
    *mem_per_cpu = per_cpu;
    set_detail(features, details, &spec.constraint);
    set_detail(dependency, details, &spec.dependency);
    set_detail(work_dir, details, &spec.work_dir);
    set_detail(command, details, &spec.command);
    *exit_code = rt.exit_code;
    *exit_signal = rt.exit_signal;
    *restart_count = rt.restart_count;
    *requeue = spec.requeue;
    *exclusive = spec.exclusive;
    *oversubscribe = if state == JobState::Pending {
        may_share(cfg, spec)
    } else {
        rt.share > 1
    };
    set_detail(comment, details, &spec.comment);
    set(batch_host, &rt.batch_host);
    *hold = rt.hold;
    *pre_sus_time = rt.pre_sus_time;
    set_detail(submit_host, details, &spec.submit_host);
    set(reservation, &spec.reservation);
    *derived_exit_code = 0;
    cancelled_by.clear();
    if rt.cancelled {
        use std::fmt::Write;
        let _ = write!(cancelled_by, "{}", rt.cancelled_by);
    }
    *min_cpus_per_node = spec.min_cpus_per_node.max(cpt);
    set_detail(array_spec, details, &spec.array);
    set_detail(wckey, details, &spec.wckey);
    *ntasks_per_node = spec.ntasks_per_node;
    *batch_flag = true;
    *oom = rt.oom;
    set(system_comment, &rt.system_comment);
    *last_changed = rt.last_changed;
    set_detail(mail_type, details, &spec.mail_type);
    set_detail(mail_user, details, &spec.mail_user);
    *time_min = spec.time_min;
    steps.clear();
    steps.extend(
        rt.steps
            .iter()
            .map(|st| crate::steps::effective(st, state, rt.end_time)),
    );
}

impl Ctld {
    pub fn node_info(&self, i: usize) -> NodeInfo {
        let n = &self.cluster.nodes[i];
        let state = n.state_name();
        let mut flags = String::new();
        if n.drain && !matches!(state, "DRAINED" | "DRAINING") {
            flags.push_str("+DRAIN");
        }
        let powered = n.power == crate::nodepower::Power::On;
        if powered && (!n.responding && n.registered || (!n.registered && n.down)) {
            flags.push_str("+NOT_RESPONDING");
        }
        if n.cloud {
            flags.push_str("+CLOUD");
        }
        flags.push_str(n.power.flag());
        if n.power_down_asap {
            flags.push_str("+POWER_DOWN");
        }
        if let Some(r) = self.node_reservation(n.name(), self.now) {
            flags.push_str(if crate::reservation::is_maint(r) {
                "+MAINT"
            } else {
                "+RESERVED"
            });
        }
        let c = &n.conf;
        let gpus_alloc = n.gres.iter().filter(|d| d.name == "gpu" && !d.free).count();
        let gpus = n.gres.iter().filter(|d| d.name == "gpu").count();
        let mut cfg_tres = format!(
            "cpu={},mem={},billing={}",
            c.cpus,
            mem_text(c.real_memory),
            c.cpus
        );
        if gpus > 0 {
            cfg_tres.push_str(&format!(",gres/gpu={gpus}"));
        }
        let mut alloc_tres = String::new();
        if n.cpus_alloc() > 0 {
            alloc_tres = format!("cpu={},mem={}", n.cpus_alloc(), mem_text(n.alloc_mem));
            if gpus_alloc > 0 {
                alloc_tres.push_str(&format!(",gres/gpu={gpus_alloc}"));
            }
        }
        NodeInfo {
            name: c.name.clone(),
            state: state.to_string(),
            state_flags: flags,
            responding: n.responding || !powered,
            drain: n.drain,
            reason: n.reason.clone(),
            reason_uid: n.reason_uid,
            reason_time: n.reason_time,
            cpus: c.cpus,
            cpus_alloc: n.cpus_alloc(),
            boards: c.boards,
            sockets: c.sockets,
            cores_per_socket: c.cores_per_socket,
            threads_per_core: c.threads_per_core,
            real_memory: c.real_memory,
            alloc_memory: n.alloc_mem,
            free_memory: n.free_mem,
            cpu_load: n.cpu_load,
            features: c.features.clone(),
            active_features: c.features.clone(),
            gres: n.gres_text(),
            gres_used: n.gres_used_text(),
            partitions: n.partitions.clone(),
            weight: c.weight,
            node_addr: n
                .learned_addr
                .clone()
                .unwrap_or_else(|| c.node_addr.clone()),
            node_hostname: c.node_hostname.clone(),
            port: u32::from(if c.port == 0 {
                self.cfg.slurmd_port
            } else {
                c.port
            }),
            boot_time: n.boot_time,
            last_busy: n.last_busy,
            slurmd_start_time: n.agent_start_time,
            version: n.version.clone(),
            os: n.os.clone(),
            tmp_disk: c.tmp_disk,
            alloc_tres,
            cfg_tres,
            running_jobs: n.jobs.len() as u32,
            down: n.down,
        }
    }

    pub fn partition_info(&self, i: usize) -> PartitionInfo {
        let p = &self.cluster.parts[i];
        let c = &p.conf;
        let names: Vec<&str> = p
            .nodes
            .iter()
            .map(|&n| self.cluster.nodes[n].name())
            .collect();
        let list = |v: &Option<Vec<String>>| match v {
            None => "ALL".to_string(),
            Some(v) => v.join(","),
        };
        let total_cpus: u32 = p
            .nodes
            .iter()
            .map(|&n| self.cluster.nodes[n].conf.cpus)
            .sum();
        PartitionInfo {
            name: c.name.clone(),
            is_default: self.cluster.default_part == Some(i),
            state: c.state.to_ascii_uppercase(),
            max_time: c.max_time_min.unwrap_or(INFINITE),
            default_time: c.default_time_min.unwrap_or(0),
            nodes: hostlist::compress(&names),
            node_names: names.iter().map(|s| s.to_string()).collect(),
            allow_groups: list(&c.allow_groups),
            allow_accounts: list(&c.allow_accounts),
            deny_accounts: String::new(),
            allow_qos: "ALL".into(),
            max_nodes: c.max_nodes.unwrap_or(INFINITE),
            min_nodes: c.min_nodes,
            priority_tier: c.priority_tier,
            priority_job_factor: c.priority_job_factor,
            over_subscribe: c.over_subscribe.clone(),
            exclusive_user: c.exclusive_user,
            hidden: c.hidden,
            root_only: c.root_only,
            total_cpus,
            total_nodes: names.len() as u32,
            qos: c.qos.clone().unwrap_or_default(),
            def_mem_per_cpu: c.def_mem_per_cpu.or(self.cfg.def_mem_per_cpu).unwrap_or(0),
            def_mem_per_node: c
                .def_mem_per_node
                .or(self.cfg.def_mem_per_node)
                .unwrap_or(0),
            max_mem_per_cpu: c.max_mem_per_cpu.unwrap_or(0),
            max_mem_per_node: c.max_mem_per_node.unwrap_or(0),
            tres: format!("cpu={total_cpus},node={}", names.len()),
            grace_time: 0,
            preempt_mode: "OFF".into(),
        }
    }
}

/// Whether a pending job would share its CPUs in its (first) partition.
pub(crate) fn may_share(cfg: &Config, spec: &drover_proto::JobSpec) -> bool {
    if spec.exclusive {
        return false;
    }
    let first = spec.partition.split(',').next().unwrap_or("").trim();
    let part = if first.is_empty() {
        cfg.partitions
            .iter()
            .rfind(|p| p.default)
            .or(if cfg.partitions.len() == 1 {
                cfg.partitions.first()
            } else {
                None
            })
    } else {
        cfg.partitions.iter().find(|p| p.name == first)
    };
    part.is_some_and(|p| {
        crate::sched::Share::parse(&p.over_subscribe).limit_for(false, spec.oversubscribe) > 1
    })
}
