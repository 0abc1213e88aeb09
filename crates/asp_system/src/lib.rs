//! The ASP nodes' logic behind typed service ports, and the agent's tool backend that
//! composes them. No ROS here: `asp_nodes` serves these services over ROS 2 and gives the
//! backend ROS clients of the same ports.
//!
//! | module | node | SPEC |
//! |---|---|---|
//! | [`map`] | object_map_node: map building, retrieval, spatial tools, re-detection | §1.1, §1.3, §1.7 |
//! | [`affordance`] | affordance_node: detection with the A-Harness loop and memory | §1.5, §2 |
//! | [`skills`] | skill_executor_node: planning scene, then the gated executor | §1.4 |
//! | [`goto`] | go_to_node: affordance-facing navigation | §1.6 |
//! | [`backend`] | agent_node's tool backend over the ports | §1.3 |
//! | [`models`] | the models the nodes ask, from the configuration | §4.3 |
//! | [`tour_memory`] | `asp memory build --bag`: the building memory from a recorded tour | §3.1 |
//!
//! Nothing here knows the simulator: `asp_simulation` composes these services over it.

pub mod affordance;
pub mod backend;
mod error;
pub mod goto;
pub mod map;
pub mod models;
pub mod ports;
pub mod skills;
pub mod tour_memory;

pub use affordance::memory_link;
pub use backend::{GraphBackend, Journal, JournalEntry, verified_success};
pub use error::SystemError;
pub use ports::{
    AffordancePort, AffordanceQuery, CarriedSize, GoToGoal, GoToReply, MapObject, MapSnapshot,
    MapSummary, NavigationPort, ObjectMapPort, RelocalizedObject, ServiceError, SkillPort,
    SkillReply, SpatialAnswer, SpatialQuery,
};
