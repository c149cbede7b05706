//! Unit tests of the slurm.conf parser: node, partition, nodeset and
//! frontend lines, and their errors.

use super::*;

#[test]
fn node_topology_rules() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=a Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n\
         NodeName=b CPUs=8\n\
         NodeName=c\n\
         NodeName=d Boards=2 SocketsPerBoard=2 CoresPerSocket=3\n\
         NodeName=e CPUs=8 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n\
         NodeName=f CPUs=10 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2\n\
         NodeName=g Procs=3\n"
    ));
    let a = c.node("a").unwrap();
    assert_eq!(a.cpus, 16);
    let b = c.node("b").unwrap();
    assert_eq!(
        (b.cpus, b.sockets, b.cores_per_socket, b.threads_per_core),
        (8, 8, 1, 1)
    );
    let n = c.node("c").unwrap();
    assert_eq!((n.cpus, n.sockets, n.real_memory, n.weight), (1, 1, 1, 1));
    let d = c.node("d").unwrap();
    assert_eq!(
        (d.cpus, d.boards, d.sockets, d.sockets_per_board()),
        (12, 2, 4, 2)
    );
    // CPUs = Sockets*CoresPerSocket (one thread per core used) is fine
    assert_eq!(c.node("e").unwrap().cpus, 8);
    // inconsistent: CPUs wins, one warning
    assert_eq!(c.node("f").unwrap().cpus, 10);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!((w[0].line, w[0].key.as_str()), (7, "CPUs"));
    assert_eq!(c.node("g").unwrap().cpus, 3);
}

#[test]
fn node_addresses_hostnames_and_ports() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=n[1-3] NodeHostname=h[1-3] NodeAddr=10.0.0.[1-3] Port=17001-17003\n\
         NodeName=m[1-2] NodeHostname=localhost Port=[7001-7002]\n\
         NodeName=o1 Port=7100\nNodeName=localhost\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    let n2 = c.node("n2").unwrap();
    assert_eq!(
        (n2.node_hostname.as_str(), n2.node_addr.as_str(), n2.port),
        ("h2", "10.0.0.2", 17002)
    );
    let m2 = c.node("m2").unwrap();
    assert_eq!(
        (m2.node_hostname.as_str(), m2.node_addr.as_str(), m2.port),
        ("localhost", "localhost", 7002)
    );
    assert_eq!(c.node("o1").unwrap().port, 7100);
    let l = c.node("localhost").unwrap();
    assert_eq!(l.port, 0);
    assert_eq!(c.node_port(l), 6818);
    assert_eq!(c.node_port(c.node("o1").unwrap()), 7100);
}

#[test]
fn node_other_keys() {
    let (c, w) = parse(&format!(
        "{HOST}GresTypes=gpu,mps\n\
         NodeName=n1 TmpDisk=100G Features=a,b ActiveFeatures=a Gres=gpu:2,mps:100 State=idle \
         Weight=5 Reason=\"new node\" CpuSpecList=0,1 CoreSpecCount=2 MemSpecLimit=2048 TRESWeights=CPU=1\n\
         NodeName=n2 AvailableFeatures=x State=FUTURE\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    let n = c.node("n1").unwrap();
    assert_eq!(n.tmp_disk, 102400);
    assert_eq!(n.features, vec!["a", "b"]);
    assert_eq!(n.active_features, vec!["a"]);
    assert_eq!(n.gres_count("gpu"), 2);
    assert_eq!(n.gres_count("mps"), 100);
    assert_eq!(n.state, "IDLE");
    assert_eq!(n.weight, 5);
    assert_eq!(n.reason.as_deref(), Some("new node"));
    assert_eq!(n.cpu_spec_list.as_deref(), Some("0,1"));
    assert_eq!(n.core_spec_count, 2);
    assert_eq!(n.mem_spec_limit, 2048);
    assert_eq!(
        n.extra,
        vec![("TRESWeights".to_string(), "CPU=1".to_string())]
    );
    let n2 = c.node("n2").unwrap();
    assert_eq!(n2.features, vec!["x"]);
    assert_eq!(n2.state, "FUTURE");
}

#[test]
fn gres_not_in_gres_types_warns_once() {
    let (_, w) = parse(&format!(
        "{HOST}NodeName=n1 Gres=gpu:1\nNodeName=n2 Gres=gpu:1,gpu:a:1\n"
    ));
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!((w[0].line, w[0].key.as_str()), (2, "Gres"));
    let (_, w) = parse(&format!(
        "{HOST}GresTypes=gpu\nNodeName=n1 Gres=gpu:no_consume:1\n"
    ));
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("no_consume"));
}

#[test]
fn node_default_lines() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=DEFAULT CPUs=4 RealMemory=1000 State=IDLE\n\
         NodeName=a[1-2]\n\
         NodeName=default RealMemory=2000\n\
         NodeName=b CPUs=8\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a1", "a2", "b"]);
    let a = c.node("a2").unwrap();
    assert_eq!((a.cpus, a.real_memory, a.state.as_str()), (4, 1000, "IDLE"));
    let b = c.node("b").unwrap();
    assert_eq!((b.cpus, b.real_memory, b.state.as_str()), (8, 2000, "IDLE"));
}

#[test]
fn default_topology_counts_as_given() {
    let (c, _) = parse(&format!(
        "{HOST}NodeName=DEFAULT Sockets=2 CoresPerSocket=2\nNodeName=a\nNodeName=b ThreadsPerCore=2\n"
    ));
    assert_eq!(c.node("a").unwrap().cpus, 4);
    assert_eq!(c.node("b").unwrap().cpus, 8);
}

#[test]
fn partition_keys() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=n[1-4]\n\
         PartitionName=p Nodes=n[1-2],n4 MaxTime=UNLIMITED DefaultTime=30 State=drain \
         AllowGroups=ALL AllowAccounts=a,b DenyAccounts=c AllowQos=normal DenyQos=bad \
         MaxNodes=3 MinNodes=1 MaxCPUsPerNode=UNLIMITED PriorityTier=10 PriorityJobFactor=20 \
         OverSubscribe=FORCE:4 ExclusiveUser=YES Hidden=true RootOnly=1 LLN=no QOS=pq \
         DefMemPerNode=1G MaxMemPerCPU=512 GraceTime=60 PreemptMode=requeue \
         Alternate=q TRESBillingWeights=CPU=1.0 AllowAllocNodes=x\n\
         PartitionName=q Nodes=ALL Shared=EXCLUSIVE Priority=7 MaxNodes=Unlimited\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    let p = c.partition("p").unwrap();
    assert_eq!(p.nodes, vec!["n1", "n2", "n4"]);
    assert_eq!(p.nodes_expr, "n[1-2],n4");
    assert_eq!(p.max_time_min, None);
    assert_eq!(p.default_time_min, Some(30));
    assert_eq!(p.state, "DRAIN");
    assert_eq!(p.allow_groups, None);
    assert_eq!(
        p.allow_accounts,
        Some(vec!["a".to_string(), "b".to_string()])
    );
    assert_eq!(p.deny_accounts, Some(vec!["c".to_string()]));
    assert_eq!(p.allow_qos, Some(vec!["normal".to_string()]));
    assert_eq!(p.deny_qos, Some(vec!["bad".to_string()]));
    assert_eq!((p.max_nodes, p.min_nodes), (Some(3), 1));
    assert_eq!(p.max_cpus_per_node, None);
    assert_eq!((p.priority_tier, p.priority_job_factor), (10, 20));
    assert_eq!(p.over_subscribe, "FORCE:4");
    assert!(p.exclusive_user && p.hidden && p.root_only && !p.lln);
    assert_eq!(p.qos.as_deref(), Some("pq"));
    assert_eq!((p.def_mem_per_node, p.def_mem_per_cpu), (Some(1024), None));
    assert_eq!((p.max_mem_per_cpu, p.max_mem_per_node), (Some(512), None));
    assert_eq!(p.grace_time, 60);
    assert_eq!(p.preempt_mode.as_deref(), Some("REQUEUE"));
    assert_eq!(p.alternate.as_deref(), Some("q"));
    assert_eq!(p.tres_billing_weights.as_deref(), Some("CPU=1.0"));
    assert_eq!(
        p.extra,
        vec![("AllowAllocNodes".to_string(), "x".to_string())]
    );
    let q = c.partition("q").unwrap();
    assert_eq!(q.nodes.len(), 4);
    assert_eq!(q.over_subscribe, "EXCLUSIVE");
    assert_eq!((q.priority_tier, q.priority_job_factor), (7, 7));
    assert_eq!(q.max_nodes, None);
    assert!(c.default_partition().is_none());
}

#[test]
fn partition_nodes_follow_node_order_without_duplicates() {
    let (c, _) = parse(&format!(
        "{HOST}NodeName=b1\nNodeName=a1\nPartitionName=p Nodes=a1,b1,a1\n"
    ));
    assert_eq!(c.partition("p").unwrap().nodes, vec!["b1", "a1"]);
}

#[test]
fn partition_may_precede_its_nodes() {
    let (c, _) = parse(&format!("{HOST}PartitionName=p Nodes=n1\nNodeName=n1\n"));
    assert_eq!(c.partition("p").unwrap().nodes, vec!["n1"]);
}

#[test]
fn partition_default_lines() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=n1\n\
         PartitionName=DEFAULT MaxTime=60 State=DOWN DefMemPerCPU=100\n\
         PartitionName=a Nodes=n1\n\
         PartitionName=b Nodes=n1 State=UP DefMemPerNode=200\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    let a = c.partition("a").unwrap();
    assert_eq!(
        (a.max_time_min, a.state.as_str(), a.def_mem_per_cpu),
        (Some(60), "DOWN", Some(100))
    );
    let b = c.partition("b").unwrap();
    assert_eq!((b.max_time_min, b.state.as_str()), (Some(60), "UP"));
    assert_eq!((b.def_mem_per_cpu, b.def_mem_per_node), (None, Some(200)));
}

#[test]
fn partition_mem_exclusive_on_one_line_warns() {
    let (c, w) = parse(&format!(
        "{HOST}PartitionName=p DefMemPerCPU=100 DefMemPerNode=200\n"
    ));
    let p = c.partition("p").unwrap();
    assert_eq!((p.def_mem_per_cpu, p.def_mem_per_node), (None, Some(200)));
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].key, "DefMemPerNode");
}

#[test]
fn two_default_partitions_warn_last_wins() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=n1\nPartitionName=a Nodes=n1 Default=YES\nPartitionName=b Nodes=n1 Default=YES\n"
    ));
    assert_eq!(c.default_partition().map(|p| p.name.as_str()), Some("b"));
    assert!(!c.partition("a").unwrap().default);
    assert_eq!(w.len(), 1);
    assert_eq!((w[0].line, w[0].key.as_str()), (4, "Default"));
}

#[test]
fn nodesets() {
    let (c, w) = parse(&format!(
        "{HOST}NodeName=n[1-3] Feature=ib\nNodeName=m1\n\
         NodeSet=ibset Feature=ib\nNodeSet=mix Nodes=m1,n1\n\
         PartitionName=p Nodes=ibset\nPartitionName=q Nodes=mix,n2\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.nodesets.len(), 2);
    assert_eq!(c.partition("p").unwrap().nodes, vec!["n1", "n2", "n3"]);
    assert_eq!(c.partition("q").unwrap().nodes, vec!["n1", "n2", "m1"]);
}

#[test]
fn entity_key_mid_line_starts_an_entity() {
    let (c, _) = parse("SlurmctldHost=c NodeName=n1 CPUs=2\n");
    assert_eq!(c.node("n1").unwrap().cpus, 2);
    assert_eq!(c.get("CPUs"), None);
}

#[test]
fn frontend_and_switch_lines_are_kept() {
    let (c, w) = parse(&format!(
        "{HOST}FrontendName=fe1 FrontendAddr=1.1.1.1\nSwitchName=s1 Nodes=n[1-2]\n"
    ));
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(c.other_entities.len(), 2);
    assert_eq!(c.other_entities[0].kind, "FrontendName");
    assert_eq!(
        c.other_entities[1].pairs[1],
        ("Nodes".to_string(), "n[1-2]".to_string())
    );
}

#[test]
fn node_errors() {
    let cases: &[(&str, usize, &str)] = &[
        ("NodeName=n[1-2", 1, "NodeName"),
        ("NodeName=", 1, "NodeName"),
        ("NodeName=n1\nNodeName=n[0-1]", 2, "NodeName"),
        ("NodeName=n[1-2],n2", 1, "NodeName"),
        ("NodeName=a\nNodeName=b[1-2]\nNodeName=b2", 3, "NodeName"),
        ("NodeName=n1 CPUs=0", 1, "CPUs"),
        ("NodeName=n1 Sockets=-2", 1, "Sockets"),
        ("NodeName=n1 RealMemory=big", 1, "RealMemory"),
        ("NodeName=n1 TmpDisk=1Q", 1, "TmpDisk"),
        ("NodeName=n1 Weight=x", 1, "Weight"),
        ("NodeName=n1 State=sleepy", 1, "State"),
        ("NodeName=n1 Gres=gpu:a:b:c", 1, "Gres"),
        ("NodeName=n1 Port=http", 1, "Port"),
        ("NodeName=n1 Port=70000", 1, "Port"),
        ("NodeName=n[1-3] Port=1-2", 1, "Port"),
        ("NodeName=n[1-3] NodeAddr=a[1-2]", 1, "NodeAddr"),
        ("NodeName=n[1-3] NodeHostname=h[1-2]", 1, "NodeHostname"),
        ("NodeName=DEFAULT CPUs=x\nNodeName=n1", 1, "CPUs"),
        ("NodeName=n1 ProcsX=1 CoresPerSocket=", 1, "CoresPerSocket"),
        (
            "NodeName=n1 Sockets=4294967295 CoresPerSocket=4294967295",
            1,
            "CPUs",
        ),
        ("NodeName=n1\nDownNodes=n2", 2, "DownNodes"),
        ("NodeName=n1\nDownNodes=n1 State=bad", 2, "State"),
        ("NodeSet=s Nodes=zz", 1, "Nodes"),
        ("NodeSet= Nodes=zz", 1, "NodeSet"),
    ];
    for (text, line, key) in cases {
        assert_err(&format!("{HOST}{text}"), line + 1, key);
    }
}

#[test]
fn partition_errors() {
    let cases: &[(&str, usize, &str)] = &[
        ("PartitionName=p Nodes=n9", 1, "Nodes"),
        ("PartitionName=p Nodes=n[1-", 1, "Nodes"),
        ("PartitionName=p MaxTime=forever", 1, "MaxTime"),
        ("PartitionName=p DefaultTime=1:2:3:4", 1, "DefaultTime"),
        ("PartitionName=p Default=maybe", 1, "Default"),
        ("PartitionName=p State=OPEN", 1, "State"),
        ("PartitionName=p MaxNodes=x", 1, "MaxNodes"),
        ("PartitionName=p MinNodes=-1", 1, "MinNodes"),
        ("PartitionName=p PriorityTier=x", 1, "PriorityTier"),
        (
            "PartitionName=p OverSubscribe=SOMETIMES",
            1,
            "OverSubscribe",
        ),
        ("PartitionName=p Shared=NO:3", 1, "Shared"),
        ("PartitionName=p Hidden=2", 1, "Hidden"),
        ("PartitionName=p DefMemPerCPU=x", 1, "DefMemPerCPU"),
        ("PartitionName=p GraceTime=x", 1, "GraceTime"),
        ("PartitionName=p PreemptMode=x", 1, "PreemptMode"),
        ("PartitionName=p\nPartitionName=p", 2, "PartitionName"),
        ("PartitionName= Nodes=n1", 1, "PartitionName"),
        ("PartitionName=DEFAULT MaxTime=x", 1, "MaxTime"),
    ];
    for (text, line, key) in cases {
        assert_err(&format!("{HOST}NodeName=n1\n{text}"), line + 2, key);
    }
}
