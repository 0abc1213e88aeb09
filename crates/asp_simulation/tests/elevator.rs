//! A generated two-storey building in the sim node, its elevator ridden over DDS as a
//! robot's site integration would be: the ride takes the elevator's time, the base
//! comes out at the other storey's elevator with what the gripper carries, `/tf` puts
//! the storey's map at its floor's height under `building`, and rides from away from the
//! elevator or to storeys that do not exist are refused, saying why.
#![allow(clippy::unwrap_used)]

#[path = "../../asp_nodes/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use asp_core::robot::{BaseNavigation, CancellationToken};
use asp_core::{FrameId, Isometry3, Pose2D};
use asp_nodes::names::ELEVATOR_RIDE_ACTION;
use asp_ros::Transport;
use asp_ros::msg::TerminalState;
use asp_ros::msg::asp_interfaces::{RideElevator, RideElevatorGoal};
use asp_ros::robot::TfBuffer;
use asp_ros::transport::ServiceMapping;
use asp_sim::building::{Recipe, generate, write};
use asp_sim::effects::Grip;
use asp_simulation::start_sim_node;

/// Only stops a hung test; nothing is asserted about how long things take.
const HANG_GUARD: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elevator_takes_the_base_and_what_it_carries_to_another_storey() {
    let data = tempfile::tempdir().unwrap();
    let (mut recipe, catalogue) =
        Recipe::load(&common::config_dir().join("buildings/recipes/one_storey.yaml")).unwrap();
    recipe.floors = 2;
    recipe.rooms_per_side = 1;
    let building = generate(&recipe, &catalogue);
    let dir = data.path().join("building");
    write(&building, &dir).unwrap();
    let [x, y] = building.index.storeys[0].elevator_xy;
    let cfg = common::config(
        &data,
        &[
            &format!("sim_node.world={}", dir.join("building.yaml").display()),
            &format!("sim_node.start_pose=[{x}, {y}, 0.0]"),
            "sim_node.camera.rate_hz=0.0",
            "sim_node.vlm_standin.enabled=false",
            "sim_node.web_standin.enabled=false",
        ],
    );
    let sim = asp_simulation::simulation(&cfg, None).unwrap();
    assert_eq!(sim.storey(), Some((0, 0.0)));
    // the site's elevator for recall, from the building's index: in this process, and
    // as the override `asp launch sim` gives its node processes
    let storeys = asp_simulation::elevator::elevator_storeys(&building.index);
    assert_eq!(storeys.len(), 2);
    assert_eq!(storeys[1].height_m, 3.5);
    let here = asp_simulation::elevator::with_site_elevator(&cfg, &sim);
    assert_eq!(
        here.config.agent_node.building_memory.elevator.storeys,
        storeys
    );
    let o = asp_simulation::elevator::elevator_override(&cfg, &common::config_dir())
        .unwrap()
        .unwrap();
    let parsed = asp_config::ConfigLoader::new()
        .dir(common::config_dir())
        .unwrap()
        .set(&o)
        .unwrap()
        .load()
        .unwrap();
    assert_eq!(
        parsed.config.agent_node.building_memory.elevator.storeys,
        storeys
    );
    let single = common::config(&data, &[]);
    assert_eq!(
        asp_simulation::elevator::elevator_override(&single, &common::config_dir()).unwrap(),
        None
    );
    // the gripper holds a small object of the ground floor
    let carried = sim.with_state(|s| {
        let i = s
            .world
            .objects
            .iter()
            .position(|o| !o.fixed && o.name.starts_with(|c: char| c.is_ascii_lowercase()))
            .unwrap();
        s.world.objects[i].name.clone()
    });
    sim.with_state_mut(|s| {
        let object = s.world.index_of(&carried).unwrap();
        s.robot.grip = Some(Grip::Object {
            object,
            tool_to_object: Isometry3::identity(),
            part: None,
        });
    });

    let domain = common::fresh_domain();
    let t = Transport::dds(common::dds_settings(domain, ServiceMapping::FastDds)).unwrap();
    let _sim_node = start_sim_node(&cfg, &t.node("sim_node").unwrap(), sim.clone())
        .await
        .unwrap();
    let probe = t.node("probe").unwrap();
    let tf = TfBuffer::new(&probe).unwrap();
    let (building_frame, map) = (FrameId::new("building"), FrameId::map());
    let ground = tf.wait_for(&building_frame, &map, None).await.unwrap();
    assert_eq!(ground.iso.translation.vector.z, 0.0);
    let elevator = probe
        .action_client::<RideElevator>(ELEVATOR_RIDE_ACTION)
        .unwrap();
    elevator.wait_for_server().await.unwrap();

    // up one storey: the elevator's time, feedback on the way, the carried object along
    let before = sim.sim_time();
    let mut ride = elevator
        .send_goal(RideElevatorGoal { storey: 1 })
        .await
        .unwrap();
    let mut states = Vec::new();
    let result = tokio::time::timeout(HANG_GUARD, async {
        while let Some(f) = ride.feedback().await {
            states.push(f.state);
        }
        ride.result().await.unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        result.state,
        TerminalState::Succeeded,
        "{:?}",
        result.result
    );
    assert_eq!((result.result.storey, result.result.height_m), (1, 3.5));
    assert!(states.iter().any(|s| s == "travelling"), "{states:?}");
    let seconds = building.index.elevator_time_s(0, 1);
    assert!(sim.sim_time() - before >= f64::from(seconds) - 1e-6);
    assert_eq!(sim.storey(), Some((1, 3.5)));
    sim.with_state(|s| {
        assert_eq!(s.world.name, building.storeys[1].name);
        let held = s.held().expect("still held");
        assert_eq!(s.world.objects[held].name, carried);
        // the ground floor keeps no second copy where it was
        let left = s.storeys.as_ref().unwrap().world(0, &s.world).unwrap();
        let placeholder = left.object(&carried).unwrap();
        assert!(placeholder.pose.translation.vector.z < -1000.0);
    });
    let [x1, y1] = building.index.storeys[1].elevator_xy;
    let at = sim.base_pose().await.unwrap();
    assert!((at.x - x1).hypot(at.y - y1) < 0.2, "{at:?}");
    // /tf: the storey's map at its floor's height
    tokio::time::timeout(HANG_GUARD, async {
        while tf
            .lookup(&building_frame, &map)
            .map_or(true, |t| (t.iso.translation.vector.z - 3.5).abs() > 1e-4)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("building → map never rose to the first storey's height");

    // away from the elevator: refused, saying how far and where it is
    let away = Pose2D::new(x1 + 2.5, y1, 0.0);
    sim.with_state_mut(|s| s.robot.base = away);
    let refused = elevator
        .send_goal(RideElevatorGoal { storey: 0 })
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(refused.state, TerminalState::Aborted);
    assert!(
        refused
            .result
            .error_msg
            .contains("from the elevator of storey 1"),
        "{}",
        refused.result.error_msg
    );
    assert_eq!(sim.storey(), Some((1, 3.5)));
    // a storey the building lacks
    sim.with_state_mut(|s| s.robot.base = Pose2D::new(x1, y1, 0.0));
    let refused = elevator
        .send_goal(RideElevatorGoal { storey: 7 })
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(refused.state, TerminalState::Aborted);
    assert!(
        refused.result.error_msg.contains("storey 7 does not exist"),
        "{}",
        refused.result.error_msg
    );
    // cancelled while the doors close: the base stays
    let token = CancellationToken::new();
    token.cancel();
    let e = sim.ride_elevator(0, &token, &|_, _| {}).await.unwrap_err();
    assert!(e.to_string().contains("still on storey 1"), "{e}");
    assert_eq!(sim.storey(), Some((1, 3.5)));
}
