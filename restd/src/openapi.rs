//! The OpenAPI 3.0 document of this API (`/openapi/v3`, and
//! docs/openapi.json), generated from the tables the router and the
//! handlers use: [`ENDPOINTS`], the job description's
//! [`FIELDS`](crate::jobdesc::FIELDS) and the update's
//! [`UPDATE_FIELDS`](crate::jobs::UPDATE_FIELDS). Pure.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Map, Value};

use crate::jobdesc::{Field, FIELDS};
use crate::jobs::UPDATE_FIELDS;
use crate::routes::{Body, Endpoint, ENDPOINTS};

fn r(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn field_schema(f: Field) -> Value {
    match f {
        Field::Opt(_) => {
            json!({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "array", "items": {"type": "string"}}]})
        }
        Field::MemMb(_) => {
            json!({"description": "megabytes", "oneOf": [{"type": "integer"}, r("uint64_no_val")]})
        }
        Field::Minutes(_) => {
            json!({"description": "minutes", "oneOf": [{"type": "integer"}, r("uint32_no_val")]})
        }
        Field::Flag(..) => json!({"type": "boolean"}),
        Field::Tres(_) => json!({"type": "string", "example": "gres/gpu:1"}),
        Field::Text => json!({"type": "string"}),
        Field::List => json!({"type": "array", "items": {"type": "string"}}),
    }
}

fn schemas() -> Value {
    let no_val = |t: &str| {
        json!({"type": "object", "properties": {
            "set": {"type": "boolean"}, "infinite": {"type": "boolean"}, "number": {"type": t}}})
    };
    let mut desc = Map::new();
    for (name, f) in FIELDS {
        desc.insert((*name).to_string(), field_schema(*f));
    }
    let mut update = Map::new();
    for (name, key) in UPDATE_FIELDS {
        let s = match *key {
            "" => json!({"type": "boolean", "description": "true: hold, false: release"}),
            "TimeLimit" | "TimeMin" => json!({"oneOf": [{"type": "integer"}, r("uint32_no_val")]}),
            "Nice" | "Priority" => json!({"oneOf": [{"type": "integer"}, r("uint32_no_val")]}),
            _ => json!({"type": "string"}),
        };
        update.insert((*name).to_string(), s);
    }
    json!({
        "uint32_no_val": no_val("integer"),
        "uint64_no_val": no_val("integer"),
        "error": {"type": "object", "properties": {
            "description": {"type": "string"}, "error_number": {"type": "integer"},
            "error": {"type": "string"}, "source": {"type": "string"}}},
        "warning": {"type": "object", "properties": {
            "description": {"type": "string"}, "source": {"type": "string"}}},
        "meta": {"type": "object", "properties": {
            "plugin": {"type": "object"}, "client": {"type": "object"},
            "command": {"type": "array", "items": {"type": "string"}}, "slurm": {"type": "object"}}},
        "openapi_resp": {"type": "object", "properties": {
            "meta": r("meta"),
            "errors": {"type": "array", "items": r("error")},
            "warnings": {"type": "array", "items": r("warning")}}},
        "job_desc_msg": {"type": "object", "properties": Value::Object(desc)},
        "job_submit_req": {"type": "object", "required": ["job"], "properties": {
            "script": {"type": "string"}, "job": r("job_desc_msg")}},
        "job_update_req": {"type": "object", "properties": Value::Object(update)},
    })
}

fn operation(e: &Endpoint) -> Value {
    let mut params = Vec::new();
    for seg in e.path.split('/') {
        if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            params.push(
                json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}),
            );
        }
    }
    for q in e.query {
        params.push(
            json!({"name": q, "in": "query", "required": false, "schema": {"type": "string"}}),
        );
    }
    let ok = match e.data {
        _ if e.path == "/metrics" => json!({"description": "Prometheus text exposition",
            "content": {"text/plain": {"schema": {"type": "string"}}}}),
        _ if e.path == "/openapi/v3" => json!({"description": "this document",
            "content": {"application/json": {"schema": {"type": "object"}}}}),
        "" => {
            json!({"description": "done", "content": {"application/json": {"schema": r("openapi_resp")}}})
        }
        data => json!({"description": "the answer", "content": {"application/json": {"schema": {
            "allOf": [r("openapi_resp"), {"type": "object", "properties": {data: {}}}]}}}}),
    };
    let mut op = json!({
        "operationId": format!("{}_{}", e.method, e.path.trim_start_matches('/').replace(['/', '{', '}', '.'], "_")),
        "summary": e.summary,
        "parameters": params,
        "responses": {
            "200": ok,
            "default": {"description": "an error, in Slurm's shape",
                        "content": {"application/json": {"schema": r("openapi_resp")}}},
        },
    });
    let body = match e.body {
        Body::None => None,
        Body::Submit => Some("job_submit_req"),
        Body::Update => Some("job_update_req"),
    };
    if let Some(b) = body {
        op["requestBody"] =
            json!({"required": true, "content": {"application/json": {"schema": r(b)}}});
    }
    if !e.auth {
        op["security"] = json!([]);
    }
    op
}

/// The document.
pub fn document() -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for e in ENDPOINTS {
        let item = paths.entry(e.path.to_string()).or_insert_with(|| json!({}));
        item[e.method] = operation(e);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Drover REST API (Slurm data_parser v0.0.40)",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "slurmrestd's paths and JSON for Drover. Authenticate with X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (scontrol token), or over droverrestd's local Unix socket.",
        },
        "components": {
            "securitySchemes": {
                "user": {"type": "apiKey", "in": "header", "name": "X-SLURM-USER-NAME"},
                "token": {"type": "apiKey", "in": "header", "name": "X-SLURM-USER-TOKEN"},
            },
            "schemas": schemas(),
        },
        "security": [{"user": [], "token": []}],
        "paths": Value::Object(paths),
    })
}

pub fn text() -> String {
    serde_json::to_string_pretty(&document()).unwrap_or_default() + "\n"
}

pub async fn serve() -> Response {
    crate::reply::json_response(StatusCode::OK, text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_endpoint_and_field_is_documented() {
        let d = document();
        for e in ENDPOINTS {
            assert!(
                d["paths"][e.path][e.method].is_object(),
                "{} {}",
                e.method,
                e.path
            );
        }
        for (f, _) in FIELDS {
            assert!(
                d["components"]["schemas"]["job_desc_msg"]["properties"][*f].is_object(),
                "{f}"
            );
        }
    }

    /// docs/openapi.json is this document (regenerate with
    /// `droverrestd --openapi > docs/openapi.json`).
    #[test]
    fn docs_copy_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == text(),
            "docs/openapi.json is stale: run `droverrestd --openapi > docs/openapi.json`"
        );
    }
}
