//! Why the core said no: what kind of refusal it is and Slurm's words for
//! it. The core's handlers return a [`Refusal`]; only the gRPC front
//! (`rpc/refusal.rs`) turns it into a wire status, and the runtime turns an
//! agent's failed call into one before handing it to the core. Pure.

use std::fmt;

/// The kind of refusal: which rule said no. The gRPC front maps each to the
/// status code of the same name; clients and scripts see that code and the
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The request itself is malformed or asks for what cannot be.
    InvalidArgument,
    /// No such job, step, node, reservation.
    NotFound,
    /// It exists already (a reservation's name).
    AlreadyExists,
    /// The caller may not do this.
    PermissionDenied,
    /// The caller could not be identified.
    Unauthenticated,
    /// Not now: the job or node is in a state that does not allow it.
    FailedPrecondition,
    /// A limit is reached (job count, job ids, disk).
    ResourceExhausted,
    /// Try again later (busy, suspended, not reachable).
    Unavailable,
    /// Started but gave up (an agent could not set a job up).
    Aborted,
    /// The other side does not know this request.
    Unimplemented,
    /// The controller's own fault (a key it cannot use).
    Internal,
    /// The call took too long.
    DeadlineExceeded,
    /// The caller gave up.
    Cancelled,
    /// Out of range (a number too large for its field).
    OutOfRange,
    /// Data lost or corrupt.
    DataLoss,
    /// Anything else.
    Unknown,
}

/// A refused request: the kind and Slurm's words (what `sbatch`, `scontrol`
/// and friends print after `error:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    kind: Kind,
    words: String,
}

macro_rules! kinds {
    ($($name:ident => $kind:ident),* $(,)?) => {
        $(
            #[doc = concat!("A refusal of kind [`Kind::", stringify!($kind), "`].")]
            pub fn $name(words: impl Into<String>) -> Refusal {
                Refusal::new(Kind::$kind, words)
            }
        )*
    };
}

impl Refusal {
    pub fn new(kind: Kind, words: impl Into<String>) -> Refusal {
        Refusal {
            kind,
            words: words.into(),
        }
    }

    kinds! {
        invalid_argument => InvalidArgument,
        not_found => NotFound,
        already_exists => AlreadyExists,
        permission_denied => PermissionDenied,
        unauthenticated => Unauthenticated,
        failed_precondition => FailedPrecondition,
        resource_exhausted => ResourceExhausted,
        unavailable => Unavailable,
        aborted => Aborted,
        unimplemented => Unimplemented,
        internal => Internal,
    }

    /// Which rule said no.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Slurm's words for it.
    pub fn words(&self) -> &str {
        &self.words
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.words)
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_its_kind_and_words() {
        let r = Refusal::not_found("Invalid job id specified");
        assert_eq!(r.kind(), Kind::NotFound);
        assert_eq!(r.words(), "Invalid job id specified");
        assert_eq!(r.to_string(), "NotFound: Invalid job id specified");
        assert_eq!(
            Refusal::invalid_argument(String::from("x")),
            Refusal::new(Kind::InvalidArgument, "x")
        );
        assert_ne!(Refusal::unavailable("x"), Refusal::aborted("x"));
    }
}
