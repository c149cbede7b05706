//! The controller's accounting settings, part of the core's state.

use std::path::PathBuf;

use super::enforce::Enforce;

/// The controller's accounting settings (present when accounting is on).
pub struct Acct {
    pub enforce: Enforce,
    /// The outbox (StateSaveLocation/acct/).
    pub dir: PathBuf,
}
