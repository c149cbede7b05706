//! `scontrol update ...` and the job-action commands (hold, release, ...):
//! turning words into requests. Pure.

use std::collections::HashMap;

use drover_proto::{UpdateJobRequest, UpdateNodeRequest};

use crate::jobids;

/// What an `update` line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    Job(UpdateJobRequest),
    Node(UpdateNodeRequest),
    Partition(drover_proto::PartitionEdit),
}

fn split_kv(w: &str) -> Option<(&str, &str)> {
    w.split_once('=')
}

/// Job ids from words like `12`, `12,13`, `12_3`, `JobId=12`.
pub fn job_ids(words: &[String]) -> Result<Vec<String>, String> {
    let mut ids = Vec::new();
    for w in words {
        let w = match split_kv(w) {
            Some((k, v)) if k.eq_ignore_ascii_case("jobid") => v,
            Some((k, _)) => return Err(format!("Invalid job id specified: {k}")),
            None => w.as_str(),
        };
        for id in jobids::split_job_list(w) {
            if jobids::parse_job_id(&id).is_none() {
                return Err(format!("Invalid job id specified: {id}"));
            }
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err("Invalid job id specified".into());
    }
    Ok(ids)
}

/// `requeuehold [State=SpecialExit] JOBS`: the job words without the
/// `State=` word, and the field it sends (`State=SpecialExit`).
#[allow(clippy::type_complexity)]
pub fn action_state(
    action: &str,
    words: &[String],
) -> Result<(Vec<String>, HashMap<String, String>), Vec<String>> {
    let mut fields = HashMap::new();
    let mut rest = Vec::new();
    for w in words {
        match split_kv(w) {
            Some((k, v)) if action == "requeuehold" && k.eq_ignore_ascii_case("state") => {
                if !v.eq_ignore_ascii_case("specialexit") {
                    return Err(vec![
                        format!("Invalid state: {w}"),
                        "Valid states: SpecialExit".into(),
                    ]);
                }
                fields.insert("State".to_string(), "SpecialExit".to_string());
            }
            _ => rest.push(w.clone()),
        }
    }
    Ok((rest, fields))
}

/// Parse the words after `update`.
pub fn parse_update(words: &[String]) -> Result<Update, Vec<String>> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for w in words {
        match split_kv(w) {
            Some((k, v)) => pairs.push((k.to_string(), v.to_string())),
            None => {
                return Err(vec![
                    format!("Invalid input: {w}"),
                    "Request aborted".into(),
                ])
            }
        }
    }
    // JobId first: with one, JobName= is the new name (Slurm's order).
    let entity = pairs
        .iter()
        .position(|(k, _)| k.eq_ignore_ascii_case("jobid"))
        .or_else(|| {
            pairs.iter().position(|(k, _)| {
                ["jobname", "nodename", "partitionname"].contains(&k.to_ascii_lowercase().as_str())
            })
        })
        // `Partition=`/`Par=`: PartitionName as scontrol abbreviates it
        // (with a JobId it is the job's field instead).
        .or_else(|| pairs.iter().position(|(k, _)| super::part::is_name_key(k)))
        .ok_or_else(|| {
            // Entities Slurm has and Drover does not: refused as such.
            if let Some((k, _)) = pairs.iter().find(|(k, _)| {
                let k = k.to_ascii_lowercase();
                k == "frontendname" || k.starts_with("suspendexc")
            }) {
                return vec![format!("{k}: {}", crate::opts::NOT_SUPPORTED)];
            }
            vec![
                "No valid entity in update command".to_string(),
                "Input line must include \"NodeName\", \"PartitionName\", \"Reservation/ReservationName\", \"JobId\", \"JobName\", \"FrontendName\" or \"SuspendExcNodes\"".to_string(),
            ]
        })?;
    let (ek, ev) = pairs.remove(entity);
    match ek.to_ascii_lowercase().as_str() {
        "jobid" => {
            let ids = job_ids(&[ev]).map_err(|e| vec![e])?;
            let fields: HashMap<String, String> = pairs.into_iter().collect();
            if fields.is_empty() {
                return Err(vec!["No changes specified".into()]);
            }
            Ok(Update::Job(UpdateJobRequest {
                job_ids: ids,
                fields,
                action: String::new(),
                reason: String::new(),
            }))
        }
        "jobname" => Err(vec![format!(
            "update JobName (use JobId): {}",
            crate::opts::NOT_SUPPORTED
        )]),
        "nodename" => {
            let names = drover_conf::hostlist::expand(&ev)
                .map_err(|_| vec![format!("Invalid node name specified: {ev}")])?;
            let mut state = String::new();
            let mut reason = String::new();
            let mut fields = HashMap::new();
            for (k, v) in pairs {
                match k.to_ascii_lowercase().as_str() {
                    "state" => state = v.to_ascii_uppercase(),
                    "reason" => reason = v,
                    _ => {
                        fields.insert(k, v);
                    }
                }
            }
            let needs_reason = matches!(
                state.as_str(),
                "DRAIN" | "DOWN" | "FAIL" | "DRAINING" | "DRAINED"
            );
            if needs_reason && reason.is_empty() {
                return Err(vec![
                    "You must specify a reason when DOWNING or DRAINING a node. Request denied"
                        .into(),
                ]);
            }
            if !state.is_empty()
                && !matches!(
                    state.as_str(),
                    "DRAIN"
                        | "RESUME"
                        | "DOWN"
                        | "UNDRAIN"
                        | "IDLE"
                        | "FAIL"
                        | "FUTURE"
                        | "POWER_DOWN"
                        | "POWER_DOWN_ASAP"
                        | "POWER_DOWN_FORCE"
                        | "POWER_UP"
                        | "NORESP"
                        | "CANCEL_REBOOT"
                )
            {
                return Err(vec![format!("Invalid node state specified: {state}")]);
            }
            if state.is_empty() && reason.is_empty() && fields.is_empty() {
                return Err(vec!["No changes specified".into()]);
            }
            Ok(Update::Node(UpdateNodeRequest {
                names,
                state,
                reason,
                fields,
            }))
        }
        _ => {
            let mut words = vec![format!("PartitionName={ev}")];
            words.extend(pairs.into_iter().map(|(k, v)| format!("{k}={v}")));
            super::part::parse("update", &words).map(Update::Partition)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn jobs() {
        match parse_update(&w(&["JobId=12", "TimeLimit=10", "Partition=gpu"])).unwrap() {
            Update::Job(r) => {
                assert_eq!(r.job_ids, vec!["12"]);
                assert_eq!(r.fields.get("TimeLimit").map(String::as_str), Some("10"));
                assert_eq!(r.fields.get("Partition").map(String::as_str), Some("gpu"));
            }
            other => panic!("{other:?}"),
        }
        match parse_update(&w(&["timelimit=5", "jobid=3,4_1"])).unwrap() {
            Update::Job(r) => assert_eq!(r.job_ids, vec!["3", "4_1"]),
            other => panic!("{other:?}"),
        }
        // JobName= before JobId= is the new name, not the selector.
        match parse_update(&w(&["JobName=new", "JobId=9"])).unwrap() {
            Update::Job(r) => {
                assert_eq!(r.job_ids, vec!["9"]);
                assert_eq!(r.fields.get("JobName").map(String::as_str), Some("new"));
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_update(&w(&["JobId=x", "TimeLimit=1"])).is_err());
        assert!(parse_update(&w(&["JobId=1"])).is_err());
        assert!(parse_update(&w(&["TimeLimit=1"])).is_err());
        assert!(parse_update(&w(&["garbage"])).is_err());
        assert_eq!(
            job_ids(&w(&["12", "13,14"])).unwrap(),
            vec!["12", "13", "14"]
        );
        assert_eq!(job_ids(&w(&["JobId=7"])).unwrap(), vec!["7"]);
        assert!(job_ids(&w(&[])).is_err());
    }

    #[test]
    fn requeuehold_state() {
        let (ids, f) = action_state("requeuehold", &w(&["State=specialexit", "5"])).unwrap();
        assert_eq!(ids, w(&["5"]));
        assert_eq!(f.get("State").map(String::as_str), Some("SpecialExit"));
        let e = action_state("requeuehold", &w(&["State=RUNNING", "5"])).unwrap_err();
        assert_eq!(
            e,
            w(&["Invalid state: State=RUNNING", "Valid states: SpecialExit"])
        );
        let (ids, f) = action_state("hold", &w(&["State=x"])).unwrap();
        assert_eq!((ids, f.len()), (w(&["State=x"]), 0));
    }

    #[test]
    fn nodes() {
        match parse_update(&w(&[
            "NodeName=node[1-2]",
            "State=drain",
            "Reason=disk broken",
        ]))
        .unwrap()
        {
            Update::Node(r) => {
                assert_eq!(r.names, vec!["node1", "node2"]);
                assert_eq!(r.state, "DRAIN");
                assert_eq!(r.reason, "disk broken");
            }
            other => panic!("{other:?}"),
        }
        let e = parse_update(&w(&["NodeName=n1", "State=DOWN"])).unwrap_err();
        assert!(e[0].starts_with("You must specify a reason"));
        assert!(parse_update(&w(&["NodeName=n1", "State=RESUME"])).is_ok());
        assert!(parse_update(&w(&["NodeName=n1", "State=SLEEPY"])).is_err());
        assert!(matches!(
            parse_update(&w(&["PartitionName=p", "State=DOWN"])),
            Ok(Update::Partition(_))
        ));
        assert!(parse_update(&w(&["PartitionName=p"])).is_err());
        match parse_update(&w(&["Partition=p", "MaxTime=5"])).unwrap() {
            Update::Partition(e) => assert_eq!((e.name.as_str(), e.args.len()), ("p", 1)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_update(&w(&["JobId=3", "Partition=p"])),
            Ok(Update::Job(_))
        ));
    }
}
