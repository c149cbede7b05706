//! Query strings and request bodies: parsed strictly, every failure in
//! Slurm's error shape. Pure.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use serde_json::Value;

use crate::reply::{errno, Failure};

/// `a=1&b=x` as pairs, in order; a key given twice is an error.
pub fn pairs(raw: Option<&str>, allowed: &[&str]) -> Result<Vec<(String, String)>, Failure> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        if !allowed.contains(&k.as_ref()) {
            return Err(Failure::query(format!("unknown query parameter '{k}'")).at(k.to_string()));
        }
        if out.iter().any(|(o, _)| *o == k) {
            return Err(Failure::query(format!("query parameter '{k}' given twice")));
        }
        out.push((k.into_owned(), v.into_owned()));
    }
    Ok(out)
}

pub fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// An epoch-seconds parameter.
pub fn epoch(pairs: &[(String, String)], key: &str) -> Result<Option<i64>, Failure> {
    match get(pairs, key) {
        None | Some("") => Ok(None),
        Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
            Failure::query(format!(
                "{key}: expected seconds since the epoch, got '{v}'"
            ))
            .at(key.to_string())
        }),
    }
}

/// The body as JSON (a body over the size limit, or not JSON, is refused).
pub fn json_body(body: Result<Bytes, BytesRejection>) -> Result<Value, Failure> {
    let bytes = body.map_err(|r| {
        let status = r.status();
        let mut f = Failure::parsing(format!("request body refused: {}", r.body_text()));
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            f.status = StatusCode::PAYLOAD_TOO_LARGE;
            f.errno = errno::REST_FAIL_PARSING;
        }
        f
    })?;
    if bytes.is_empty() {
        return Err(Failure::parsing(
            "the request body is empty (expected JSON)",
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| Failure::parsing(format!("malformed JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_pairs() {
        let p = pairs(Some("signal=KILL&flags=BATCH_JOB"), &["signal", "flags"]).unwrap();
        assert_eq!(get(&p, "signal"), Some("KILL"));
        assert!(pairs(Some("colour=red"), &["signal"]).is_err());
        assert!(pairs(Some("signal=1&signal=2"), &["signal"]).is_err());
        assert!(pairs(None, &[]).unwrap().is_empty());
        let p = pairs(Some("update_time=12x"), &["update_time"]).unwrap();
        assert!(epoch(&p, "update_time").is_err());
        let p = pairs(Some("update_time=12"), &["update_time"]).unwrap();
        assert_eq!(epoch(&p, "update_time").unwrap(), Some(12));
    }

    #[test]
    fn bodies() {
        assert!(json_body(Ok(Bytes::from_static(b"{\"a\": 1}"))).is_ok());
        for bad in [&b""[..], b"{", b"nul", b"{\"a\":}"] {
            let f = json_body(Ok(Bytes::copy_from_slice(bad))).unwrap_err();
            assert_eq!(f.status, StatusCode::BAD_REQUEST);
        }
    }
}
