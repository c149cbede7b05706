//! Connections to node agents, by address, shared by the owner loop (which
//! performs the core's agent effects) and the RPC handlers (step launches
//! and `sstat` fan out from there).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use drover_proto::client::{Agent, Credential};

#[derive(Clone)]
pub struct AgentPool {
    cred: Credential,
    conns: Arc<Mutex<HashMap<String, Agent>>>,
}

impl AgentPool {
    pub fn new(cred: Credential) -> AgentPool {
        AgentPool {
            cred,
            conns: Arc::default(),
        }
    }

    /// A client for the agent at `addr` (made on first use, then reused).
    pub fn get(&self, addr: &str) -> Option<Agent> {
        let mut conns = self.conns.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = conns.get(addr) {
            return Some(a.clone());
        }
        match drover_proto::client::agent(addr, self.cred.clone()) {
            Ok(a) => {
                conns.insert(addr.to_string(), a.clone());
                Some(a)
            }
            Err(e) => {
                tracing::warn!("agent at {addr}: {e}");
                None
            }
        }
    }

    /// The daemon credential the connections use.
    pub fn cred(&self) -> Credential {
        self.cred.clone()
    }

    /// Drop every connection (addresses may have changed).
    pub fn clear(&self) {
        self.conns.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
