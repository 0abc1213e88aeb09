//! The names of ASP's own topics, services and actions. The robot-facing ones (MoveIt,
//! Nav2, the gripper controller, the cameras, `/map`, the e-stop) come from the
//! configuration instead, so that they can follow a robot's stack.

use asp_config::sections::common::CamerasConfig;

/// agent_node: run a language goal to the end (`asp_interfaces/srv/ExecuteGoal`).
pub const EXECUTE_GOAL_SERVICE: &str = "/asp/execute_goal";
/// agent_node: the same with per-tool-call feedback and cancel
/// (`asp_interfaces/action/ExecuteGoal`).
pub const EXECUTE_ACTION: &str = "/asp/execute";
/// agent_node: the symbolic state after every tool call (latched).
pub const STATE_TOPIC: &str = "/asp/state";
/// agent_node: whether goals can be taken now (`std_msgs/Bool`, latched): the object map
/// has been built and the e-stop is released.
pub const READY_TOPIC: &str = "/asp/ready";

/// A building's elevator (`asp_interfaces/action/RideElevator`): sim_node in a
/// simulated building, the site's elevator integration on a robot.
pub const ELEVATOR_RIDE_ACTION: &str = "/asp/elevator/ride";

/// object_map_node's services.
pub const RETRIEVE_SERVICE: &str = "/asp/object_map/retrieve";
pub const RECALL_MEMORY_SERVICE: &str = "/asp/object_map/recall_memory";
pub const SPATIAL_SERVICE: &str = "/asp/object_map/spatial_query";
pub const GET_OBJECT_SERVICE: &str = "/asp/object_map/get_object";
pub const SNAPSHOT_SERVICE: &str = "/asp/object_map/snapshot";
pub const REBUILD_SERVICE: &str = "/asp/object_map/rebuild";
pub const RELOCALIZE_SERVICE: &str = "/asp/object_map/relocalize";
pub const OBJECT_MOVED_SERVICE: &str = "/asp/object_map/object_moved";
/// object_map_node: what the map holds (latched).
pub const OBJECT_MAP_TOPIC: &str = "/asp/object_map";
/// object_map_node: each map object's box and label for RViz
/// (`visualization_msgs/MarkerArray`, latched; ids are the objects' ids).
pub const MARKERS_TOPIC: &str = "/asp/markers";
/// object_map_node: the object map's points coloured by instance
/// (`sensor_msgs/PointCloud2`, latched).
pub const MAP_CLOUD_TOPIC: &str = "/asp/map_cloud";
/// object_map_node: the floor grid its last exploration built (`nav_msgs/OccupancyGrid`,
/// latched; free, occupied, unknown), for RViz's Map display.
pub const EXPLORED_GRID_TOPIC: &str = "/asp/object_map/explored";

/// affordance_node: affordance detection (`asp_interfaces/action/DetectAffordances`).
pub const DETECT_ACTION: &str = "/asp/affordance/detect";
/// skill_executor_node: one skill (`asp_interfaces/action/ExecuteSkill`).
pub const SKILL_ACTION: &str = "/asp/skill/execute";
/// go_to_node: affordance-facing navigation (`asp_interfaces/action/GoTo`).
pub const GO_TO_ACTION: &str = "/asp/go_to";

/// verifier_node: the commit gate and the outcome check.
pub const COMMIT_SERVICE: &str = "/asp/verifier/commit";
pub const OUTCOME_SERVICE: &str = "/asp/verifier/check_outcome";
/// verifier_node: every verdict (reliable, transient local).
pub const VERDICTS_TOPIC: &str = "/asp/verdicts";

/// SIMULATION ONLY: render camera `camera` now.
pub fn sim_render_service(camera: &str) -> String {
    format!("/sim/{camera}/render")
}

/// SIMULATION ONLY: camera `camera`'s ground-truth labels and legend.
pub fn sim_ground_truth_topic(camera: &str) -> String {
    format!("/sim/{camera}/ground_truth")
}

/// The topics of camera `camera`: colour image, registered depth, camera info.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CameraTopics {
    pub image: String,
    pub depth: String,
    pub info: String,
}

impl CameraTopics {
    pub fn new(cfg: &CamerasConfig, camera: &str) -> Self {
        let prefix = if cfg.topic_prefix.ends_with('/') {
            cfg.topic_prefix.clone()
        } else {
            format!("{}/", cfg.topic_prefix)
        };
        let t = |rel: &str| format!("{prefix}{camera}/{}", rel.trim_start_matches('/'));
        Self {
            image: t(&cfg.image_topic),
            depth: t(&cfg.depth_topic),
            info: t(&cfg.info_topic),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// launch/asp.rviz shows what the nodes publish, under the names they publish it.
    #[test]
    fn the_rviz_config_shows_the_published_topics() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../launch/asp.rviz");
        let rviz: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let displays = rviz["Visualization Manager"]["Displays"]
            .as_sequence()
            .unwrap();
        let topics: Vec<&str> = displays
            .iter()
            .filter_map(|d| {
                d["Topic"]["Value"]
                    .as_str()
                    .or(d["Description Topic"]["Value"].as_str())
            })
            .collect();
        let cameras = CamerasConfig::default();
        let published = [
            MARKERS_TOPIC.to_owned(),
            MAP_CLOUD_TOPIC.to_owned(),
            EXPLORED_GRID_TOPIC.to_owned(),
            "/robot_description".to_owned(),
            CameraTopics::new(&cameras, "head").image,
            CameraTopics::new(&cameras, "wrist").image,
        ];
        for t in &published {
            assert!(topics.contains(&t.as_str()), "{t} is not shown: {topics:?}");
        }
        assert_eq!(topics.len(), published.len(), "{topics:?}");
        assert_eq!(
            rviz["Visualization Manager"]["Global Options"]["Fixed Frame"],
            "map"
        );
    }

    #[test]
    fn camera_topics_follow_the_prefix() {
        let cfg = CamerasConfig::default();
        let t = CameraTopics::new(&cfg, "wrist");
        assert_eq!(t.image, "/wrist/color/image_raw");
        assert_eq!(t.depth, "/wrist/aligned_depth_to_color/image_raw");
        assert_eq!(t.info, "/wrist/color/camera_info");
        let cfg = CamerasConfig {
            topic_prefix: "/robot".into(),
            ..CamerasConfig::default()
        };
        assert_eq!(
            CameraTopics::new(&cfg, "head").info,
            "/robot/head/color/camera_info"
        );
    }
}
