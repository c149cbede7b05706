//! The mails due and not yet sent: what the write-ahead log and snapshots
//! hold of job mail (`WalRecord.mail_due` / `mail_sent`, `Snapshot.mails`).

use std::collections::BTreeMap;

use drover_proto::state::{wal_record::Kind, MailRecord};

/// Mails due and not yet sent (what the log and snapshots hold).
#[derive(Default)]
pub struct Outbox {
    pub due: BTreeMap<u64, MailRecord>,
    pub next_id: u64,
}

impl Outbox {
    /// A `mail_due` / `mail_sent` record read back from the log.
    pub fn replay(&mut self, k: Kind) {
        match k {
            Kind::MailDue(m) => {
                self.next_id = self.next_id.max(m.id + 1);
                self.due.insert(m.id, m);
            }
            Kind::MailSent(id) => {
                self.due.remove(&id);
            }
            _ => {}
        }
    }

    /// What a snapshot held.
    pub fn load(&mut self, mails: Vec<MailRecord>, next_id: u64) {
        self.next_id = self.next_id.max(next_id);
        for m in mails {
            self.next_id = self.next_id.max(m.id + 1);
            self.due.insert(m.id, m);
        }
    }
}
