//! One module per node's parameters; the module owns its defaults and ranges.

pub mod affordance;
pub mod agent;
pub mod common;
pub mod go_to;
pub mod perception;
pub mod sim;
pub mod skills;
pub mod verifier;
