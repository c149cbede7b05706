//! The `droverrestd` binary as an admin meets it: the OpenAPI document it
//! prints is the one in docs/, and bad options are refused with a clear
//! message. (Being an integration test, this also makes
//! `cargo test --workspace` build the binary the multi-process suite in
//! tests/ starts.)

use std::process::Command;

fn restd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_droverrestd"))
        .args(args)
        .output()
        .expect("run droverrestd")
}

#[test]
fn prints_the_openapi_document_kept_in_docs() {
    let out = restd(&["--openapi"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert!(doc["openapi"].as_str().unwrap_or("").starts_with("3."));
    assert!(
        doc["paths"]["/slurm/v0.0.40/jobs"].is_object(),
        "{text:.300}"
    );
    let kept =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json"))
            .expect("docs/openapi.json");
    let kept: serde_json::Value = serde_json::from_str(&kept).expect("docs/openapi.json is JSON");
    assert_eq!(
        doc, kept,
        "docs/openapi.json is out of date: droverrestd --openapi > docs/openapi.json"
    );
}

#[test]
fn bad_options_are_refused_naming_them() {
    let out = restd(&["--max-body", "12"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-body: expected bytes >= 1024, got '12'"),
        "{err}"
    );
    let out = restd(&["--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown option --frobnicate"));
}
