//! go_to in the embedded simulator's apartment: the affordance-facing pose against plain
//! "go near" (λ_aff = 0), cancel mid-way, and the e-stop.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use asp_config::GoToConfig;
use asp_core::robot::{BaseNavigation, CancellationToken, TerminalStatus};
use asp_core::{
    Affordance, AffordanceProvenance, FailureKind, ObjectKey, Pose2D, Real, Skill, State,
};
use asp_nav::codes::ours;
use asp_nav::{GoTo, GoToRequest, GoToResult};
use asp_sim::{SimRobot, SimSettings};
use asp_skills::EStop;

mod support;
use support::*;

/// go_to's settings as shipped, without re-detection (no perception models here).
fn go_to_config(lambda_aff: Real) -> GoToConfig {
    let mut cfg = config().go_to_node;
    cfg.relocalize = false;
    cfg.lambda_aff = lambda_aff;
    cfg
}

/// A go_to request on `object` with its part cloud as the detected affordance.
fn request(sim: &SimRobot, object: &str, part_prefix: &str, skill: Skill) -> GoToRequest {
    let (obj, part) = clouds(sim, object, part_prefix);
    GoToRequest {
        object: ObjectKey::from_query(object, 0),
        query: object.replace('_', " "),
        object_cloud: obj,
        affordance: Some(Affordance {
            point_cloud: part,
            part: part_prefix.into(),
            skill,
            provenance: AffordanceProvenance {
                producers: vec!["simulator ground truth".into()],
                keyframes: vec![0],
                confidence: 1.0,
                verifier_score: Some(1.0),
            },
        }),
        grid: sim.occupancy_grid().unwrap(),
        carried: None,
        surroundings: None,
    }
}

fn go_to(sim: &SimRobot, lambda_aff: Real, estop: &EStop) -> GoTo {
    GoTo::new(
        Arc::new(sim.clone()),
        &go_to_config(lambda_aff),
        estop.listener(),
        None,
    )
}

/// The angle, degrees, between the direction from the object's centre to where the base
/// stopped and the affordance direction.
fn angle_off_affordance(r: &GoToResult, at: &Pose2D) -> Real {
    let sel = r.report().selection.as_ref().unwrap();
    let n = sel.affordance_direction.unwrap();
    let (dx, dy) = (at.x - sel.centre[0], at.y - sel.centre[1]);
    ((dx * n[0] + dy * n[1]) / dx.hypot(dy))
        .clamp(-1.0, 1.0)
        .acos()
        .to_degrees()
}

/// The base faces the object's centre (within 3°).
fn faces_centre(r: &GoToResult, at: &Pose2D) -> bool {
    let c = r.report().selection.as_ref().unwrap().centre;
    let want = (c[1] - at.y).atan2(c[0] - at.x);
    let d = (want - at.theta + std::f32::consts::PI).rem_euclid(std::f32::consts::TAU)
        - std::f32::consts::PI;
    d.abs() < 3f32.to_radians()
}

/// Drives `sim`'s base through go_to with λ_aff and returns the result and where the
/// base ended.
async fn drive(sim: &SimRobot, req: GoToRequest, lambda_aff: Real) -> (GoToResult, Pose2D) {
    let estop = EStop::new();
    let r = go_to(sim, lambda_aff, &estop)
        .go_to(req, &CancellationToken::new())
        .await;
    assert!(r.arrived(), "{:#?}", r.report());
    let at = sim.base_pose().await.unwrap();
    let goal = r.report().selection.as_ref().unwrap().chosen.pose;
    assert!(
        (at.x - goal.x).hypot(at.y - goal.y) < 0.01,
        "stopped at {at:?}, goal {goal:?}"
    );
    (r, at)
}

fn sim_for(file: &str) -> SimRobot {
    scenario(file, SimSettings::default())
}

/// dial_phone: the keypad faces the room (−y). With the keypad as the affordance, the
/// base stops straight in front of it; plain "go near" stands diagonally at the side
/// table's corner, the nearest free spot on the way from the sofa.
#[tokio::test]
async fn go_to_faces_the_phone_keypad_where_go_near_stands_at_the_corner() {
    let sim = sim_for("mobile/dial_phone.yaml");
    let req = request(&sim, "phone", "phone key", Skill::TipPush);
    let (aff, at) = drive(&sim, req, 1.0).await;
    let n = aff
        .report()
        .selection
        .as_ref()
        .unwrap()
        .affordance_direction
        .unwrap();
    assert!(
        n[1] < -0.95,
        "the keypad's direction is −y (the room): {n:?}"
    );
    let off = angle_off_affordance(&aff, &at);
    assert!(off < 10.0, "{off}° off the keypad's direction");
    assert!(faces_centre(&aff, &at), "{at:?}");
    assert!(aff.report().message.contains("on the affordance's side"));

    let sim = sim_for("mobile/dial_phone.yaml");
    let req = request(&sim, "phone", "phone key", Skill::TipPush);
    let (near, at_near) = drive(&sim, req, 0.0).await;
    let off_near = angle_off_affordance(&near, &at_near);
    assert!(
        off_near > 30.0,
        "go near stood {off_near}° off the keypad's direction"
    );
    assert!(faces_centre(&near, &at_near), "{at_near:?}");
    assert!(
        (at.x - at_near.x).hypot(at.y - at_near.y) > 0.3,
        "{at:?} vs {at_near:?}"
    );
}

/// open_cabinet, the robot coming from the east of the office: the door handle is on the
/// cabinet's west (−x) half, the hinge on its east. go_to stands in front of the handle;
/// plain "go near" stops on the hinge half, nearest the robot.
#[tokio::test]
async fn go_to_stands_in_front_of_the_cabinet_handle_where_go_near_takes_the_hinge_side() {
    let start = Pose2D::new(3.5, 2.0, 0.0);
    let prepare = || async {
        let sim = sim_for("mobile/open_cabinet.yaml");
        let nav = sim.navigate_to(start, &CancellationToken::new()).await;
        assert_eq!(nav.status, TerminalStatus::Succeeded, "{nav:?}");
        sim
    };
    let (cx, front_y, handle_x) = {
        let sim = sim_for("mobile/open_cabinet.yaml");
        sim.with_state(|s| {
            let o = s.world.object("metal_cabinet").unwrap();
            let b = o.aabb();
            let h = o.part_aabb(o.part_index("cabinet door handle").unwrap());
            (o.pose.translation.x, b.maxs.y, (h.mins.x + h.maxs.x) / 2.0)
        })
    };
    assert!(handle_x < cx, "the handle is on the west half");

    let sim = prepare().await;
    let req = request(&sim, "metal_cabinet", "cabinet door handle", Skill::Open);
    let (aff, at) = drive(&sim, req, 1.0).await;
    assert!(angle_off_affordance(&aff, &at) < 10.0, "{at:?}");
    assert!(at.y > front_y, "in front of the cabinet: {at:?}");
    assert!(at.x < cx, "on the handle's half: {at:?}");
    assert!(faces_centre(&aff, &at), "{at:?}");

    let sim = prepare().await;
    let req = request(&sim, "metal_cabinet", "cabinet door handle", Skill::Open);
    let (near, at_near) = drive(&sim, req, 0.0).await;
    assert!(at_near.y > front_y, "{at_near:?}");
    assert!(
        at_near.x > cx,
        "go near stood on the hinge half: {at_near:?}"
    );
    assert!(angle_off_affordance(&near, &at_near) > 30.0, "{at_near:?}");
}

/// open_cabinet: the door swings towards the robot. Without its motion, go_to stands
/// where the leaf sweeps and the handle's path ends inside the arm's folded reach; with
/// it, the base stands clear of the leaf and keeps more of the handle's path in reach.
#[tokio::test]
async fn go_to_leaves_room_for_the_cabinet_door_to_swing() {
    let start = Pose2D::new(3.5, 2.0, 0.0);
    let choose = |motion: bool| async move {
        let sim = sim_for("mobile/open_cabinet.yaml");
        let nav = sim.navigate_to(start, &CancellationToken::new()).await;
        assert_eq!(nav.status, TerminalStatus::Succeeded, "{nav:?}");
        let mut cfg = go_to_config(1.0);
        cfg.part_motion.enabled = motion;
        let g = GoTo::new(Arc::new(sim.clone()), &cfg, EStop::new().listener(), None);
        let req = request(&sim, "metal_cabinet", "cabinet door handle", Skill::Open);
        let sweep = asp_nav::select::PartSweep::for_skill(
            Skill::Open,
            req.affordance.as_ref().unwrap().point_cloud.points(),
            req.object_cloud.points(),
            &go_to_config(1.0).part_motion,
        )
        .expect("the handle's joint is estimated");
        let sel = g.choose(&req).await.unwrap().unwrap();
        (sel.chosen, sweep, cfg)
    };
    let (with, sweep, cfg) = choose(true).await;
    let (without, _, _) = choose(false).await;
    // the estimated hinge swings the handle towards the room (+y), as the world's door
    let (first, last) = (sweep.path[0], *sweep.path.last().unwrap());
    assert!(last.y > first.y + 0.3, "{first:?} → {last:?}");
    let p = |c: &asp_nav::select::Candidate| [c.pose.x, c.pose.y];
    assert!(
        sweep.hits(p(&without), cfg.footprint_radius),
        "without the motion, the leaf sweeps the base: {:?}",
        without.pose
    );
    assert!(
        !sweep.hits(p(&with), cfg.footprint_radius),
        "{:?}",
        with.pose
    );
    assert!(
        with.path_out_of_reach < 0.5,
        "{} of the path out of reach from {:?}",
        with.path_out_of_reach,
        with.pose
    );
}

/// Cancelling mid-way stops the base where it is; go_to reports the cancel, and the
/// agent's tool output carries it.
#[tokio::test]
async fn cancelling_go_to_stops_the_base_and_reports_the_cancel() {
    let sim = sim_for("mobile/dial_phone.yaml");
    let start = sim.base_pose().await.unwrap();
    let estop = EStop::new();
    let g = go_to(&sim, 1.0, &estop);
    let req = request(&sim, "phone", "phone key", Skill::TipPush);
    let cancel = CancellationToken::new();
    let watcher = {
        let (sim, cancel) = (sim.clone(), cancel.clone());
        async move {
            loop {
                let p = sim.base_pose().await.unwrap();
                if (p.x - start.x).hypot(p.y - start.y) > 0.5 {
                    cancel.cancel();
                    return p;
                }
                tokio::task::yield_now().await;
            }
        }
    };
    let (r, cancelled_at) = tokio::join!(g.go_to(req, &cancel), watcher);
    let f = r.failure().expect("cancelled").clone();
    assert_eq!(f.code, ours::CANCELLED);
    assert_eq!(f.kind, FailureKind::Cancelled);
    let nav = r.report().navigation.clone().unwrap();
    assert_eq!(nav.status, TerminalStatus::Canceled);
    let goal = r.report().selection.as_ref().unwrap().chosen.pose;
    let stopped = sim.base_pose().await.unwrap();
    assert_eq!(stopped, nav.final_pose);
    assert!(
        (stopped.x - goal.x).hypot(stopped.y - goal.y) > 0.5,
        "stopped short of the goal: {stopped:?} vs {goal:?}"
    );
    // within one control step of where the cancel was seen (the simulator yields every
    // 16 steps)
    let step = SimSettings::default().base_speed * SimSettings::default().control_period_s;
    assert!(
        (stopped.x - cancelled_at.x).hypot(stopped.y - cancelled_at.y) <= 17.0 * step,
        "{stopped:?} vs {cancelled_at:?}"
    );
    // the base stays put: nothing drives it any more
    let t = sim.sim_time();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(sim.base_pose().await.unwrap(), stopped);
    assert_eq!(sim.sim_time(), t);

    let out = r.tool_output(State::default());
    assert!(!out.success);
    assert_eq!(out.failure.as_ref().unwrap().code, ours::CANCELLED);
    assert!(
        out.feedback_msg.contains("cancelled"),
        "{}",
        out.feedback_msg
    );
    assert!(out.feedback_msg.contains("stopped"), "{}", out.feedback_msg);
}

/// A latched e-stop refuses go_to before the base moves; engaged while driving, it stops
/// the base with the e-stop's code; after the reset go_to drives again.
#[tokio::test]
async fn e_stop_refuses_and_stops_go_to_until_reset() {
    let sim = sim_for("mobile/dial_phone.yaml");
    let start = sim.base_pose().await.unwrap();
    let estop = EStop::new();
    let g = go_to(&sim, 1.0, &estop);
    let req = || request(&sim, "phone", "phone key", Skill::TipPush);

    estop.engage();
    let r = g.go_to(req(), &CancellationToken::new()).await;
    let f = r.failure().expect("refused");
    assert_eq!(f.code, ours::ESTOP);
    assert!(r.report().navigation.is_none(), "no goal was sent");
    assert_eq!(sim.base_pose().await.unwrap(), start);

    estop.reset();
    let watcher = {
        let (sim, estop) = (sim.clone(), estop.clone());
        async move {
            loop {
                let p = sim.base_pose().await.unwrap();
                if (p.x - start.x).hypot(p.y - start.y) > 0.5 {
                    estop.engage();
                    return;
                }
                tokio::task::yield_now().await;
            }
        }
    };
    let token = CancellationToken::new();
    let (r, ()) = tokio::join!(g.go_to(req(), &token), watcher);
    let f = r.failure().expect("stopped by the e-stop");
    assert_eq!(f.code, ours::ESTOP);
    assert_eq!(
        r.report().navigation.as_ref().unwrap().status,
        TerminalStatus::Canceled
    );
    let stopped = sim.base_pose().await.unwrap();
    assert!((stopped.x - start.x).hypot(stopped.y - start.y) > 0.5);
    let again = g.go_to(req(), &CancellationToken::new()).await;
    assert_eq!(again.failure().unwrap().code, ours::ESTOP, "latched");
    assert_eq!(sim.base_pose().await.unwrap(), stopped);

    estop.reset();
    let r = g.go_to(req(), &CancellationToken::new()).await;
    assert!(r.arrived(), "{:#?}", r.report());
}

/// What a scripted re-detection answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Relook {
    /// Sees nothing (the object hidden from the arrival frame).
    Nothing,
    /// Its camera gives no frame.
    NoFrame,
    /// Closer looks say the object is not what was asked for.
    NotIt,
}

struct ScriptedRelocalizer(Relook);

#[async_trait::async_trait]
impl asp_nav::Relocalizer for ScriptedRelocalizer {
    async fn relocalize(
        &self,
        query: &str,
        _previous: &asp_core::PointCloud,
        camera: &str,
    ) -> Result<Option<asp_nav::Relocalized>, asp_nav::RelocalizeError> {
        match self.0 {
            Relook::Nothing => Ok(None),
            Relook::NoFrame => Err(asp_nav::RelocalizeError::Failed(format!(
                "camera {camera:?} gave no frame"
            ))),
            Relook::NotIt => Err(asp_nav::RelocalizeError::NotIt(format!(
                "it is not the {query}: the map no longer offers it"
            ))),
        }
    }
}

/// Not seeing the object again from the arrival pose does not undo the arrival (the map's
/// view stands, and driving again would only come back to the same pose); a re-detection
/// that could not run at all is a failure the agent is told about, and one that says the
/// object is not what was asked for tells the agent to retrieve again.
#[tokio::test]
async fn an_object_not_seen_again_on_arrival_keeps_the_maps_view() {
    for relook in [Relook::Nothing, Relook::NoFrame, Relook::NotIt] {
        let sim = sim_for("mobile/dial_phone.yaml");
        let mut cfg = go_to_config(1.0);
        cfg.relocalize = true;
        let estop = EStop::new();
        let goto = GoTo::new(
            Arc::new(sim.clone()),
            &cfg,
            estop.listener(),
            Some(Arc::new(ScriptedRelocalizer(relook))),
        );
        let req = request(&sim, "phone", "phone key", Skill::TipPush);
        let r = goto.go_to(req, &CancellationToken::new()).await;
        let report = r.report();
        assert!(report.relocalized.is_none());
        let expected = match relook {
            Relook::Nothing => {
                assert!(r.arrived(), "{report:#?}");
                assert!(
                    report.message.contains("not found again from here"),
                    "{}",
                    report.message
                );
                continue;
            }
            Relook::NoFrame => ("gave no frame", ours::NOT_REFOUND, FailureKind::Perception),
            Relook::NotIt => (
                "no longer offers it",
                ours::NOT_IT,
                FailureKind::UnknownObject,
            ),
        };
        assert!(!r.arrived(), "{report:#?}");
        assert!(report.message.contains(expected.0), "{}", report.message);
        let GoToResult::Failed { failure, .. } = &r else {
            unreachable!()
        };
        assert_eq!((failure.code, failure.kind), (expected.1, expected.2));
        assert!(failure.retryable, "retrieving again is the way on");
    }
}

/// A re-detection that sees the object where `cloud` has it, counting its calls.
struct SeesItAt {
    cloud: asp_core::PointCloud,
    calls: std::sync::atomic::AtomicUsize,
}

impl SeesItAt {
    fn new(cloud: asp_core::PointCloud) -> Arc<Self> {
        Arc::new(Self {
            cloud,
            calls: 0.into(),
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// go_to on `sim` whose closer looks are `relocalizer`'s.
fn go_to_looking(
    sim: &SimRobot,
    cfg: &GoToConfig,
    relocalizer: Arc<dyn asp_nav::Relocalizer>,
) -> GoTo {
    GoTo::new(
        Arc::new(sim.clone()),
        cfg,
        EStop::new().listener(),
        Some(relocalizer),
    )
}

#[async_trait::async_trait]
impl asp_nav::Relocalizer for SeesItAt {
    async fn relocalize(
        &self,
        _query: &str,
        previous: &asp_core::PointCloud,
        _camera: &str,
    ) -> Result<Option<asp_nav::Relocalized>, asp_nav::RelocalizeError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let shift = (self.cloud.centroid().unwrap() - previous.centroid().unwrap()).norm();
        let mut local_map = asp_core::ObjectMap::new(self.cloud.frame.clone());
        let object = local_map.allocate_id();
        Ok(Some(asp_nav::Relocalized {
            local_map,
            object,
            object_cloud: self.cloud.clone(),
            score: 0.9,
            shift,
        }))
    }
}

/// The phone's request with its cloud moved `away` metres from the base, on the side
/// away from the phone, and every cell within 1.6 m of it occupied: nowhere to stand
/// around where the map now has it (another object taken for the phone), while the
/// phone itself stays reachable. Also the base pose.
async fn phone_misplaced(sim: &SimRobot, away: Real) -> (GoToRequest, Pose2D) {
    let mut req = request(sim, "phone", "phone key", Skill::TipPush);
    let robot = sim.base_pose().await.unwrap();
    let true_c = req.object_cloud.centroid().unwrap();
    let (dx, dy) = (robot.x - true_c.x, robot.y - true_c.y);
    let d = dx.hypot(dy);
    assert!(
        d >= 1.5,
        "the phone is {d:.2} m from the start: too near for this test"
    );
    let (ux, uy) = (dx / d, dy / d);
    let to = asp_core::Point3::new(robot.x + ux * away, robot.y + uy * away, true_c.z);
    let shift = to - true_c;
    let points = req
        .object_cloud
        .points()
        .iter()
        .map(|p| p + shift)
        .collect();
    req.object_cloud = asp_core::PointCloud::new(req.object_cloud.frame.clone(), points);
    req.affordance = None;
    let grid = &mut req.grid;
    let (i0, j0) = grid.world_to_cell(to.x - 1.6, to.y - 1.6);
    let (i1, j1) = grid.world_to_cell(to.x + 1.6, to.y + 1.6);
    for j in j0..=j1 {
        for i in i0..=i1 {
            let (cx, cy) = grid.cell_center(i, j);
            if (cx - to.x).hypot(cy - to.y) <= 1.6 {
                grid.set(i, j, asp_core::grid::OCCUPIED);
            }
        }
    }
    (req, robot)
}

/// With nowhere to stand around an object near the base, go_to looks at it again before
/// failing: a look that says it is not what was asked for tells the agent to retrieve
/// again (nothing moved); a look that finds it elsewhere goes there; an object too far
/// to look at fails as before, without a look.
#[tokio::test]
async fn nowhere_to_stand_near_the_base_looks_at_the_object_again() {
    let mut cfg = go_to_config(0.0);
    cfg.relocalize = true;
    cfg.look_again_within = 2.0;

    // closer looks say it is not the phone
    let sim = sim_for("mobile/dial_phone.yaml");
    let (req, start) = phone_misplaced(&sim, 1.0).await;
    let goto = go_to_looking(&sim, &cfg, Arc::new(ScriptedRelocalizer(Relook::NotIt)));
    let r = goto.go_to(req, &CancellationToken::new()).await;
    let GoToResult::Failed { failure, report } = &r else {
        panic!("{r:#?}")
    };
    assert_eq!(
        (failure.kind, failure.code),
        (FailureKind::UnknownObject, ours::NOT_IT)
    );
    assert!(failure.retryable);
    assert!(
        report.message.contains("looked at it again from here")
            && report.message.contains("no longer offers it"),
        "{}",
        report.message
    );
    assert!(report.navigation.is_none(), "nothing moved");
    assert_eq!(sim.base_pose().await.unwrap(), start);

    // a look finds it where it is: go_to drives there
    let sim = sim_for("mobile/dial_phone.yaml");
    let phone = request(&sim, "phone", "phone key", Skill::TipPush).object_cloud;
    let (req, _) = phone_misplaced(&sim, 1.0).await;
    let sees = SeesItAt::new(phone.clone());
    let goto = go_to_looking(&sim, &cfg, sees.clone());
    let r = goto.go_to(req, &CancellationToken::new()).await;
    assert!(r.arrived(), "{:#?}", r.report());
    let at = sim.base_pose().await.unwrap();
    let c = phone.centroid().unwrap();
    assert!(
        (at.x - c.x).hypot(at.y - c.y) <= cfg.max_radius + 0.01,
        "stopped at {at:?}, the phone at {c:?}"
    );
    // once before choosing, once on arrival
    assert_eq!(sees.calls(), 2);

    // too far to look at from here
    let sim = sim_for("mobile/dial_phone.yaml");
    let (req, _) = phone_misplaced(&sim, 2.5).await;
    let sees = SeesItAt::new(phone);
    let goto = go_to_looking(&sim, &cfg, sees.clone());
    let r = goto.go_to(req, &CancellationToken::new()).await;
    assert_eq!(r.failure().unwrap().code, ours::NO_VALID_POSE, "{r:#?}");
    assert_eq!(sees.calls(), 0);
}
