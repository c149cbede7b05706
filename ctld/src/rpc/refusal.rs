//! The core's refusals on the wire: a [`Refusal`] becomes the gRPC status of
//! the same kind with Slurm's words as its message, and an agent's failed
//! call becomes a [`Refusal`] before the core sees it. The only place the two
//! meet.

use tonic::{Code, Status};

use crate::refusal::{Kind, Refusal};

fn code(k: Kind) -> Code {
    match k {
        Kind::InvalidArgument => Code::InvalidArgument,
        Kind::NotFound => Code::NotFound,
        Kind::AlreadyExists => Code::AlreadyExists,
        Kind::PermissionDenied => Code::PermissionDenied,
        Kind::Unauthenticated => Code::Unauthenticated,
        Kind::FailedPrecondition => Code::FailedPrecondition,
        Kind::ResourceExhausted => Code::ResourceExhausted,
        Kind::Unavailable => Code::Unavailable,
        Kind::Aborted => Code::Aborted,
        Kind::Unimplemented => Code::Unimplemented,
        Kind::Internal => Code::Internal,
        Kind::DeadlineExceeded => Code::DeadlineExceeded,
        Kind::Cancelled => Code::Cancelled,
        Kind::OutOfRange => Code::OutOfRange,
        Kind::DataLoss => Code::DataLoss,
        Kind::Unknown => Code::Unknown,
    }
}

fn kind(c: Code) -> Kind {
    match c {
        Code::InvalidArgument => Kind::InvalidArgument,
        Code::NotFound => Kind::NotFound,
        Code::AlreadyExists => Kind::AlreadyExists,
        Code::PermissionDenied => Kind::PermissionDenied,
        Code::Unauthenticated => Kind::Unauthenticated,
        Code::FailedPrecondition => Kind::FailedPrecondition,
        Code::ResourceExhausted => Kind::ResourceExhausted,
        Code::Unavailable => Kind::Unavailable,
        Code::Aborted => Kind::Aborted,
        Code::Unimplemented => Kind::Unimplemented,
        Code::Internal => Kind::Internal,
        Code::DeadlineExceeded => Kind::DeadlineExceeded,
        Code::Cancelled => Kind::Cancelled,
        Code::OutOfRange => Kind::OutOfRange,
        Code::DataLoss => Kind::DataLoss,
        Code::Ok | Code::Unknown => Kind::Unknown,
    }
}

impl From<Refusal> for Status {
    fn from(r: Refusal) -> Status {
        Status::new(code(r.kind()), r.words())
    }
}

impl From<Status> for Refusal {
    fn from(s: Status) -> Refusal {
        Refusal::new(kind(s.code()), s.message())
    }
}

impl From<&Status> for Refusal {
    fn from(s: &Status) -> Refusal {
        Refusal::new(kind(s.code()), s.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_goes_to_its_code_and_back() {
        let kinds = [
            Kind::InvalidArgument,
            Kind::NotFound,
            Kind::AlreadyExists,
            Kind::PermissionDenied,
            Kind::Unauthenticated,
            Kind::FailedPrecondition,
            Kind::ResourceExhausted,
            Kind::Unavailable,
            Kind::Aborted,
            Kind::Unimplemented,
            Kind::Internal,
            Kind::DeadlineExceeded,
            Kind::Cancelled,
            Kind::OutOfRange,
            Kind::DataLoss,
            Kind::Unknown,
        ];
        for k in kinds {
            let s = Status::from(Refusal::new(k, "Invalid job id specified"));
            assert_eq!(s.message(), "Invalid job id specified");
            assert_eq!(format!("{:?}", s.code()), format!("{k:?}"));
            assert_eq!(
                Refusal::from(&s),
                Refusal::new(k, "Invalid job id specified")
            );
        }
        assert_eq!(Refusal::from(Status::ok("")).kind(), Kind::Unknown);
    }
}
