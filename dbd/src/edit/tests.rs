//! Tests of sacctmgr's edits.

use drover_proto::acct::{KeyValue, Qos};

use super::values::merge_tres;
use super::*;

fn kv(pairs: &[(&str, &str)]) -> Vec<KeyValue> {
    pairs
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.to_string(),
            value: v.to_string(),
        })
        .collect()
}

fn req(
    verb: &str,
    entity: &str,
    names: &[&str],
    c: &[(&str, &str)],
    v: &[(&str, &str)],
) -> ModifyRequest {
    ModifyRequest {
        verb: verb.into(),
        entity: entity.into(),
        names: names.iter().map(|s| s.to_string()).collect(),
        conditions: kv(c),
        values: kv(v),
        dry_run: false,
    }
}

fn base() -> AssocSet {
    let mut s = AssocSet::default();
    s.qos.push(Qos {
        id: 1,
        name: "normal".into(),
        limits: Some(no_limits()),
        usage_factor: 1.0,
        ..Default::default()
    });
    ensure_cluster(
        &mut s,
        Cluster {
            name: "lab".into(),
            cpus: 8,
            ..Default::default()
        },
    );
    s
}

#[test]
fn account_tree_and_users() {
    let mut s = base();
    apply(
        &mut s,
        &req(
            "add",
            "account",
            &["science"],
            &[],
            &[("description", "Sci")],
        ),
    )
    .unwrap();
    apply(
        &mut s,
        &req(
            "add",
            "account",
            &["ml"],
            &[],
            &[("parent", "science"), ("fairshare", "10")],
        ),
    )
    .unwrap();
    let ml = s
        .assocs
        .iter()
        .find(|a| a.account == "ml" && a.user.is_empty())
        .unwrap();
    assert_eq!((ml.parent.as_str(), ml.shares), ("science", 10));
    apply(
        &mut s,
        &req(
            "add",
            "user",
            &["alice"],
            &[],
            &[("account", "ml"), ("maxjobs", "3")],
        ),
    )
    .unwrap();
    let u = s.users.iter().find(|u| u.name == "alice").unwrap();
    assert_eq!(u.default_account, "ml");
    let a = s.assocs.iter().find(|a| a.user == "alice").unwrap();
    assert_eq!(a.limits.as_ref().unwrap().max_jobs, 3);
    // Unknown account, unknown parent.
    assert!(apply(
        &mut s,
        &req("add", "user", &["bob"], &[], &[("account", "nope")])
    )
    .is_err());
    assert!(apply(
        &mut s,
        &req("add", "account", &["x"], &[], &[("parent", "nope")])
    )
    .is_err());
    // Modify limits with where.
    apply(
        &mut s,
        &req(
            "modify",
            "user",
            &["alice"],
            &[("account", "ml")],
            &[("maxwall", "1:00:00"), ("grptres", "cpu=4,gres/gpu=1")],
        ),
    )
    .unwrap();
    let a = s.assocs.iter().find(|a| a.user == "alice").unwrap();
    let l = a.limits.as_ref().unwrap();
    assert_eq!(l.max_wall_min, 60);
    assert_eq!(l.grp_tres, "cpu=4,gres/gpu=1");
    apply(
        &mut s,
        &req("modify", "user", &["alice"], &[], &[("grptres", "cpu=-1")]),
    )
    .unwrap();
    let a = s.assocs.iter().find(|a| a.user == "alice").unwrap();
    assert_eq!(a.limits.as_ref().unwrap().grp_tres, "gres/gpu=1");
    // Parent loops are refused; sub-accounts block deletion.
    assert!(apply(
        &mut s,
        &req("modify", "account", &["science"], &[], &[("parent", "ml")])
    )
    .is_err());
    assert!(apply(&mut s, &req("delete", "account", &["science"], &[], &[])).is_err());
    apply(&mut s, &req("delete", "user", &["alice"], &[], &[])).unwrap();
    assert!(s.users.iter().all(|u| u.name != "alice"));
    assert!(apply(
        &mut s,
        &req("modify", "user", &["alice"], &[], &[("maxjobs", "1")])
    )
    .is_err());
}

#[test]
fn qos_and_bad_values() {
    let mut s = base();
    apply(
        &mut s,
        &req(
            "add",
            "qos",
            &["high"],
            &[],
            &[("priority", "100"), ("maxwall", "2:00:00")],
        ),
    )
    .unwrap();
    let q = s.qos.iter().find(|q| q.name == "high").unwrap();
    assert_eq!(
        (q.priority, q.limits.as_ref().unwrap().max_wall_min),
        (100, 120)
    );
    assert!(apply(
        &mut s,
        &req("modify", "qos", &["high"], &[], &[("priority", "x")])
    )
    .is_err());
    assert!(apply(
        &mut s,
        &req("add", "account", &["a"], &[], &[("grptres", "cpu=lots")])
    )
    .is_err());
    assert!(apply(
        &mut s,
        &req("add", "account", &["a"], &[], &[("bogus", "1")])
    )
    .is_err());
    apply(&mut s, &req("delete", "qos", &["high"], &[], &[])).unwrap();
    assert!(merge_tres("", "cpu=1,mem=4G", "k").unwrap() == "cpu=1,mem=4G");
}
