//! The whole system in one process over the embedded simulator: every node's service
//! wired to the others through the ports, and the agent on top, without ROS. The
//! evaluation's in-process launcher and the end-to-end tests use it; [`crate::graph`]
//! wires the same services as ROS nodes instead.

use std::sync::Arc;

use asp_agent::{Agent, EventSink, StateSink};
use asp_config::LoadedConfig;
use asp_config::sections::skills::ObserverBackend;
use asp_kinematics::{RobotModel, Xarm6};
use asp_sim::scenario::Scenario;
use asp_sim::{SimRobot, SimSettings};
use asp_skills::{
    BlindObserver, EStop, LocalVerifier, PerceptionObserver, SceneObserver, SkillExecutor,
};

use asp_system::affordance::AffordanceService;
use asp_system::backend::{GraphBackend, Journal};
use asp_system::goto::GoToService;
use asp_system::map::MapService;
use asp_system::memory_link;
use asp_system::ports::{NavigationPort, ObjectMapPort};
use asp_system::skills::SkillService;

use crate::SimulationError;
use crate::scene::{SimGrid, SimPlanningScene};

/// Choices for one in-process system.
#[derive(Debug, Clone)]
pub struct SystemOptions {
    /// Use the affordance memory database (`affordance_node.memory`); off for runs that
    /// must not depend on earlier ones.
    pub memory: bool,
    /// The verifier's instance number (step ids); fixed for reproducible traces.
    pub verifier_instance: u32,
}

impl Default for SystemOptions {
    fn default() -> Self {
        Self {
            memory: true,
            verifier_instance: 1,
        }
    }
}

/// The robot model every simulation uses.
pub fn robot_model() -> Result<Arc<dyn RobotModel>, SimulationError> {
    Ok(Arc::new(
        Xarm6::on_base().map_err(|e| SimulationError::Model(e.to_string()))?,
    ))
}

/// The simulation of `sim_node` (its world and start pose), seeded with `seed` when given.
pub fn simulation(cfg: &LoadedConfig, seed: Option<u64>) -> Result<SimRobot, SimulationError> {
    let mut sim_cfg = cfg.config.sim_node.clone();
    if let Some(s) = seed {
        sim_cfg.seed = s;
    }
    Ok(SimRobot::from_config(
        &sim_cfg,
        &cfg.config_dir,
        robot_model()?,
    )?)
}

/// The simulation a scenario starts from, with `sim_node`'s settings.
pub fn scenario_simulation(
    cfg: &LoadedConfig,
    scenario: &Scenario,
    seed: Option<u64>,
) -> Result<SimRobot, SimulationError> {
    let mut settings = SimSettings::from_config(&cfg.config.sim_node);
    if let Some(s) = seed {
        settings.seed = s;
    }
    Ok(SimRobot::for_scenario(scenario, robot_model()?, settings)?)
}

/// The configured scene observer over the simulation's cameras (never its state).
pub fn observer(cfg: &LoadedConfig, sim: &SimRobot) -> Arc<dyn SceneObserver> {
    let c = &cfg.config.skill_executor_node;
    match c.observer {
        ObserverBackend::Perception => Arc::new(PerceptionObserver::new(
            Arc::new(sim.clone()),
            c.perception.clone(),
        )),
        ObserverBackend::None => Arc::new(BlindObserver),
    }
}

/// Every service and the agent, over one simulation.
pub struct SimSystem {
    pub config: LoadedConfig,
    pub sim: SimRobot,
    pub map: Arc<MapService>,
    pub affordance: Arc<AffordanceService>,
    pub skills: Arc<SkillService>,
    pub navigation: Option<Arc<GoToService>>,
    pub estop: EStop,
    pub journal: Journal,
    pub agent: Agent,
    /// The simulation's VLM, serving while the system runs.
    pub vlm_standin: Option<asp_vlm_standin::VlmStandIn>,
    /// The simulation's web search, serving while the system runs.
    pub web_standin: Option<asp_web_standin::WebStandIn>,
}

impl std::fmt::Debug for SimSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimSystem")
            .field("sim", &self.sim)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl SimSystem {
    /// Wires the services over `sim` as the configuration describes. The map is built
    /// now when `object_map_node.mapping.build_on_start` is set.
    pub async fn start(
        cfg: &LoadedConfig,
        sim: SimRobot,
        options: &SystemOptions,
        state_sink: Option<Arc<dyn StateSink>>,
        event_sink: Option<Arc<dyn EventSink>>,
    ) -> Result<Self, SimulationError> {
        let vlm_standin = crate::standin::start_vlm_standin(cfg, &sim).await?;
        let web_standin = crate::standin::start_web_standin(cfg).await?;
        let cfg = &crate::standin::searching_on(
            crate::standin::pointed_at(
                &crate::elevator::with_site_elevator(cfg, &sim),
                vlm_standin.as_ref(),
            ),
            web_standin.as_ref(),
        );
        let models = asp_perception::factory::models(cfg)?;
        let estop = EStop::new();
        let mut map = MapService::new(
            cfg,
            models.clone(),
            Arc::new(sim.clone()),
            Arc::new(sim.clone()),
        )?
        .with_arm(Arc::new(sim.clone()))
        .with_estop(estop.listener())
        .with_grounder(asp_system::models::concept_grounder(cfg)?);
        if sim.storey().is_some() {
            map = map.with_elevator(Arc::new(sim.clone()));
        }
        let map = Arc::new(map);
        let memory = if options.memory {
            Some(memory_link(cfg, &models)?)
        } else {
            None
        };
        let affordance = Arc::new(AffordanceService::from_config(
            cfg,
            map.clone() as Arc<dyn ObjectMapPort>,
            memory,
        )?);
        let verifier = Arc::new(LocalVerifier::from_config(
            &cfg.config,
            options.verifier_instance,
            asp_system::models::outcome_vlm(&cfg.config)?,
        ));
        let executor = SkillExecutor::new(
            Arc::new(sim.clone()),
            Arc::new(sim.clone()),
            verifier,
            observer(cfg, &sim),
            &cfg.config,
            estop.listener(),
        )?;
        let skills = Arc::new(SkillService::new(
            executor,
            Arc::new(SimPlanningScene(sim.clone())),
        ));
        let navigation = cfg.config.agent_node.mobile.then(|| {
            Arc::new(GoToService::new(
                Arc::new(sim.clone()),
                map.clone(),
                affordance.clone(),
                Arc::new(SimGrid(sim.clone())),
                estop.listener(),
                &cfg.config.go_to_node,
            ))
        });
        let journal = Journal::default();
        let backend = GraphBackend::new(
            map.clone(),
            affordance.clone(),
            skills.clone(),
            navigation.clone().map(|n| n as Arc<dyn NavigationPort>),
        )
        .with_journal(journal.clone())
        .with_look_camera(
            cfg.config
                .object_map_node
                .mapping
                .cameras
                .first()
                .cloned()
                .unwrap_or_else(|| "wrist".into()),
        );
        let mut agent = Agent::from_config(&cfg.config, Arc::new(backend))?
            .with_grammar(Arc::new(asp_nodes::agent::goal_grammar(cfg)?));
        if let Some(s) = state_sink {
            agent = agent.with_state_sink(s);
        }
        if let Some(s) = event_sink {
            agent = agent.with_event_sink(s);
        }
        if cfg.config.object_map_node.mapping.build_on_start {
            map.ensure_built().await?;
        }
        Ok(Self {
            config: cfg.clone(),
            sim,
            map,
            affordance,
            skills,
            navigation,
            estop,
            journal,
            agent,
            vlm_standin,
            web_standin,
        })
    }
}
