//! What the driver reports (its use count, configuration, properties, backends, capabilities,
//! and per file the p2p verdict and the page-cache rule) and the settings of one file.

use super::{Driver, HandleId, Platform};
use std::sync::Arc;

use crate::backend::{Backend, BackendKind, Capability, Declined, Direction};
use crate::config::{Config, DriverProperties};
use crate::error::{OpError, Result};

impl<P: Platform> Driver<P> {
    /// `hipFileDriverGetProperties`: the open driver's, or while closed, those the next open
    /// would have (without opening it).
    pub fn properties(&self) -> DriverProperties {
        if let Some(open) = self.read_state().open.as_ref() {
            let direct = open.dispatcher.backends().iter().any(|b| b.kind() == BackendKind::P2p);
            return DriverProperties::of(&open.config, direct);
        }
        DriverProperties::of(&self.current_config(), false)
    }

    /// `hipFileUseCount`.
    pub fn use_count(&self) -> i64 {
        self.read_state().use_count
    }

    /// The configuration read at open, while the driver is open.
    pub fn config(&self) -> Option<Config> {
        self.read_state().open.as_ref().map(|o| o.config.clone())
    }

    /// Names of the backends the driver opened with, in order.
    pub fn backend_names(&self) -> Vec<&'static str> {
        let state = self.read_state();
        state.open.as_ref().map_or_else(Vec::new, |o| o.dispatcher.backends().iter().map(|b| b.name()).collect())
    }

    /// Each open backend's name and counters, in order: what the driver saw it serve
    /// (`served_requests`, `served_bytes`, and for a p2p backend the requests it passed to
    /// bounce: `declined`, `no_path`), then the backend's own ([`Backend::counters`]).
    pub fn backend_counters(&self) -> Vec<(&'static str, Vec<(&'static str, u64)>)> {
        let state = self.read_state();
        state.open.as_ref().map_or_else(Vec::new, |open| open.dispatcher.counters())
    }

    /// The capability report: every backend the platform knows of under the configuration
    /// (the open one, else the environment's), available or not and why not.
    pub fn capabilities(&self) -> Result<Vec<Capability>> {
        let config = match self.config() {
            Some(config) => config,
            None => Config::from_lookup(&self.env)?,
        };
        Ok(self.platform.capabilities(&config))
    }

    /// Whether the open p2p backends would serve the registered file `handle`:
    /// each one's name and its answer (empty when none is open; see
    /// [`capabilities`](Self::capabilities) for why).
    pub fn p2p_verdict(&self, handle: HandleId) -> Result<Vec<(&'static str, std::result::Result<(), Declined>)>> {
        let (file, dispatcher) = {
            let state = self.read_state();
            let open = state.open.as_ref().ok_or(OpError::HandleNotRegistered)?;
            let file = open.files.get(&handle).ok_or(OpError::HandleNotRegistered)?;
            (Arc::clone(file), Arc::clone(&open.dispatcher))
        };
        Ok(dispatcher.p2p_verdicts(&file))
    }

    /// Sets the page-cache policy of the registered file `handle` alone (`None`: the driver's
    /// again), for the transfers that start after this (semantics §16).
    /// `hipFileHandleNotRegistered` if unknown.
    pub fn handle_set_page_cache(&self, handle: HandleId, setting: Option<crate::cache::PageCache>) -> Result<()> {
        let state = self.read_state();
        let open = state.open.as_ref().ok_or(OpError::HandleNotRegistered)?;
        open.files.get(&handle).ok_or(OpError::HandleNotRegistered)?.cache().set(setting);
        Ok(())
    }

    /// Gives the registered file `handle` its own durability for writes (`None`: the driver's,
    /// `HIPFILE_DURABLE_WRITES`), for the transfers that start after this (semantics §5).
    /// `hipFileHandleNotRegistered` if unknown.
    pub fn handle_set_durable(&self, handle: HandleId, durable: Option<bool>) -> Result<()> {
        let state = self.read_state();
        let open = state.open.as_ref().ok_or(OpError::HandleNotRegistered)?;
        open.files.get(&handle).ok_or(OpError::HandleNotRegistered)?.set_durable(durable);
        Ok(())
    }

    /// The page-cache rule a read of the whole registered file `handle` would follow now
    /// (semantics §16). `hipFileHandleNotRegistered` if unknown.
    pub fn page_cache_rule(&self, handle: HandleId) -> Result<crate::cache::CacheRule> {
        let (file, dispatcher) = {
            let state = self.read_state();
            let open = state.open.as_ref().ok_or(OpError::HandleNotRegistered)?;
            let file = open.files.get(&handle).ok_or(OpError::HandleNotRegistered)?;
            (Arc::clone(file), Arc::clone(&open.dispatcher))
        };
        let size = file.size().unwrap_or(0);
        Ok(file.cache_rule(&dispatcher.cache, Direction::Read, size))
    }
}
