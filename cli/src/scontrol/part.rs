//! `scontrol create|update|delete PartitionName=...`: the words as a
//! [`PartitionEdit`] (pure), and what scontrol prints when the controller
//! refuses it, in Slurm's words.

use drover_proto::client::Controller;
use drover_proto::PartitionEdit;

use super::{kw, report, Flags};

/// `PartitionName`, as scontrol abbreviates it (three letters at least).
pub fn is_name_key(key: &str) -> bool {
    kw(key, "partitionname", 3)
}

/// Whether `create`/`delete` words are about a partition (`partition`
/// first, or a `PartitionName=` word).
pub fn is_partition_words(words: &[String]) -> bool {
    words.first().is_some_and(|w| match w.split_once('=') {
        Some((k, _)) => is_name_key(k),
        None => kw(w, "partition", 3),
    })
}

/// The edit `op` (`create`, `update`, `delete`) the words ask for.
pub fn parse(op: &str, words: &[String]) -> Result<PartitionEdit, Vec<String>> {
    let mut words = words.to_vec();
    if words.first().is_some_and(|w| !w.contains('=')) {
        words.remove(0); // the `partition` entity word
    }
    let mut name = None;
    let mut args = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k, v)) if is_name_key(k) && name.is_none() => name = Some(v.to_string()),
            Some(_) => args.push(w),
            None if op == "delete" && name.is_none() => name = Some(w),
            None => {
                return Err(vec![
                    format!("Invalid input: {w}"),
                    "Request aborted".into(),
                ])
            }
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| vec!["PartitionName must be given.".to_string()])?;
    if op == "create" && name.eq_ignore_ascii_case("default") {
        return Err(vec!["PartitionName cannot be \"DEFAULT\".".into()]);
    }
    match op {
        "create" if args.is_empty() => return Err(vec!["No parameters specified".into()]),
        "update" if args.is_empty() => return Err(vec!["No changes specified".into()]),
        "delete" if !args.is_empty() => {
            return Err(vec!["too many arguments for keyword:delete".into()])
        }
        _ => {}
    }
    Ok(PartitionEdit {
        op: op.into(),
        name,
        args,
    })
}

/// Send the edit; 0 on success, else Slurm's message and 1.
pub async fn run(client: &mut Controller, flags: &Flags, edit: PartitionEdit) -> i32 {
    let prefix = match edit.op.as_str() {
        "create" => "Error creating the partition: ".to_string(),
        "delete" => format!("delete_partition PartitionName={}: ", edit.name),
        _ => "slurm_update error: ".to_string(),
    };
    match client.edit_partition(edit).await {
        Ok(_) => 0,
        Err(st) => report(flags, &prefix, &st),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn words() {
        let e = parse("create", &w(&["PartitionName=x", "Nodes=n1", "MaxTime=5"])).unwrap();
        assert_eq!((e.name.as_str(), e.args.len()), ("x", 2));
        let e = parse("create", &w(&["partition", "Name=x", "Nodes=n1"]));
        assert!(e.is_err(), "Name= is not PartitionName=");
        let e = parse("update", &w(&["Partition=x", "State=DOWN"])).unwrap();
        assert_eq!((e.name.as_str(), e.args), ("x", w(&["State=DOWN"])));
        assert_eq!(parse("delete", &w(&["partition", "x"])).unwrap().name, "x");
        assert_eq!(parse("delete", &w(&["PartitionName=x"])).unwrap().name, "x");
        let err = |op, a: &[&str]| parse(op, &w(a)).unwrap_err()[0].clone();
        assert_eq!(
            err("create", &["PartitionName=x"]),
            "No parameters specified"
        );
        assert_eq!(err("update", &["PartitionName=x"]), "No changes specified");
        assert_eq!(err("create", &["Nodes=n1"]), "PartitionName must be given.");
        assert_eq!(
            err("create", &["PartitionName=default", "Nodes=n1"]),
            "PartitionName cannot be \"DEFAULT\"."
        );
        assert!(is_partition_words(&w(&["PartitionName=x"])));
        assert!(is_partition_words(&w(&["partition", "x"])));
        assert!(!is_partition_words(&w(&["reservation", "x"])));
    }
}
