//! `drover bench submit`: submissions per second through the API from one
//! process with many requests in flight (see bench/run.sh).

use std::time::Instant;

use drover_proto::{JobSpec, SubmitRequest};

use crate::conn;

const USAGE: &str = "usage: drover bench submit [--count N] [--concurrency C] [--hold] [--quiet]";

pub fn run(args: &[String]) -> i32 {
    if args.first().map(String::as_str) == Some("acct-fill") {
        return crate::benchacct::run(&args[1..]);
    }
    if args.first().map(String::as_str) != Some("submit") {
        eprintln!("{USAGE}");
        return 2;
    }
    let (mut count, mut conc, mut hold, mut quiet) = (10_000u32, 256usize, false, false);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let num = |v: Option<&String>| v.and_then(|s| s.parse::<u64>().ok());
        match a.as_str() {
            "--count" => match num(it.next()) {
                Some(n) => count = n as u32,
                None => return usage(),
            },
            "--concurrency" => match num(it.next()) {
                Some(n) => conc = (n as usize).max(1),
                None => return usage(),
            },
            "--hold" => hold = true,
            "--quiet" => quiet = true,
            _ => return usage(),
        }
    }
    let Ok(cfg) = conn::load_config("drover") else {
        return 1;
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("drover: error: {e}");
            return 1;
        }
    };
    rt.block_on(async move {
        let Ok(client) = conn::client_for("drover", &cfg) else {
            return 1;
        };
        let cwd = std::env::current_dir()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "/tmp".into());
        let spec = JobSpec {
            name: "bench".into(),
            script: b"#!/bin/sh\ntrue\n".to_vec(),
            work_dir: cwd,
            std_out: "/dev/null".into(),
            hold,
            environment: vec!["PATH=/usr/bin:/bin".into()],
            ..Default::default()
        };
        let start = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        let mut sent = 0u32;
        let mut failed = 0u32;
        let mut first_err = None;
        while sent < count || !set.is_empty() {
            while sent < count && set.len() < conc {
                let mut c = client.clone();
                let s = spec.clone();
                set.spawn(async move { c.submit(SubmitRequest { spec: Some(s) }).await });
                sent += 1;
            }
            match set.join_next().await {
                Some(Ok(Ok(_))) => {}
                Some(Ok(Err(e))) => {
                    failed += 1;
                    first_err.get_or_insert(e.message().to_string());
                }
                Some(Err(_)) => failed += 1,
                None => break,
            }
        }
        let secs = start.elapsed().as_secs_f64();
        if !quiet {
            println!(
                "api submit: {count} jobs, {conc} in flight: {:.0} ms = {:.0} jobs/s{}",
                secs * 1000.0,
                f64::from(count - failed) / secs,
                if failed > 0 {
                    format!(" ({failed} failed)")
                } else {
                    String::new()
                }
            );
        }
        if let Some(e) = first_err {
            eprintln!("drover: error: {e}");
            return 1;
        }
        0
    })
}

fn usage() -> i32 {
    eprintln!("{USAGE}");
    2
}
