//! The web dashboard: one HTML page, two scripts and a style sheet, embedded
//! in the binary and served at `/` without authentication (they hold no
//! data; the page asks the REST API for everything, with the token the
//! user pastes, sent in a header, never a cookie).

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub const INDEX: &str = include_str!("../web/index.html");
pub const SCRIPT: &str = include_str!("../web/app.js");
pub const COMPUTE: &str = include_str!("../web/compute.js");
pub const STYLE: &str = include_str!("../web/app.css");

/// Only this origin's script and styles, no framing, no referrer.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                   connect-src 'self'; img-src 'self' data:; form-action 'none'; \
                   base-uri 'none'; frame-ancestors 'none'";

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// `/`, `/dashboard/app.js`, `/dashboard/compute.js`, `/dashboard/app.css`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/dashboard/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/dashboard/compute.js",
            get(|| async { asset("text/javascript; charset=utf-8", COMPUTE) }),
        )
        .route(
            "/dashboard/app.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page loads only its own assets, and has nothing the CSP
    /// would block: no inline script or style, no style attributes, no
    /// handlers in the markup.
    #[test]
    fn page_fits_its_content_policy() {
        assert!(INDEX.contains(r#"<script src="/dashboard/app.js" defer></script>"#));
        assert!(INDEX.contains(r#"<link rel="stylesheet" href="/dashboard/app.css">"#));
        assert!(INDEX.contains(r#"<script src="/dashboard/compute.js" defer></script>"#));
        assert_eq!(INDEX.matches("<script").count(), 2);
        assert!(!INDEX.contains("<style"));
        for bad in [" style=", " onclick=", " onload=", "javascript:"] {
            assert!(!INDEX.contains(bad), "{bad}");
        }
        // The scripts set no style attributes and write no HTML.
        for bad in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "style: ",
            "eval(",
        ] {
            assert!(!SCRIPT.contains(bad) && !COMPUTE.contains(bad), "{bad}");
        }
        // No cookies: the token goes in a header.
        assert!(!SCRIPT.contains("document.cookie") && !COMPUTE.contains("document.cookie"));
        assert!(SCRIPT.contains("'X-SLURM-USER-TOKEN'"));
        assert!(STYLE.contains(".st-RUNNING"));
    }
}
