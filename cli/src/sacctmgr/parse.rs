//! sacctmgr's command line: options, then `VERB ENTITY [names] [where
//! K=V...] [set K=V...] [format=...]`. Pure.

use drover_proto::acct::{KeyValue, ModifyRequest};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Flags {
    pub immediate: bool,
    pub noheader: bool,
    pub parsable: bool,
    pub parsable2: bool,
    pub with_assoc: bool,
    pub quiet: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    Help,
    Version,
    Change(ModifyRequest),
    List {
        entity: String,
        names: Vec<String>,
        conditions: Vec<KeyValue>,
        format: Option<String>,
    },
}

pub fn entity_name(s: &str) -> Option<&'static str> {
    let l = s.to_ascii_lowercase();
    Some(match l.as_str() {
        "account" | "accounts" | "acct" => "account",
        "user" | "users" => "user",
        "qos" => "qos",
        "cluster" | "clusters" => "cluster",
        "association" | "associations" | "assoc" | "assocs" => "assoc",
        _ => return None,
    })
}

fn verb_name(s: &str) -> Option<&'static str> {
    Some(match s.to_ascii_lowercase().as_str() {
        "add" | "create" => "add",
        "modify" | "update" => "modify",
        "delete" | "remove" => "delete",
        "list" | "show" => "list",
        "help" => "help",
        "version" => "version",
        _ => return None,
    })
}

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_ascii_lowercase(),
        value: value.trim_matches('"').trim_matches('\'').to_string(),
    }
}

/// Split `key=value`, `key+=value`, `key-=value` (the latter two as
/// `key+`/`key-`).
fn split_kv(w: &str) -> Option<(String, String)> {
    let (k, v) = w.split_once('=')?;
    Some((k.to_string(), v.to_string()))
}

pub fn parse(args: &[String]) -> Result<(Flags, Cmd), String> {
    let mut f = Flags::default();
    let mut words: Vec<String> = Vec::new();
    for a in args {
        match a.as_str() {
            "-i" | "--immediate" => f.immediate = true,
            "-n" | "--noheader" => f.noheader = true,
            "-p" | "--parsable" => f.parsable = true,
            "-P" | "--parsable2" => f.parsable2 = true,
            "-s" | "--associations" => f.with_assoc = true,
            "-Q" | "--quiet" => f.quiet = true,
            "-h" | "--help" | "--usage" => return Ok((f, Cmd::Help)),
            "-V" | "--version" => return Ok((f, Cmd::Version)),
            "-v" | "--verbose" | "-r" | "--readonly" => {}
            s if s.starts_with('-') && s.len() > 1 && !s.contains('=') => {
                // Bundled short flags (-nP, -insP).
                if s[1..].chars().all(|c| "inpPsQv".contains(c)) && !s.starts_with("--") {
                    for c in s[1..].chars() {
                        match c {
                            'i' => f.immediate = true,
                            'n' => f.noheader = true,
                            'p' => f.parsable = true,
                            'P' => f.parsable2 = true,
                            's' => f.with_assoc = true,
                            'Q' => f.quiet = true,
                            _ => {}
                        }
                    }
                } else {
                    return Err(format!("unrecognized option '{s}'"));
                }
            }
            _ => words.push(a.clone()),
        }
    }
    // `key = value` written with spaces: join them.
    let mut joined: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if (w == "=" || w.ends_with('=')) && i + 1 < words.len() && !joined.is_empty() {
            if w == "=" {
                let k = joined.pop().unwrap_or_default();
                joined.push(format!("{k}={}", words[i + 1]));
            } else {
                joined.push(format!("{w}{}", words[i + 1]));
            }
            i += 2;
            continue;
        }
        joined.push(w.clone());
        i += 1;
    }
    let mut it = joined.into_iter();
    let verb = it.next().ok_or_else(|| "No command given".to_string())?;
    let verb = verb_name(&verb).ok_or_else(|| format!("Unknown command \"{verb}\""))?;
    match verb {
        "help" => return Ok((f, Cmd::Help)),
        "version" => return Ok((f, Cmd::Version)),
        _ => {}
    }
    let ent = it
        .next()
        .ok_or_else(|| "No entity given (account, user, qos, cluster, association)".to_string())?;
    let entity = entity_name(&ent).ok_or_else(|| format!("Unknown entity \"{ent}\""))?;
    let mut names = Vec::new();
    let mut conditions = Vec::new();
    let mut values = Vec::new();
    let mut format = None;
    #[derive(PartialEq)]
    enum Part {
        Start,
        Where,
        Set,
    }
    let mut part = Part::Start;
    for w in it {
        match w.to_ascii_lowercase().as_str() {
            "where" => {
                part = Part::Where;
                continue;
            }
            "set" => {
                part = Part::Set;
                continue;
            }
            _ => {}
        }
        match split_kv(&w) {
            Some((k, v)) => {
                let lk = k.to_ascii_lowercase();
                if lk == "format" {
                    format = Some(v);
                    continue;
                }
                let pair = if let Some(base) = lk.strip_suffix('+') {
                    kv(&format!("{base}+"), &v)
                } else if let Some(base) = lk.strip_suffix('-') {
                    kv(&format!("{base}-"), &v)
                } else {
                    kv(&lk, &v)
                };
                match (verb, &part) {
                    ("add", _) => values.push(pair),
                    ("modify", Part::Set) => values.push(pair),
                    _ => conditions.push(pair),
                }
            }
            None => names.extend(w.split(',').filter(|s| !s.is_empty()).map(str::to_string)),
        }
    }
    if verb == "list" {
        return Ok((
            f,
            Cmd::List {
                entity: entity.to_string(),
                names,
                conditions,
                format,
            },
        ));
    }
    if entity == "assoc" {
        return Err(format!(
            "sacctmgr cannot {verb} associations directly: {verb} a user or account"
        ));
    }
    if verb == "modify" && values.is_empty() {
        return Err("You didn't give me anything to set".into());
    }
    Ok((
        f,
        Cmd::Change(ModifyRequest {
            verb: verb.to_string(),
            entity: entity.to_string(),
            names,
            conditions,
            values,
            dry_run: false,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> (Flags, Cmd) {
        let args: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        parse(&args).unwrap()
    }

    #[test]
    fn commands() {
        let (f, c) = p("-i add user alice,bob Account=ml DefaultAccount=ml");
        assert!(f.immediate);
        let Cmd::Change(r) = c else { panic!() };
        assert_eq!((r.verb.as_str(), r.entity.as_str()), ("add", "user"));
        assert_eq!(r.names, ["alice", "bob"]);
        assert_eq!(r.values[0].key, "account");
        let (_, c) = p("modify user where name=alice account=ml set MaxJobs=4 QOS+=high");
        let Cmd::Change(r) = c else { panic!() };
        assert_eq!(r.conditions.len(), 2);
        assert_eq!(r.values[1].key, "qos+");
        let (f, c) = p("-nsP list user alice format=account%256");
        assert!(f.noheader && f.with_assoc && f.parsable2);
        assert_eq!(
            c,
            Cmd::List {
                entity: "user".into(),
                names: vec!["alice".into()],
                conditions: vec![],
                format: Some("account%256".into()),
            }
        );
        let (_, c) = p("show assoc where user = bob");
        let Cmd::List { conditions, .. } = c else {
            panic!()
        };
        assert_eq!(conditions[0].value, "bob");
        assert!(parse(&["frob".to_string()]).is_err());
        assert!(parse(&["add".to_string(), "thing".to_string()]).is_err());
        assert!(parse(&["modify".into(), "user".into(), "alice".into()]).is_err());
    }
}
