//! The driver's parameter calls (semantics §13): get a value, stage one for the next open.

use super::{Driver, Platform};
use crate::error::Result;
use crate::params::{BoolParam, Setting, SizeParam, StringParam};

impl<P: Platform> Driver<P> {
    /// `hipFileGetParameterSizeT`: the value in use while open; while closed, the value the
    /// next open would apply (staged, else the environment's, else the default).
    pub fn size_parameter(&self, p: SizeParam) -> usize {
        self.current_config().size_parameter(p)
    }

    /// `hipFileGetParameterBool`; see [`size_parameter`](Self::size_parameter).
    pub fn bool_parameter(&self, p: BoolParam) -> bool {
        self.current_config().bool_parameter(p)
    }

    /// `hipFileGetParameterString`; see [`size_parameter`](Self::size_parameter).
    pub fn string_parameter(&self, p: StringParam) -> String {
        self.current_config().string_parameter(p).to_owned()
    }

    /// `hipFileSetParameterSizeT`: stages the value for the next open.
    pub fn set_size_parameter(&self, p: SizeParam, v: usize) -> Result<()> {
        self.stage(Setting::Size(p, v))
    }

    /// `hipFileSetParameterBool`: stages the value for the next open.
    pub fn set_bool_parameter(&self, p: BoolParam, v: bool) -> Result<()> {
        self.stage(Setting::Bool(p, v))
    }

    /// `hipFileSetParameterString`: stages the value for the next open.
    pub fn set_string_parameter(&self, p: StringParam, v: &str) -> Result<()> {
        self.stage(Setting::String(p, v.to_owned()))
    }

    /// `hipFileDriverSetPollMode`: stages poll mode and its threshold (KiB), both kept only.
    pub fn set_poll_mode(&self, poll: bool, threshold_kb: usize) -> Result<()> {
        self.set_bool_parameter(BoolParam::UsePollMode, poll)?;
        self.set_size_parameter(SizeParam::PollThresholdSizeKb, threshold_kb)
    }
}
