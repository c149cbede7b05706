//! Reaching the controller and the accounting daemon as the request's user.
//! One lazily connected channel each (HTTP/2, shared by all requests); each
//! request wraps it with credentials made for its caller, signed with the
//! cluster key, so the controller applies exactly that user's permissions
//! and PrivateData. Daemon credentials only for `/metrics` (counts only).

use std::time::Duration;

use drover_proto::auth::ClusterKey;
use drover_proto::client::{Accounting, Agent, Controller, Credential, Scheduler, Signed, Targets};
use tonic::transport::Channel;

use crate::auth::Caller;

pub struct Ctl {
    key: ClusterKey,
    host: String,
    /// The controllers in order (the active one followed).
    ctld: Targets,
    dbd: Option<Channel>,
}

impl Ctl {
    pub fn new(
        key: ClusterKey,
        cfg: &drover_conf::Config,
        dbd_addr: Option<&str>,
    ) -> Result<Ctl, String> {
        let ctld = drover_proto::client::targets_for(cfg)?;
        let dbd = match dbd_addr {
            Some(a) => Some(drover_proto::client::channel(a, Duration::from_secs(5))?),
            None => None,
        };
        Ok(Ctl {
            key,
            host: drover_proto::auth::hostname(),
            ctld,
            dbd,
        })
    }

    fn cred(&self, caller: &Caller) -> Credential {
        Credential::on_behalf(self.key.clone(), self.host.clone(), caller.ids.clone())
    }

    /// The controller, as `caller`.
    pub fn controller(&self, caller: &Caller) -> Controller {
        Controller::new(Signed::new(self.ctld.clone(), self.cred(caller)))
            .max_decoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
            .max_encoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
    }

    /// The controller's scheduler service (reservations), as `caller`.
    pub fn scheduler(&self, caller: &Caller) -> Scheduler {
        Scheduler::new(Signed::new(self.ctld.clone(), self.cred(caller)))
            .max_decoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
    }

    /// The controller, as this daemon (for aggregate metrics).
    pub fn controller_as_daemon(&self) -> Controller {
        let cred = Credential::daemon(self.key.clone(), self.host.clone());
        Controller::new(Signed::new(self.ctld.clone(), cred))
            .max_decoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
    }

    /// The node agent at `addr` (`host:port`), as `caller`.
    pub fn agent(&self, caller: &Caller, addr: &str) -> Result<Agent, String> {
        drover_proto::client::agent(addr, self.cred(caller))
    }

    /// The accounting daemon as `caller`; None when accounting is off.
    pub fn accounting(&self, caller: &Caller) -> Option<Accounting> {
        let ch = self.dbd.clone()?;
        Some(
            Accounting::new(Signed::new(ch, self.cred(caller)))
                .max_decoding_message_size(drover_proto::MAX_MESSAGE_BYTES)
                .max_encoding_message_size(drover_proto::MAX_MESSAGE_BYTES),
        )
    }
}
