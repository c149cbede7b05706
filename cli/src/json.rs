//! `--json` output shaped like Slurm 23.11's (data_parser v0.0.40):
//! `{"jobs"|"nodes"|"partitions"|"sinfo": [...], "meta": {...},
//! "errors": [], "warnings": []}`. Pure.

use serde_json::{Map, Value};

use drover_proto::{JobInfo, JobState, NodeInfo, PartitionInfo, INFINITE};

use crate::jsonw::{to_value, Envelope, J};
use crate::nodestate::NodeState;
use crate::squeue::format::{self as jf, ArrayKind, Row};

pub const DATA_PARSER: &str = "data_parser/v0.0.40";

pub fn to_pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".to_string())
}

fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Map<_, _>>(),
    )
}

fn s(x: &str) -> Value {
    Value::String(x.to_string())
}

/// Slurm's `{"set", "infinite", "number"}` number object.
pub fn num(n: i64) -> Value {
    obj(vec![
        ("set", Value::Bool(true)),
        ("infinite", Value::Bool(false)),
        ("number", Value::from(n)),
    ])
}

fn unset() -> Value {
    obj(vec![
        ("set", Value::Bool(false)),
        ("infinite", Value::Bool(false)),
        ("number", Value::from(0)),
    ])
}

fn infinite() -> Value {
    obj(vec![
        ("set", Value::Bool(true)),
        ("infinite", Value::Bool(true)),
        ("number", Value::from(0)),
    ])
}

/// A minutes/count value where INFINITE means unlimited.
fn num_inf(n: u32) -> Value {
    if n == INFINITE {
        infinite()
    } else {
        num(i64::from(n))
    }
}

fn num_or_unset(n: i64) -> Value {
    if n == 0 {
        unset()
    } else {
        num(n)
    }
}

fn strings(v: &[&str]) -> Value {
    Value::Array(v.iter().map(|x| s(x)).collect())
}

/// The `meta` object.
pub fn meta_j<'a>(command: &'a [String], cluster: &'a str) -> J<'a> {
    let user = crate::users::user_name(crate::users::uid());
    let group = crate::users::user_of(crate::users::uid())
        .map(|(_, g)| crate::users::group_name(g))
        .unwrap_or_default();
    J::Obj(vec![
        (
            "plugin",
            J::Obj(vec![
                ("type", J::Str("")),
                ("name", J::Str("")),
                ("data_parser", J::Str(DATA_PARSER)),
                ("accounting_storage", J::Str("")),
            ]),
        ),
        (
            "client",
            J::Obj(vec![
                ("source", J::Str("")),
                ("user", J::String(user)),
                ("group", J::String(group)),
            ]),
        ),
        (
            "command",
            J::Arr(command.iter().map(|c| J::Str(c)).collect()),
        ),
        (
            "slurm",
            J::Obj(vec![
                (
                    "version",
                    J::Obj(vec![
                        ("major", J::Str(crate::SLURM_MAJOR)),
                        ("micro", J::Str(crate::SLURM_MICRO)),
                        ("minor", J::Str(crate::SLURM_MINOR)),
                    ]),
                ),
                ("release", J::Str(crate::SLURM_VERSION)),
                ("cluster", J::Str(cluster)),
            ]),
        ),
    ])
}

pub fn meta(command: &[String], cluster: &str) -> Value {
    to_value(&meta_j(command, cluster))
}

fn envelope(key: &str, items: Vec<Value>, extra: Vec<(&str, Value)>, meta: Value) -> Value {
    let mut pairs = vec![(key, Value::Array(items))];
    pairs.extend(extra);
    pairs.push(("meta", meta));
    pairs.push(("errors", Value::Array(Vec::new())));
    pairs.push(("warnings", Value::Array(Vec::new())));
    obj(pairs)
}

fn exit_code<'a>(code: i32, signal: i32, state: JobState) -> J<'a> {
    let status = if signal != 0 {
        "SIGNALED"
    } else if code != 0 {
        "ERROR"
    } else if state.is_final() || state == JobState::Completing {
        "SUCCESS"
    } else {
        "PENDING"
    };
    J::Obj(vec![
        ("status", J::strs(&[status])),
        ("return_code", J::num(i64::from(code))),
        (
            "signal",
            J::Obj(vec![
                (
                    "id",
                    if signal != 0 {
                        J::num(i64::from(signal))
                    } else {
                        J::unset()
                    },
                ),
                ("name", J::Str("")),
            ]),
        ),
    ])
}

fn jnum_inf<'a>(n: u32) -> J<'a> {
    if n == INFINITE {
        J::infinite()
    } else {
        J::num(i64::from(n))
    }
}

fn jlist(x: &str) -> J<'_> {
    J::Arr(
        x.split(',')
            .filter(|p| !p.is_empty())
            .map(|p| J::Str(p.trim()))
            .collect(),
    )
}

/// One job in Slurm's JSON shape.
pub fn job<'a>(row: &Row<'a>, now: i64, cluster: &'a str) -> J<'a> {
    let j: &'a JobInfo = row.job;
    let state = jf::state_of(row);
    let (task_id, task_string) = match jf::array_kind(row) {
        ArrayKind::NotArray => (J::unset(), J::Str("")),
        ArrayKind::Task(t) => (J::num(i64::from(t)), J::Str("")),
        ArrayKind::Meta(p) => (J::unset(), J::Str(p)),
    };
    let time_used = jf::time_used(j, state, now);
    let end_time = if j.time_limit == INFINITE && j.end_time > now {
        0
    } else {
        j.end_time
    };
    let mem_per_cpu = if j.mem_per_cpu {
        J::num(j.min_memory_mb as i64)
    } else {
        J::unset()
    };
    let mem_per_node = if j.mem_per_cpu {
        J::unset()
    } else {
        J::num(j.min_memory_mb as i64)
    };
    J::Obj(vec![
        ("account", J::Str(&j.account)),
        ("accrue_time", J::num(j.eligible_time)),
        ("allocating_node", J::Str(&j.submit_host)),
        ("array_job_id", J::num(i64::from(j.array_job_id))),
        ("array_task_id", task_id),
        ("array_max_tasks", J::num(i64::from(j.array_max_running))),
        ("array_task_string", task_string),
        ("association_id", J::num(0)),
        ("batch_flag", J::Bool(j.batch_flag)),
        ("batch_host", J::Str(&j.batch_host)),
        ("flags", J::Arr(Vec::new())),
        ("cluster", J::Str(cluster)),
        ("command", J::Str(&j.command)),
        ("comment", J::Str(&j.comment)),
        ("contiguous", J::Bool(false)),
        ("cpus_per_task", J::num(i64::from(j.cpus_per_task.max(1)))),
        ("deadline", J::num(0)),
        ("delay_boot", J::num(0)),
        ("dependency", J::Str(&j.dependency)),
        (
            "derived_exit_code",
            exit_code(j.derived_exit_code as i32, 0, state),
        ),
        ("eligible_time", J::num(j.eligible_time)),
        ("end_time", J::num(end_time)),
        ("excluded_nodes", J::Str(&j.exc_nodes)),
        ("exit_code", exit_code(j.exit_code, j.exit_signal, state)),
        ("features", J::Str(&j.features)),
        ("gres_detail", jlist(&j.gres_detail)),
        ("group_id", J::Int(i64::from(j.group_id))),
        ("group_name", J::Str(&j.group_name)),
        ("het_job_id", J::num(0)),
        ("job_id", J::Int(i64::from(j.job_id))),
        // Slurm's base state and its flags: a requeuehold State=SpecialExit
        // job is PENDING with SPECIAL_EXIT.
        (
            "job_state",
            if jf::special_exit(j, state) {
                J::strs(&["PENDING", "SPECIAL_EXIT"])
            } else {
                J::strs(&[state.long_name()])
            },
        ),
        ("last_sched_evaluation", J::num(0)),
        ("mail_type", jlist(&j.mail_type)),
        ("mail_user", J::Str(&j.mail_user)),
        ("max_cpus", J::num(0)),
        ("max_nodes", J::num(0)),
        ("name", J::Str(&j.name)),
        ("nodes", J::Str(&j.nodes)),
        ("nice", J::Int(i64::from(j.nice))),
        ("tasks_per_core", J::unset()),
        ("tasks_per_node", J::num(i64::from(j.ntasks_per_node))),
        ("tasks_per_socket", J::unset()),
        ("cpus", J::num(i64::from(j.num_cpus))),
        ("node_count", J::num(i64::from(j.num_nodes))),
        ("tasks", J::num(i64::from(j.num_tasks))),
        ("partition", J::Str(&j.partition)),
        ("memory_per_cpu", mem_per_cpu),
        ("memory_per_node", mem_per_node),
        (
            "minimum_cpus_per_node",
            J::num(i64::from(j.min_cpus_per_node.max(1))),
        ),
        ("minimum_tmp_disk_per_node", J::num(0)),
        ("preempt_time", J::num(0)),
        ("pre_sus_time", J::num(j.pre_sus_time)),
        ("hold", J::Bool(j.hold != 0)),
        ("priority", J::num(i64::from(j.priority))),
        ("qos", J::Str(&j.qos)),
        ("reboot", J::Bool(false)),
        ("required_nodes", J::Str(&j.req_nodes)),
        ("requeue", J::Bool(j.requeue)),
        ("resize_time", J::num(0)),
        ("restart_cnt", J::Int(i64::from(j.restart_count))),
        ("resv_name", J::Str(&j.reservation)),
        (
            "shared",
            if j.exclusive {
                J::strs(&["none"])
            } else {
                J::Arr(Vec::new())
            },
        ),
        (
            "exclusive",
            J::strs(&[if j.exclusive { "true" } else { "false" }]),
        ),
        ("oversubscribe", J::Bool(j.oversubscribe)),
        ("sockets_per_node", J::unset()),
        ("start_time", J::num(j.start_time)),
        ("state_description", J::Str(&j.reason_detail)),
        ("state_reason", J::Str(jf::reason(j))),
        ("standard_error", J::String(jf::std_err_path(j))),
        (
            "standard_input",
            J::Str(if j.std_in.is_empty() {
                "/dev/null"
            } else {
                &j.std_in
            }),
        ),
        ("standard_output", J::String(jf::std_out_path(j))),
        ("submit_time", J::num(j.submit_time)),
        ("suspend_time", J::num(j.suspend_time)),
        ("time_limit", jnum_inf(j.time_limit)),
        ("time_minimum", J::num(i64::from(j.time_min))),
        ("threads_per_core", J::unset()),
        ("tres_per_job", J::Str("")),
        ("tres_per_node", J::Str(&j.tres_per_node)),
        ("tres_per_task", J::Str("")),
        ("tres_req_str", J::Str(&j.tres_req)),
        ("tres_alloc_str", J::Str(&j.tres_alloc)),
        ("user_id", J::Int(i64::from(j.user_id))),
        ("user_name", J::Str(&j.user_name)),
        ("wckey", J::Str(&j.wckey)),
        ("current_working_directory", J::Str(&j.work_dir)),
        ("run_time", J::num(time_used)),
    ])
}

/// `squeue --json` / `scontrol show job --json`, streamed to `w`.
pub fn squeue_to(
    w: &mut dyn std::io::Write,
    rows: &[Row<'_>],
    now: i64,
    cluster: &str,
    command: &[String],
) -> std::io::Result<()> {
    squeue_each(w, now, cluster, command, |emit| rows.iter().for_each(emit))
}

/// [`squeue_to`] for rows as they come: `feed` hands each to the writer
/// (the records need not outlive their row).
pub fn squeue_each(
    w: &mut dyn std::io::Write,
    now: i64,
    cluster: &str,
    command: &[String],
    feed: impl FnOnce(&mut dyn FnMut(&Row<'_>)),
) -> std::io::Result<()> {
    let mut buf = String::with_capacity(1 << 19);
    let mut env = Envelope::begin(&mut buf, "jobs");
    let mut failed = None;
    feed(&mut |r: &Row<'_>| {
        if failed.is_some() {
            return;
        }
        env.item(&job(r, now, cluster));
        if env.pending() > 1 << 18 {
            failed = env.drain_to(w).err();
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let meta = meta_j(command, cluster);
    env.finish(&[
        ("last_backfill", J::num(0)),
        ("last_update", J::num(now)),
        ("meta", meta),
        ("errors", J::Arr(Vec::new())),
        ("warnings", J::Arr(Vec::new())),
    ]);
    buf.push('\n');
    w.write_all(buf.as_bytes())
}

/// The same into a string.
pub fn squeue(out: &mut String, rows: &[Row<'_>], now: i64, cluster: &str, command: &[String]) {
    let mut v = Vec::new();
    let _ = squeue_to(&mut v, rows, now, cluster, command);
    out.push_str(&String::from_utf8_lossy(&v));
}

fn features(v: &[String]) -> Value {
    Value::Array(v.iter().map(|f| s(f)).collect())
}

/// One node (`scontrol show node --json`).
pub fn node(n: &NodeInfo) -> Value {
    let st = NodeState::of(n);
    obj(vec![
        ("architecture", s(std::env::consts::ARCH)),
        ("burstbuffer_network_address", s("")),
        ("boards", Value::from(n.boards.max(1))),
        ("boot_time", num_or_unset(n.boot_time)),
        ("cluster_name", s("")),
        ("cores", Value::from(n.cores_per_socket)),
        ("specialized_cores", Value::from(0)),
        ("cpu_binding", Value::from(0)),
        ("cpu_load", Value::from(n.cpu_load)),
        ("free_mem", num(n.free_memory as i64)),
        ("cpus", Value::from(n.cpus)),
        ("effective_cpus", Value::from(n.cpus)),
        ("specialized_cpus", s("")),
        ("extra", s("")),
        ("features", features(&n.features)),
        ("active_features", features(&n.active_features)),
        ("gres", s(&n.gres)),
        ("gres_drained", s("N/A")),
        ("gres_used", s(&n.gres_used)),
        ("instance_id", s("")),
        ("instance_type", s("")),
        ("last_busy", num_or_unset(n.last_busy)),
        ("mcs_label", s("")),
        ("specialized_memory", Value::from(0)),
        ("name", s(&n.name)),
        ("next_state_after_reboot", Value::Array(Vec::new())),
        ("address", s(&n.node_addr)),
        ("hostname", s(&n.node_hostname)),
        ("state", strings(&st.parts())),
        ("operating_system", s(&n.os)),
        ("owner", s("")),
        (
            "partitions",
            Value::Array(n.partitions.iter().map(|p| s(p)).collect()),
        ),
        ("port", Value::from(n.port)),
        ("real_memory", Value::from(n.real_memory)),
        ("comment", s("")),
        ("reason", s(&n.reason)),
        ("reason_changed_at", num_or_unset(n.reason_time)),
        (
            "reason_set_by_user",
            s(&if n.reason.is_empty() {
                String::new()
            } else {
                crate::users::user_name(n.reason_uid)
            }),
        ),
        ("resume_after", unset()),
        ("reservation", s("")),
        ("alloc_memory", Value::from(n.alloc_memory)),
        ("alloc_cpus", Value::from(n.cpus_alloc)),
        (
            "alloc_idle_cpus",
            Value::from(n.cpus.saturating_sub(n.cpus_alloc)),
        ),
        ("tres_used", s(&n.alloc_tres)),
        ("tres_weighted", Value::from(0.0)),
        ("slurmd_start_time", num_or_unset(n.slurmd_start_time)),
        ("sockets", Value::from(n.sockets)),
        ("threads", Value::from(n.threads_per_core)),
        ("temporary_disk", Value::from(n.tmp_disk)),
        ("weight", Value::from(n.weight)),
        ("tres", s(&n.cfg_tres)),
        ("version", s(&n.version)),
    ])
}

pub fn nodes(list: &[NodeInfo], now: i64, cluster: &str, command: &[String]) -> Value {
    envelope(
        "nodes",
        list.iter().map(node).collect(),
        vec![("last_update", num(now))],
        meta(command, cluster),
    )
}

/// One partition (`scontrol show partition --json`, inside sinfo entries).
pub fn partition(p: &PartitionInfo, cluster: &str) -> Value {
    let mem = |v: u64| if v == 0 { unset() } else { num(v as i64) };
    obj(vec![
        (
            "nodes",
            obj(vec![
                ("allowed_allocation", s("")),
                ("configured", s(&p.nodes)),
                ("total", Value::from(p.total_nodes)),
            ]),
        ),
        (
            "accounts",
            obj(vec![
                ("allowed", s(&p.allow_accounts)),
                ("deny", s(&p.deny_accounts)),
            ]),
        ),
        ("groups", obj(vec![("allowed", s(&p.allow_groups))])),
        (
            "qos",
            obj(vec![
                ("allowed", s(&p.allow_qos)),
                ("deny", s("")),
                ("assigned", s(&p.qos)),
            ]),
        ),
        ("alternate", s("")),
        (
            "tres",
            obj(vec![("billing_weights", s("")), ("configured", s(&p.tres))]),
        ),
        ("cluster", s(cluster)),
        (
            "cpus",
            obj(vec![
                ("task_binding", Value::from(0)),
                ("total", Value::from(p.total_cpus)),
            ]),
        ),
        (
            "defaults",
            obj(vec![
                ("memory_per_cpu", Value::from(p.def_mem_per_cpu)),
                ("partition_memory_per_cpu", mem(p.def_mem_per_cpu)),
                ("partition_memory_per_node", mem(p.def_mem_per_node)),
                (
                    "time",
                    if p.default_time == 0 {
                        unset()
                    } else {
                        num_inf(p.default_time)
                    },
                ),
                ("job", s("")),
            ]),
        ),
        ("grace_time", Value::from(p.grace_time)),
        (
            "maximums",
            obj(vec![
                ("cpus_per_node", infinite()),
                ("cpus_per_socket", infinite()),
                ("memory_per_cpu", Value::from(p.max_mem_per_cpu)),
                ("partition_memory_per_cpu", mem(p.max_mem_per_cpu)),
                ("partition_memory_per_node", mem(p.max_mem_per_node)),
                ("nodes", num_inf(p.max_nodes)),
                ("shares", Value::from(1)),
                ("time", num_inf(p.max_time)),
                ("over_time_limit", unset()),
                (
                    "oversubscribe",
                    obj(vec![
                        ("jobs", Value::from(1)),
                        ("flags", Value::Array(Vec::new())),
                    ]),
                ),
            ]),
        ),
        ("minimums", obj(vec![("nodes", Value::from(p.min_nodes))])),
        ("name", s(&p.name)),
        ("node_sets", s("")),
        (
            "priority",
            obj(vec![
                ("job_factor", Value::from(p.priority_job_factor)),
                ("tier", Value::from(p.priority_tier)),
            ]),
        ),
        (
            "timeouts",
            obj(vec![("resume", unset()), ("suspend", unset())]),
        ),
        (
            "partition",
            obj(vec![(
                "state",
                strings(&[p.state.to_ascii_uppercase().as_str()]),
            )]),
        ),
        ("suspend_time", unset()),
    ])
}

pub fn partitions(list: &[PartitionInfo], now: i64, cluster: &str, command: &[String]) -> Value {
    envelope(
        "partitions",
        list.iter().map(|p| partition(p, cluster)).collect(),
        vec![("last_update", num(now))],
        meta(command, cluster),
    )
}

/// One `sinfo --json` entry: a partition and a group of its nodes.
pub fn sinfo_entry(p: Option<&PartitionInfo>, nodes: &[&NodeInfo], cluster: &str) -> Value {
    let minmax = |f: &dyn Fn(&NodeInfo) -> i64| {
        let mn = nodes.iter().map(|n| f(n)).min().unwrap_or(0);
        let mx = nodes.iter().map(|n| f(n)).max().unwrap_or(0);
        (mn, mx)
    };
    let pair = |(mn, mx): (i64, i64)| {
        obj(vec![
            ("minimum", Value::from(mn)),
            ("maximum", Value::from(mx)),
        ])
    };
    let mut alloc = 0u32;
    let mut idle = 0u32;
    let mut other = 0u32;
    let mut c_alloc = 0u32;
    let mut c_idle = 0u32;
    let mut c_other = 0u32;
    let mut c_total = 0u32;
    let mut states: Vec<&'static str> = Vec::new();
    for n in nodes {
        let st = NodeState::of(n);
        c_total += n.cpus;
        if !st.available() {
            other += 1;
            c_other += n.cpus;
        } else {
            if n.cpus_alloc > 0 {
                alloc += 1;
            } else {
                idle += 1;
            }
            c_alloc += n.cpus_alloc.min(n.cpus);
            c_idle += n.cpus.saturating_sub(n.cpus_alloc);
        }
        for part in st.parts() {
            if !states.contains(&part) {
                states.push(part);
            }
        }
    }
    let names: Vec<Value> = nodes.iter().map(|n| s(&n.name)).collect();
    let addrs: Vec<Value> = nodes.iter().map(|n| s(&n.node_addr)).collect();
    let hosts: Vec<Value> = nodes.iter().map(|n| s(&n.node_hostname)).collect();
    let first = nodes.first();
    obj(vec![
        ("port", Value::from(first.map(|n| n.port).unwrap_or(0))),
        ("node", obj(vec![("state", strings(&states))])),
        (
            "nodes",
            obj(vec![
                ("allocated", Value::from(alloc)),
                ("idle", Value::from(idle)),
                ("other", Value::from(other)),
                ("total", Value::from(nodes.len())),
                ("hostnames", Value::Array(hosts)),
                ("addresses", Value::Array(addrs)),
                ("nodes", Value::Array(names)),
            ]),
        ),
        ("cores", pair(minmax(&|n| i64::from(n.cores_per_socket)))),
        (
            "cpus",
            obj(vec![
                ("allocated", Value::from(c_alloc)),
                ("idle", Value::from(c_idle)),
                ("other", Value::from(c_other)),
                ("total", Value::from(c_total)),
                ("minimum", Value::from(minmax(&|n| i64::from(n.cpus)).0)),
                ("maximum", Value::from(minmax(&|n| i64::from(n.cpus)).1)),
                ("load", pair(minmax(&|n| i64::from(n.cpu_load)))),
                ("per_node", obj(vec![("max", unset())])),
            ]),
        ),
        (
            "disk",
            obj(vec![
                ("free", pair(minmax(&|n| n.tmp_disk as i64))),
                ("minimum", Value::from(minmax(&|n| n.tmp_disk as i64).0)),
                ("maximum", Value::from(minmax(&|n| n.tmp_disk as i64).1)),
            ]),
        ),
        (
            "memory",
            obj(vec![
                ("minimum", Value::from(minmax(&|n| n.real_memory as i64).0)),
                ("maximum", Value::from(minmax(&|n| n.real_memory as i64).1)),
                (
                    "free",
                    obj(vec![
                        ("minimum", num(minmax(&|n| n.free_memory as i64).0)),
                        ("maximum", num(minmax(&|n| n.free_memory as i64).1)),
                    ]),
                ),
                (
                    "allocated",
                    Value::from(nodes.iter().map(|n| n.alloc_memory).sum::<u64>()),
                ),
            ]),
        ),
        ("weight", pair(minmax(&|n| i64::from(n.weight)))),
        (
            "features",
            obj(vec![
                (
                    "total",
                    s(&first.map(|n| n.features.join(",")).unwrap_or_default()),
                ),
                (
                    "active",
                    s(&first
                        .map(|n| n.active_features.join(","))
                        .unwrap_or_default()),
                ),
            ]),
        ),
        (
            "gres",
            obj(vec![
                ("total", s(first.map(|n| n.gres.as_str()).unwrap_or(""))),
                ("used", s(first.map(|n| n.gres_used.as_str()).unwrap_or(""))),
            ]),
        ),
        ("cluster", s(cluster)),
        ("comment", s("")),
        ("extra", s("")),
        (
            "reason",
            obj(vec![
                (
                    "description",
                    s(first.map(|n| n.reason.as_str()).unwrap_or("")),
                ),
                (
                    "time",
                    num_or_unset(first.map(|n| n.reason_time).unwrap_or(0)),
                ),
                (
                    "user",
                    s(&first
                        .filter(|n| !n.reason.is_empty())
                        .map(|n| crate::users::user_name(n.reason_uid))
                        .unwrap_or_default()),
                ),
            ]),
        ),
        ("reservation", s("")),
        (
            "partition",
            match p {
                Some(p) => partition(p, cluster),
                None => obj(vec![]),
            },
        ),
        ("sockets", pair(minmax(&|n| i64::from(n.sockets)))),
        ("threads", pair(minmax(&|n| i64::from(n.threads_per_core)))),
    ])
}

pub fn sinfo(entries: Vec<Value>, cluster: &str, command: &[String]) -> Value {
    envelope("sinfo", entries, vec![], meta(command, cluster))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::squeue::format::tests::job as mkjob;

    #[test]
    fn job_shape() {
        let mut j = mkjob(5, "x", JobState::Pending);
        j.time_limit = INFINITE;
        let mut out = String::new();
        let cmd = vec!["squeue".to_string(), "--json".to_string()];
        squeue(&mut out, &[Row::new(&j)], 1_700_000_000, "lab", &cmd);
        let v: Value = serde_json::from_str(&out).unwrap();
        let job = &v["jobs"][0];
        assert_eq!(job["job_id"], 5);
        assert_eq!(job["job_state"], serde_json::json!(["PENDING"]));
        assert_eq!(job["state_reason"], "Priority");
        assert_eq!(job["time_limit"]["infinite"], true);
        assert_eq!(job["array_task_id"]["set"], false);
        assert_eq!(job["user_name"], "alice");
        assert_eq!(job["standard_output"], "/home/alice/slurm-5.out");
        assert_eq!(v["errors"], serde_json::json!([]));
        assert_eq!(
            v["meta"]["command"],
            serde_json::json!(["squeue", "--json"])
        );
        assert_eq!(v["meta"]["slurm"]["cluster"], "lab");
        assert!(out.starts_with("{\n  \"jobs\": [\n    {\n      \"account\": \"\",\n"));
        // requeuehold State=SpecialExit: Slurm's PENDING with its flag.
        j.hold = crate::squeue::format::SPECIAL_EXIT;
        let mut se = String::new();
        squeue(&mut se, &[Row::new(&j)], 1_700_000_000, "lab", &cmd);
        let v: Value = serde_json::from_str(&se).unwrap();
        assert_eq!(
            v["jobs"][0]["job_state"],
            serde_json::json!(["PENDING", "SPECIAL_EXIT"])
        );
        let mut empty = String::new();
        squeue(&mut empty, &[], 0, "lab", &cmd);
        let v: Value = serde_json::from_str(&empty).unwrap();
        assert_eq!(v["jobs"], serde_json::json!([]));
    }

    #[test]
    fn node_and_partition_shapes() {
        let n = NodeInfo {
            name: "n1".into(),
            state: "IDLE".into(),
            state_flags: "+DRAIN".into(),
            responding: true,
            cpus: 4,
            ..Default::default()
        };
        let v = node(&n);
        assert_eq!(v["state"], serde_json::json!(["IDLE", "DRAIN"]));
        let p = PartitionInfo {
            name: "debug".into(),
            state: "UP".into(),
            max_time: INFINITE,
            ..Default::default()
        };
        let v = partition(&p, "c");
        assert_eq!(v["maximums"]["time"]["infinite"], true);
        assert_eq!(v["partition"]["state"], serde_json::json!(["UP"]));
        let e = sinfo_entry(Some(&p), &[&n], "c");
        assert_eq!(e["nodes"]["total"], 1);
        assert_eq!(e["nodes"]["other"], 1);
    }
}
