//! Adapters that let the nodes' logic run against the embedded simulator in process:
//! its planning scene, and a scene observer for the verifier's outcome checks.
//!
//! Both stand in for what a real robot offers: MoveIt's planning scene (collision
//! objects named by the product's object keys) and a perception pass that re-observes
//! the acted-on object after a skill. The observer reads the simulator's state (like
//! Gazebo's entity-state service): that is simulation, and it is named so.

use std::collections::BTreeMap;
use std::sync::Mutex;

use asp_core::{Point3, PointCloud, Real, Skill};
use asp_sim::SimRobot;
use asp_skills::{ObserveError, ObservePhase, ObserveRequest, Observed, SceneObserver};
use asp_verify::ArticulationState;
use async_trait::async_trait;

use crate::skills::PlanningScenePort;

#[async_trait]
impl PlanningScenePort for SimRobot {
    async fn apply(&self, id: &str, cloud: &PointCloud) -> Result<(), String> {
        self.apply_collision_object(id, cloud.points());
        Ok(())
    }
}

/// Samples the volume of world object `name`'s geometry (its current pose): what a
/// perfect re-observation of the object would give.
pub fn sample_object(sim: &SimRobot, name: &str) -> Option<PointCloud> {
    sim.with_state(|s| {
        let o = s.world.object(name)?;
        let b = o.aabb();
        let ext = b.maxs - b.mins;
        let step = (ext.max() / 30.0).max(0.004);
        let n = |e: Real| (e / step).ceil() as usize + 1;
        let mut pts = Vec::new();
        for i in 0..n(ext.x) {
            for j in 0..n(ext.y) {
                for k in 0..n(ext.z) {
                    let p = Point3::new(
                        (b.mins.x + step * i as Real).min(b.maxs.x),
                        (b.mins.y + step * j as Real).min(b.maxs.y),
                        (b.mins.z + step * k as Real).min(b.maxs.z),
                    );
                    if o.geoms.iter().any(|g| g.prim.contains(&o.geom_pose(g), &p)) {
                        pts.push(p);
                    }
                }
            }
        }
        (!pts.is_empty()).then(|| PointCloud::new("map", pts))
    })
}

/// The verifier's view of the simulated world: the acted-on object and the place
/// target as the world holds them (the planning scene maps the product's keys to world
/// objects), the joint of the link carrying the acted-on part, and whether a pushed
/// button registered a press since the skill began.
pub struct SimObserver {
    sim: SimRobot,
    presses: Mutex<BTreeMap<(String, String), u32>>,
}

impl std::fmt::Debug for SimObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimObserver").finish_non_exhaustive()
    }
}

impl SimObserver {
    pub fn new(sim: SimRobot) -> Self {
        Self {
            sim,
            presses: Mutex::new(BTreeMap::new()),
        }
    }

    fn world_name(&self, names: &[String]) -> Option<String> {
        self.sim.resolve_scene_names(names).into_iter().next()
    }
}

#[async_trait]
impl SceneObserver for SimObserver {
    async fn observe(&self, r: &ObserveRequest) -> Result<Observed, ObserveError> {
        let name = self
            .world_name(&r.scene_names)
            .ok_or_else(|| ObserveError {
                what: r.object.to_string(),
                message: format!(
                    "no simulated object answers to {:?} in the planning scene",
                    r.scene_names
                ),
            })?;
        let mut out = Observed {
            object_cloud: sample_object(&self.sim, &name),
            ..Observed::default()
        };
        if let Some((_, names, _)) = &r.target {
            out.target_cloud = self
                .world_name(names)
                .and_then(|n| sample_object(&self.sim, &n));
        }
        if let Some(part) = &r.part_name {
            let (art, presses) = self
                .sim
                .with_state(|s| {
                    let o = s.world.object(&name)?;
                    let pi = o.part_index(part)?;
                    let p = &o.parts[pi];
                    let art = p.link.map(|l| {
                        let l = &o.links[l];
                        ArticulationState {
                            position: l.position,
                            lower: l.lower,
                            upper: l.upper,
                        }
                    });
                    Some((art, p.presses))
                })
                .unwrap_or((None, 0));
            out.articulation = art;
            if r.skill == Skill::TipPush {
                let key = (name.clone(), part.clone());
                let mut m = self
                    .presses
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match r.phase {
                    ObservePhase::Before => {
                        m.insert(key, presses);
                        out.switch_on = Some(false);
                    }
                    ObservePhase::After => {
                        let base = m.get(&key).copied().unwrap_or(presses);
                        out.switch_on = Some(presses > base);
                    }
                }
            }
        }
        Ok(out)
    }
}
