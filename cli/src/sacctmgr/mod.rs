//! `sacctmgr`: clusters, accounts (a tree), users, QOS and association
//! limits in droverdbd.

pub mod list;
pub mod parse;

use std::io::{BufRead, Write};

use drover_proto::acct::GetAssocsRequest;

use self::parse::{Cmd, Flags};
use crate::sacct::output::Mode;

const HELP: &str = "Usage: sacctmgr [-i] [-n] [-p|-P] [-s] COMMAND ENTITY [SPECS]
  commands: add|create, modify|update, delete|remove, list|show
  entities: cluster, account, user, qos, association
  -i  commit without asking      -n  no header
  -p  '|' after every field      -P  '|' between fields
  -s  with associations
Examples:
  sacctmgr -i add account ml Parent=science Description=\"Machine learning\" Fairshare=10
  sacctmgr -i add user alice Account=ml DefaultAccount=ml MaxJobs=4 MaxWall=2-00:00:00
  sacctmgr -i modify user where name=alice account=ml set GrpTRES=cpu=64,gres/gpu=4
  sacctmgr -i add qos high Priority=100 MaxWall=1-00:00:00
  sacctmgr show assoc where user=alice format=account,user,maxwall
  sacctmgr -n -s list user alice format=account%256";

pub fn run(args: &[String]) -> i32 {
    let (flags, cmd) = match parse::parse(args) {
        Ok(x) => x,
        Err(e) => {
            eprintln!(" {e}");
            return 1;
        }
    };
    match cmd {
        Cmd::Help => {
            println!("{HELP}");
            0
        }
        Cmd::Version => {
            crate::print_version();
            0
        }
        cmd => {
            let (cfg, rt) = match crate::conn::setup("sacctmgr") {
                Ok(x) => x,
                Err(rc) => return rc,
            };
            rt.block_on(execute(cfg, flags, cmd))
        }
    }
}

fn mode(f: &Flags) -> Mode {
    if f.parsable2 {
        Mode::Parsable2
    } else if f.parsable {
        Mode::Parsable
    } else {
        Mode::Table
    }
}

fn heading(verb: &str, entity: &str) -> String {
    let e = match entity {
        "account" => "Account(s)",
        "user" => "User(s)",
        "qos" => "QOS(s)",
        _ => "Cluster(s)",
    };
    match verb {
        "add" => format!(" Adding {e}"),
        "modify" => format!(" Modified {e}"),
        _ => format!(" Deleting {e}"),
    }
}

async fn execute(cfg: drover_conf::Config, flags: Flags, cmd: Cmd) -> i32 {
    let mut client = match crate::acctconn::client("sacctmgr", &cfg) {
        Ok(c) => c,
        Err(rc) => return rc,
    };
    match cmd {
        Cmd::List {
            entity,
            names,
            conditions,
            format,
        } => {
            let set = match client
                .get_assocs(GetAssocsRequest {
                    known_version: 0,
                    wait_ms: 0,
                })
                .await
            {
                Ok(r) => r.into_inner().set.unwrap_or_default(),
                Err(e) => {
                    crate::acctconn::report("sacctmgr", &e);
                    return 1;
                }
            };
            let fmt = format
                .unwrap_or_else(|| list::default_format(&entity, flags.with_assoc).to_string());
            let cols = match list::parse_format(&fmt) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!(" {e}");
                    return 1;
                }
            };
            let rows = list::rows(&set, &entity, flags.with_assoc);
            let rows = match list::filter(rows, &entity, &names, &conditions) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!(" {e}");
                    return 1;
                }
            };
            print!(
                "{}",
                list::render(&rows, &cols, mode(&flags), !flags.noheader)
            );
            0
        }
        Cmd::Change(mut req) => {
            if !flags.immediate {
                req.dry_run = true;
                let preview = match client.modify(req.clone()).await {
                    Ok(r) => r.into_inner().changes,
                    Err(e) => {
                        report_change(&e);
                        return 1;
                    }
                };
                if preview.is_empty() {
                    println!(" Nothing new added.");
                    return 0;
                }
                println!("{}", heading(&req.verb, &req.entity));
                for c in &preview {
                    println!("  {c}");
                }
                print!(
                    "Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): "
                );
                let _ = std::io::stdout().flush();
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                if !line.trim().eq_ignore_ascii_case("y") {
                    println!(" Changes Discarded");
                    return 0;
                }
                req.dry_run = false;
                return match client.modify(req).await {
                    Ok(_) => 0,
                    Err(e) => {
                        report_change(&e);
                        1
                    }
                };
            }
            match client.modify(req.clone()).await {
                Ok(r) => {
                    let changes = r.into_inner().changes;
                    if flags.quiet {
                        return 0;
                    }
                    if changes.is_empty() {
                        println!(" Nothing new added.");
                    } else {
                        println!("{}", heading(&req.verb, &req.entity));
                        for c in changes {
                            println!("  {c}");
                        }
                    }
                    0
                }
                Err(e) => {
                    report_change(&e);
                    1
                }
            }
        }
        Cmd::Help | Cmd::Version => 0,
    }
}

fn report_change(e: &tonic::Status) {
    match e.code() {
        tonic::Code::InvalidArgument | tonic::Code::PermissionDenied => {
            eprintln!(" {}", e.message())
        }
        _ => crate::acctconn::report("sacctmgr", e),
    }
}
