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
    {
        let spec = job.spec();
        let rt = job.rt();
        let state = job.state();
        let user = names.user(job.rec.uid);
        let group = names.group(job.rec.gid);
        let node_names: Vec<&str> = rt.alloc.iter().map(|a| a.node.as_str()).collect();
        let nodes = if node_names.is_empty() {
            String::new()
        } else {
            hostlist::compress(&node_names)
        };
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
        let ntasks = req.ntasks.max(1);
        let num_cpus = if running {
            rt.alloc.iter().map(|a| a.cpus).sum()
        } else {
            want.cpus as u32
        };
        let num_nodes = if running {
            rt.alloc.len() as u32
        } else {
            req.min_nodes.max(1)
        };
        let (min_mem, per_cpu) = match crate::request::min_memory(req) {
            // --exclusive without --mem: the node's memory, once known.
            (0, _) => (rt.alloc.first().map_or(0, |a| a.mem_mb), false),
            m => m,
        };
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
        let mut tres = String::new();
        if details {
            tres = format!(
                "cpu={num_cpus},mem={},node={num_nodes},billing={num_cpus}",
                mem_text(total_mem)
            );
            if gpus > 0 {
                tres.push_str(&format!(",gres/gpu={gpus}"));
            }
        }
        let mut tres_per_node = String::new();
        if !spec.gres.is_empty() {
            tres_per_node = spec
                .gres
                .split(',')
                .map(|g| format!("gres/{}", g.trim_start_matches("gres/")))
                .collect::<Vec<_>>()
                .join(",");
        } else if spec.gpus_per_node > 0 {
            tres_per_node = if spec.gpus_type.is_empty() {
                format!("gres/gpu:{}", spec.gpus_per_node)
            } else {
                format!("gres/gpu:{}:{}", spec.gpus_type, spec.gpus_per_node)
            };
        }
        let array_job_id = rt.array_job_id;
        let batch_host = rt.batch_host.clone();
        let vars = PatternVars {
            job_id: job.id(),
            array_job_id: if array_job_id != 0 {
                array_job_id
            } else {
                job.id()
            },
            array_task_id: (array_job_id != 0 && !rt.is_array_meta).then_some(rt.array_task_id),
            job_name: &spec.name,
            node: if batch_host.is_empty() {
                "%N"
            } else {
                &batch_host
            },
            user: &user,
            node_id: 0,
            task_id: 0,
            step: "batch",
        };
        let default_out = if array_job_id != 0 {
            "slurm-%A_%a.out"
        } else {
            "slurm-%j.out"
        };
        let out_pat = if spec.std_out.is_empty() {
            default_out
        } else {
            &spec.std_out
        };
        let (std_out, std_err, std_in) = if details {
            let std_out = expand_path(out_pat, &vars, &spec.work_dir);
            let std_err = if spec.std_err.is_empty() {
                std_out.clone()
            } else {
                expand_path(&spec.std_err, &vars, &spec.work_dir)
            };
            let std_in = if spec.std_in.is_empty() {
                "/dev/null".to_string()
            } else {
                expand_path(&spec.std_in, &vars, &spec.work_dir)
            };
            (std_out, std_err, std_in)
        } else {
            Default::default()
        };
        let gres_detail = if !details {
            String::new()
        } else {
            rt.alloc
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
                .join(";")
        };
        let derived_pending = if job.is_meta() {
            crate::array::ranges(&job.pending_tasks)
        } else {
            String::new()
        };
        JobInfo {
            job_id: job.id(),
            array_job_id,
            array_task_id: rt.array_task_id,
            array_pending: derived_pending,
            array_max_running: rt.array_max_running,
            is_array_meta: rt.is_array_meta,
            state: state as i32,
            state_reason: if rt.reason.is_empty() {
                "None".into()
            } else {
                rt.reason.clone()
            },
            reason_detail: if details {
                rt.reason_detail.clone()
            } else {
                String::new()
            },
            user_id: job.rec.uid,
            user_name: user.to_string(),
            group_id: job.rec.gid,
            group_name: if details {
                group.to_string()
            } else {
                String::new()
            },
            name: spec.name.clone(),
            partition: if rt.partition.is_empty() {
                spec.partition.clone()
            } else {
                rt.partition.clone()
            },
            account: spec.account.clone(),
            qos: if spec.qos.is_empty() {
                "normal".into()
            } else {
                spec.qos.clone()
            },
            priority: if rt.hold != 0 { 0 } else { rt.priority },
            nice: spec.nice,
            time_limit: if rt.time_limit == 0 {
                INFINITE
            } else {
                rt.time_limit
            },
            submit_time: rt.submit_time,
            // Slurm shows a --begin time not reached yet as EligibleTime.
            eligible_time: if rt.eligible_time == 0 && state == JobState::Pending {
                spec.begin_time
            } else {
                rt.eligible_time
            },
            start_time: rt.start_time,
            stopped: rt.stopped && state == JobState::Running,
            end_time: if rt.end_time != 0 {
                rt.end_time
            } else {
                crate::suspend::shown_end(rt, state, now).unwrap_or(0)
            },
            suspend_time: rt.suspend_time,
            nodes,
            req_nodes: if details {
                spec.nodelist.clone()
            } else {
                String::new()
            },
            exc_nodes: if details {
                spec.exclude.clone()
            } else {
                String::new()
            },
            num_nodes,
            num_cpus,
            num_tasks: ntasks,
            cpus_per_task: cpt,
            min_memory_mb: min_mem,
            mem_per_cpu: per_cpu,
            tres_per_node,
            tres_req: tres.clone(),
            tres_alloc: if running { tres } else { String::new() },
            features: if details {
                spec.constraint.clone()
            } else {
                String::new()
            },
            dependency: if details {
                spec.dependency.clone()
            } else {
                String::new()
            },
            work_dir: if details {
                spec.work_dir.clone()
            } else {
                String::new()
            },
            std_out,
            std_err,
            std_in,
            command: if details {
                spec.command.clone()
            } else {
                String::new()
            },
            exit_code: rt.exit_code,
            exit_signal: rt.exit_signal,
            restart_count: rt.restart_count,
            requeue: spec.requeue,
            exclusive: spec.exclusive,
            oversubscribe: if job.state() == JobState::Pending {
                may_share(cfg, spec)
            } else {
                rt.share > 1
            },
            comment: if details {
                spec.comment.clone()
            } else {
                String::new()
            },
            batch_host,
            hold: rt.hold,
            alloc: if details {
                rt.alloc.clone()
            } else {
                Vec::new()
            },
            pre_sus_time: rt.pre_sus_time,
            submit_host: if details {
                spec.submit_host.clone()
            } else {
                String::new()
            },
            reservation: spec.reservation.clone(),
            derived_exit_code: 0,
            cancelled_by: if rt.cancelled {
                rt.cancelled_by.to_string()
            } else {
                String::new()
            },
            min_cpus_per_node: spec.min_cpus_per_node.max(cpt),
            array_spec: if details {
                spec.array.clone()
            } else {
                String::new()
            },
            wckey: if details {
                spec.wckey.clone()
            } else {
                String::new()
            },
            ntasks_per_node: spec.ntasks_per_node,
            gres_detail,
            batch_flag: true,
            oom: rt.oom,
            system_comment: rt.system_comment.clone(),
            last_changed: rt.last_changed,
            mail_type: if details {
                spec.mail_type.clone()
            } else {
                String::new()
            },
            mail_user: if details {
                spec.mail_user.clone()
            } else {
                String::new()
            },
            time_min: spec.time_min,
            steps: rt
                .steps
                .iter()
                .map(|st| crate::steps::effective(st, state, rt.end_time))
                .collect(),
        }
    }
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
        !spec.exclusive
            && crate::sched::Share::parse(&p.over_subscribe).limit(&crate::sched::Request {
                oversubscribe: spec.oversubscribe,
                ..Default::default()
            }) > 1
    })
}
