//! The judge of the verifier's Yes/No answers, on the tabletop world: each verb's truth
//! follows the world, not the answer, and the scores count what was said against it.

#![allow(clippy::unwrap_used)]
use std::path::PathBuf;

use asp_core::{FrameId, ObjectKey, Point3, PointCloud, Skill};
use asp_eval::outcome_truth::{OutcomeJudgement, YesNoScore, step_truth};
use asp_sim::World;
use asp_sim::history::WorldMark;
use asp_skills::{HeldObject, SkillRequest};
use asp_verify::{Answer, OutcomeMethod, OutcomeVerdict, Relation, StepId, Verb};

fn world() -> World {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config/worlds/tabletop.yaml");
    asp_sim::load_world(&root).expect("tabletop world")
}

fn idx(w: &World, name: &str) -> usize {
    w.index_of(name)
        .unwrap_or_else(|| panic!("{name} in the world"))
}

fn mark(world: World, held: Option<usize>) -> WorldMark {
    WorldMark {
        time: 0.0,
        world,
        held,
        held_part: None,
    }
}

/// A cloud of a few points around `name`'s centre, as the map would give.
fn cloud_of(w: &World, name: &str) -> PointCloud {
    let c = w.objects[idx(w, name)].centroid();
    let pts = [-0.005, 0.0, 0.005]
        .iter()
        .map(|d| Point3::new(c.x + d, c.y - d, c.z))
        .collect();
    PointCloud::new(FrameId::new("map"), pts)
}

fn request(skill: Skill, w: &World, name: &str) -> SkillRequest {
    SkillRequest::new(
        skill,
        ObjectKey::new(format!("{name}_0")).unwrap(),
        name,
        cloud_of(w, name),
    )
}

fn verdict(verb: Verb, answer: Answer) -> OutcomeVerdict {
    OutcomeVerdict {
        step: StepId(1),
        verb,
        object: ObjectKey::new("x_0").unwrap(),
        question: String::new(),
        answer,
        method: OutcomeMethod::Geometric,
        checks: Vec::new(),
        message: String::new(),
        observed: None,
    }
}

fn move_to(w: &mut World, name: &str, p: Point3) {
    let i = idx(w, name);
    let c = w.objects[i].centroid();
    w.objects[i].pose.translation.vector += p - c;
}

#[test]
fn a_pick_is_true_only_when_the_gripper_holds_that_object() {
    let w = world();
    let req = request(Skill::Grasp, &w, "apple");
    let v = verdict(Verb::PickUp, Answer::Yes);
    let before = mark(w.clone(), None);
    let apple = idx(&w, "apple");
    let orange = idx(&w, "orange");
    assert_eq!(
        step_truth(&v, &req, &before, &mark(w.clone(), Some(apple))),
        Some(true)
    );
    assert_eq!(
        step_truth(&v, &req, &before, &mark(w.clone(), Some(orange))),
        Some(false)
    );
    assert_eq!(
        step_truth(&v, &req, &before, &mark(w.clone(), None)),
        Some(false)
    );
    // the robot's frame a few centimetres off after a drive: the cloud's centre beside
    // the apple still names it
    let mut off = req.clone();
    off.object_cloud = PointCloud::new(
        FrameId::new("map"),
        req.object_cloud
            .points()
            .iter()
            .map(|q| Point3::new(q.x + 0.04, q.y, q.z - 0.03))
            .collect(),
    );
    assert_eq!(
        step_truth(&v, &off, &before, &mark(w.clone(), Some(apple))),
        Some(true)
    );
    assert_eq!(
        step_truth(&v, &off, &before, &mark(w.clone(), Some(orange))),
        Some(false)
    );
    // a reference by look names nothing: what the cloud showed, by where it is
    let mut by_look = off.clone();
    by_look.object_name = "the something round".into();
    assert_eq!(
        step_truth(&v, &by_look, &before, &mark(w.clone(), Some(apple))),
        Some(true)
    );
    assert_eq!(
        step_truth(&v, &by_look, &before, &mark(w.clone(), Some(orange))),
        Some(false)
    );
    // no cloud: nothing to judge
    let mut blind = req.clone();
    blind.object_cloud = PointCloud::empty(FrameId::new("map"));
    assert_eq!(step_truth(&v, &blind, &before, &mark(w, Some(apple))), None);
}

#[test]
fn a_place_is_true_when_the_held_object_rests_in_the_target_and_is_let_go() {
    let w = world();
    let apple = idx(&w, "apple");
    let req = request(Skill::Place, &w, "bowl")
        .with_relation(Relation::In)
        .with_held(HeldObject {
            key: ObjectKey::new("apple_0").unwrap(),
            name: "the apple".into(),
            scene_names: Vec::new(),
            cloud: Some(cloud_of(&w, "apple")),
        });
    let v = verdict(Verb::Place, Answer::Yes);
    let before = mark(w.clone(), Some(apple));
    let mut placed = w.clone();
    let bowl = placed.objects[idx(&w, "bowl")].aabb();
    move_to(
        &mut placed,
        "apple",
        Point3::new(bowl.center().x, bowl.center().y, bowl.mins.z + 0.041),
    );
    assert_eq!(
        step_truth(&v, &req, &before, &mark(placed.clone(), None)),
        Some(true)
    );
    // still in the fingers over the bowl: not placed
    assert_eq!(
        step_truth(&v, &req, &before, &mark(placed, Some(apple))),
        Some(false)
    );
    // dropped back where it was, beside the bowl
    assert_eq!(step_truth(&v, &req, &before, &mark(w, None)), Some(false));
}

#[test]
fn a_press_is_true_when_the_button_was_pressed_during_the_step() {
    let w = world();
    let req = request(Skill::TipPush, &w, "desk_bell");
    let v = verdict(Verb::Press, Answer::No);
    let before = mark(w.clone(), None);
    let mut pressed = w.clone();
    let bell = idx(&w, "desk_bell");
    pressed.objects[bell].parts[0].presses += 1;
    assert_eq!(
        step_truth(&v, &req, &before, &mark(pressed.clone(), None)),
        Some(true)
    );
    assert_eq!(
        step_truth(&v, &req, &before, &mark(w.clone(), None)),
        Some(false)
    );
    // pressed before the step, not during it
    let earlier = mark(pressed.clone(), None);
    assert_eq!(
        step_truth(&v, &req, &earlier, &mark(pressed, None)),
        Some(false)
    );
}

#[test]
fn an_open_is_true_when_the_drawer_is_out_and_a_close_when_it_is_in() {
    let w = world();
    let unit = idx(&w, "drawer_unit");
    let req = request(Skill::HookPull, &w, "drawer_unit");
    let closed = w.clone();
    let mut open = w.clone();
    open.objects[unit].links[0].position = 0.2;
    let mut ajar = w.clone();
    ajar.objects[unit].links[0].position = 0.05;
    let o = verdict(Verb::Open, Answer::Yes);
    let c = verdict(Verb::Close, Answer::Yes);
    let m = |w: &World| mark(w.clone(), None);
    assert_eq!(step_truth(&o, &req, &m(&closed), &m(&open)), Some(true));
    assert_eq!(step_truth(&o, &req, &m(&closed), &m(&ajar)), Some(false));
    assert_eq!(step_truth(&c, &req, &m(&open), &m(&closed)), Some(true));
    assert_eq!(step_truth(&c, &req, &m(&open), &m(&ajar)), Some(false));
}

#[test]
fn scores_count_answers_against_the_world_per_verb() {
    let j = |verb, answer, truth| OutcomeJudgement {
        call_index: 1,
        verb,
        question: String::new(),
        answer,
        truth,
    };
    let all = [
        j(Verb::PickUp, Answer::Yes, Some(true)),
        j(Verb::PickUp, Answer::Yes, Some(true)),
        j(Verb::PickUp, Answer::Yes, Some(false)),
        j(Verb::PickUp, Answer::No, Some(true)),
        j(Verb::PickUp, Answer::No, Some(false)),
        j(Verb::Place, Answer::Unknown, Some(true)),
        j(Verb::Place, Answer::Yes, None),
    ];
    let s = YesNoScore::per_verb(&all);
    let names: Vec<&str> = s.iter().map(|v| v.verb.as_str()).collect();
    assert_eq!(names, ["pick_up", "place", "all"]);
    assert_eq!(s[0].precision(), Some(2.0 / 3.0));
    assert_eq!(s[0].recall(), Some(2.0 / 3.0));
    assert_eq!((s[1].cannot_tell, s[1].unjudged), (1, 1));
    assert_eq!(s[1].precision(), None);
    assert_eq!(
        s[2].true_yes + s[2].false_yes + s[2].true_no + s[2].false_no,
        5
    );
    assert!(YesNoScore::per_verb(&[]).is_empty());
}

#[test]
fn a_container_is_told_by_its_box_not_by_the_table_under_its_hollow() {
    let w = world();
    let ball = idx(&w, "small_ball");
    let basket = w.objects[idx(&w, "basket")].aabb();
    // the map's cloud of an open basket: its floor and walls, centred in the hollow a
    // few millimetres above the table top
    let c = basket.center();
    let cloud = PointCloud::new(
        FrameId::new("map"),
        vec![
            Point3::new(c.x, c.y, basket.mins.z + 0.008),
            Point3::new(basket.mins.x, c.y, basket.mins.z + 0.008),
            Point3::new(basket.maxs.x, c.y, basket.mins.z + 0.008),
        ],
    );
    let req = SkillRequest::new(
        Skill::Drop,
        ObjectKey::new("basket_0").unwrap(),
        "the basket",
        cloud,
    )
    .with_relation(Relation::In);
    let v = verdict(Verb::Place, Answer::Yes);
    let before = mark(w.clone(), Some(ball));
    // dropped on the table beside the basket: not in it
    let mut beside = w.clone();
    let table_top = w.objects[idx(&w, "table")].aabb().maxs.z;
    move_to(
        &mut beside,
        "small_ball",
        Point3::new(basket.maxs.x + 0.1, c.y, table_top + 0.03),
    );
    assert_eq!(
        step_truth(&v, &req, &before, &mark(beside, None)),
        Some(false)
    );
    let mut inside = w.clone();
    move_to(
        &mut inside,
        "small_ball",
        Point3::new(c.x, c.y, basket.mins.z + 0.04),
    );
    assert_eq!(
        step_truth(&v, &req, &before, &mark(inside, None)),
        Some(true)
    );
}
