//! Every node's settings as ROS 2 parameters, as a parameter file gives them: the `/**`
//! section and the node's own, flattened to dotted names (`safety.max_velocity_scaling`),
//! plus `use_sim_time`. `ros2 param list/get/describe` see all of them; `set` changes
//! only the settable ones a node declares, each through a hook that makes the change
//! take effect (or refuses it, saying why); every other parameter is read-only and says
//! so.

use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_config::sections::common::LifecycleStart;
use asp_ros::Node;
use asp_ros::lifecycle::{Lifecycle, PrimaryState, serve_lifecycle};
use asp_ros::liveliness::Heartbeat;
use asp_ros::params::{
    ParamSpec, ParamValue, ParameterServices, ParameterStore, parameters_from_json,
    serve_parameters,
};

use tokio::sync::watch;

use crate::process::publish_process_diagnostics;
use crate::rosout::{Rosout, publish_log};
use crate::supervision::heartbeat_settings;
use crate::{AbortOnDrop, NodeError};

/// Makes a new value take effect, or says why it cannot.
pub type Apply = Box<dyn Fn(&ParamValue) -> Result<(), String> + Send + Sync>;

/// A parameter a node lets clients change while it serves.
pub struct Settable {
    pub name: &'static str,
    pub description: &'static str,
    /// The allowed values in words.
    pub constraints: &'static str,
    pub apply: Apply,
}

/// The parameters of node `section` (its name in the configuration).
pub fn node_parameters(cfg: &LoadedConfig, section: &str) -> Result<Vec<ParamSpec>, NodeError> {
    let tree = serde_json::to_value(&cfg.config)
        .map_err(|e| NodeError::Parameters(format!("the configuration as parameters: {e}")))?;
    let mut specs = parameters_from_json("", &tree["/**"]);
    specs.extend(parameters_from_json("", &tree[section]));
    Ok(specs)
}

impl std::fmt::Debug for Settable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settable")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What every ROS 2 node offers besides its own interfaces: parameter services, the
/// lifecycle services of a managed node, its log on `/rosout` and its heartbeat.
/// Dropping it stops them (the heartbeat says goodbye).
#[derive(Debug)]
pub struct StandardServices {
    pub parameters: ParameterServices,
    pub lifecycle: Lifecycle,
    _rosout: Rosout,
    _heartbeat: Heartbeat,
    _diagnostics: Option<AbortOnDrop>,
}

impl StandardServices {
    /// The node's lifecycle state, for what it gates (goals, motion).
    pub fn lifecycle(&self) -> watch::Receiver<PrimaryState> {
        self.lifecycle.watch()
    }
}

/// The process report on `/diagnostics`, as configured.
fn process_diagnostics(node: &Node, cfg: &LoadedConfig) -> Result<Option<AbortOnDrop>, NodeError> {
    let period = cfg.config.common.supervision.diagnostics_period_s;
    Ok(publish_process_diagnostics(
        node,
        std::time::Duration::from_secs_f64(period),
    )?)
}

/// The state nodes start in, as configured.
fn initial_state(cfg: &LoadedConfig) -> PrimaryState {
    match cfg.config.common.supervision.initial_state {
        LifecycleStart::Unconfigured => PrimaryState::Unconfigured,
        LifecycleStart::Inactive => PrimaryState::Inactive,
        LifecycleStart::Active => PrimaryState::Active,
    }
}

/// Serves node `section`'s parameters on `node` (`settable` among them) and its
/// lifecycle (in `common.supervision.initial_state`), publishes the process's log on
/// its `/rosout` and starts its heartbeat.
pub fn serve_standard(
    node: &Node,
    cfg: &LoadedConfig,
    section: &str,
    settable: Vec<Settable>,
) -> Result<StandardServices, NodeError> {
    if cfg.config.common.use_sim_time {
        node.use_sim_time()?;
    }
    Ok(StandardServices {
        parameters: serve_node_parameters(node, cfg, section, settable)?,
        lifecycle: serve_lifecycle(node, initial_state(cfg))?,
        _rosout: publish_log(node)?,
        _heartbeat: Heartbeat::start(node, &heartbeat_settings(cfg))?,
        _diagnostics: process_diagnostics(node, cfg)?,
    })
}

/// [`serve_standard`] for a node that is not managed (the simulator, as Gazebo is
/// not): no lifecycle services, always active.
pub fn serve_standard_unmanaged(
    node: &Node,
    cfg: &LoadedConfig,
    section: &str,
) -> Result<StandardServices, NodeError> {
    Ok(StandardServices {
        parameters: serve_node_parameters(node, cfg, section, Vec::new())?,
        lifecycle: Lifecycle::unmanaged(),
        _rosout: publish_log(node)?,
        _heartbeat: Heartbeat::start(node, &heartbeat_settings(cfg))?,
        _diagnostics: process_diagnostics(node, cfg)?,
    })
}

/// Serves node `section`'s parameters on `node`, `settable` among them.
pub fn serve_node_parameters(
    node: &Node,
    cfg: &LoadedConfig,
    section: &str,
    settable: Vec<Settable>,
) -> Result<ParameterServices, NodeError> {
    let mut specs = node_parameters(cfg, section)?;
    for s in &settable {
        let spec = specs
            .iter_mut()
            .find(|p| p.name == s.name)
            .ok_or_else(|| NodeError::Parameters(format!("{section}: no parameter {}", s.name)))?;
        spec.read_only = false;
        spec.description = s.description.to_owned();
        spec.constraints = s.constraints.to_owned();
    }
    let hooks: Vec<Settable> = settable;
    let store =
        ParameterStore::new(node.name(), specs).with_set_hook(Arc::new(move |name, value| {
            hooks
                .iter()
                .find(|s| s.name == name)
                .map_or_else(|| Err("not settable".to_owned()), |s| (s.apply)(value))
        }));
    Ok(serve_parameters(node, Arc::new(store))?)
}
