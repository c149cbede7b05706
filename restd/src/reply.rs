//! Answers in slurmrestd's shape: a JSON object with `meta`, `errors` and
//! `warnings` beside the data; failures as `errors[]` entries
//! (`description`, `error_number`, `error`, `source`) with a 4xx status.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

/// Slurm's error numbers (slurm_errno.h) for what the REST API reports.
pub mod errno {
    pub const PROTOCOL_AUTHENTICATION: i64 = 1007;
    pub const CONNECTION: i64 = 1001;
    pub const INVALID_PARTITION_NAME: i64 = 2000;
    pub const ACCESS_DENIED: i64 = 2002;
    pub const INVALID_JOB_ID: i64 = 2017;
    pub const INVALID_NODE_NAME: i64 = 2009;
    pub const REST_INVALID_QUERY: i64 = 9000;
    pub const REST_FAIL_PARSING: i64 = 9001;
    pub const REST_INVALID_JOBS_DESC: i64 = 9002;
    pub const REST_EMPTY_RESULT: i64 = 9003;
    pub const ACCOUNTING_DISABLED: i64 = 2073;
    pub const UNSPECIFIED: i64 = 1;
}

/// One failure, ready to be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub status: StatusCode,
    pub errno: i64,
    /// Slurm's words for `errno`.
    pub error: String,
    /// What exactly went wrong (the field, the job, the controller's words).
    pub description: String,
    /// Where: the endpoint or the field path.
    pub source: String,
}

impl Failure {
    pub fn new(
        status: StatusCode,
        errno: i64,
        error: &str,
        description: impl Into<String>,
    ) -> Failure {
        Failure {
            status,
            errno,
            error: error.to_string(),
            description: description.into(),
            source: String::new(),
        }
    }

    pub fn at(mut self, source: impl Into<String>) -> Failure {
        self.source = source.into();
        self
    }

    pub fn parsing(description: impl Into<String>) -> Failure {
        Failure::new(
            StatusCode::BAD_REQUEST,
            errno::REST_FAIL_PARSING,
            "Failure during parsing",
            description,
        )
    }

    pub fn query(description: impl Into<String>) -> Failure {
        Failure::new(
            StatusCode::BAD_REQUEST,
            errno::REST_INVALID_QUERY,
            "Query empty or not RFC7320 compliant",
            description,
        )
    }

    pub fn invalid_job(id: &str) -> Failure {
        Failure::new(
            StatusCode::NOT_FOUND,
            errno::INVALID_JOB_ID,
            "Invalid job id specified",
            format!("Unable to find job {id}"),
        )
    }

    pub fn unauthorized(description: impl Into<String>) -> Failure {
        Failure::new(
            StatusCode::UNAUTHORIZED,
            errno::PROTOCOL_AUTHENTICATION,
            "Protocol authentication error",
            description,
        )
    }

    pub fn not_found_url(path: &str) -> Failure {
        Failure::new(
            StatusCode::NOT_FOUND,
            errno::REST_INVALID_QUERY,
            "Unable find requested URL",
            format!("Unable find requested URL: {path}"),
        )
        .at(path.to_string())
    }

    /// A controller or accounting error, by the words it came with.
    pub fn from_status(st: &tonic::Status) -> Failure {
        use tonic::Code;
        let msg = st.message().to_string();
        let by_words = |m: &str| -> Option<(StatusCode, i64, &'static str)> {
            if m.contains("Invalid job id") || m.contains("Invalid job array") {
                Some((
                    StatusCode::NOT_FOUND,
                    errno::INVALID_JOB_ID,
                    "Invalid job id specified",
                ))
            } else if m.contains("Access/permission denied") {
                Some((
                    StatusCode::FORBIDDEN,
                    errno::ACCESS_DENIED,
                    "Access/permission denied",
                ))
            } else if m.contains("Invalid partition name") {
                Some((
                    StatusCode::BAD_REQUEST,
                    errno::INVALID_PARTITION_NAME,
                    "Invalid partition name specified",
                ))
            } else {
                None
            }
        };
        if let Some((status, n, words)) = by_words(&msg) {
            return Failure::new(status, n, words, msg);
        }
        match st.code() {
            Code::NotFound => Failure::new(
                StatusCode::NOT_FOUND,
                errno::INVALID_JOB_ID,
                "Invalid job id specified",
                msg,
            ),
            Code::PermissionDenied => Failure::new(
                StatusCode::FORBIDDEN,
                errno::ACCESS_DENIED,
                "Access/permission denied",
                msg,
            ),
            Code::Unauthenticated => Failure::unauthorized(msg),
            Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Internal
                if drover_cli::conn::classify(st) == drover_cli::conn::RpcError::Connect =>
            {
                Failure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    errno::CONNECTION,
                    "Unable to contact slurm controller (connect failure)",
                    msg,
                )
            }
            Code::Internal | Code::Unknown | Code::DataLoss => Failure::new(
                StatusCode::BAD_GATEWAY,
                errno::UNSPECIFIED,
                "Unspecified error",
                msg,
            ),
            _ => Failure::new(
                StatusCode::BAD_REQUEST,
                errno::UNSPECIFIED,
                &msg,
                msg.clone(),
            ),
        }
    }

    fn entry(&self) -> Value {
        json!({
            "description": self.description,
            "error_number": self.errno,
            "error": self.error,
            "source": self.source,
        })
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let status = self.status;
        let body = json!({
            "meta": meta(),
            "errors": [self.entry()],
            "warnings": [],
        });
        json_response(status, body.to_string())
    }
}

/// The `meta` object of every answer.
pub fn meta() -> Value {
    json!({
        "plugin": {
            "type": "openapi/slurmctld",
            "name": "Slurm OpenAPI slurmctld",
            "data_parser": drover_cli::json::DATA_PARSER,
            "accounting_storage": "accounting_storage/slurmdbd",
        },
        "client": {"source": "", "user": "", "group": ""},
        "command": [],
        "slurm": {
            "version": {
                "major": drover_cli::SLURM_MAJOR,
                "micro": drover_cli::SLURM_MICRO,
                "minor": drover_cli::SLURM_MINOR,
            },
            "release": drover_cli::SLURM_VERSION,
            "cluster": "",
        },
    })
}

/// A successful answer: `data`'s members, then meta/errors/warnings.
pub fn ok(data: Vec<(&str, Value)>, warnings: Vec<String>) -> Response {
    let mut m = Map::new();
    for (k, v) in data {
        m.insert(k.to_string(), v);
    }
    m.insert("meta".into(), meta());
    m.insert("errors".into(), Value::Array(Vec::new()));
    m.insert(
        "warnings".into(),
        Value::Array(
            warnings
                .into_iter()
                .map(|w| json!({"description": w, "source": ""}))
                .collect(),
        ),
    );
    json_response(StatusCode::OK, Value::Object(m).to_string())
}

/// A body already serialized.
pub fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub type Answer = Result<Response, Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_slurm_errors() {
        let f = Failure::from_status(&tonic::Status::not_found("Invalid job id specified"));
        assert_eq!(
            (f.status, f.errno),
            (StatusCode::NOT_FOUND, errno::INVALID_JOB_ID)
        );
        let f = Failure::from_status(&tonic::Status::permission_denied(
            "Access/permission denied",
        ));
        assert_eq!(
            (f.status, f.errno),
            (StatusCode::FORBIDDEN, errno::ACCESS_DENIED)
        );
        let f = Failure::from_status(&tonic::Status::invalid_argument(
            "Invalid partition name specified",
        ));
        assert_eq!(f.status, StatusCode::BAD_REQUEST);
        let f = Failure::from_status(&tonic::Status::unavailable("tcp connect error"));
        assert_eq!(f.status, StatusCode::SERVICE_UNAVAILABLE);
        let f = Failure::from_status(&tonic::Status::invalid_argument(
            "Requested node configuration is not available",
        ));
        assert_eq!(f.status, StatusCode::BAD_REQUEST);
        assert_eq!(f.error, "Requested node configuration is not available");
    }
}
