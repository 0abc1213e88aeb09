//! The apartment scenarios for go_to: simulators and map clouds of objects and parts
//! sampled from the world's geometry (perception is not under test here).
#![allow(clippy::unwrap_used, dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use asp_config::AspConfig;
use asp_core::{Point3, PointCloud, Real};
use asp_kinematics::Xarm6;
use asp_sim::scenario::Scenario;
use asp_sim::world::Object;
use asp_sim::{SimRobot, SimSettings};

pub fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

pub fn config() -> AspConfig {
    AspConfig::load_dir(config_dir()).unwrap().config
}

pub fn scenario(file: &str, settings: SimSettings) -> SimRobot {
    let sc = Scenario::load(config_dir().join("scenarios").join(file)).unwrap();
    SimRobot::for_scenario(&sc, Arc::new(Xarm6::on_base().unwrap()), settings).unwrap()
}

/// Samples the volume of the geometry of `o` that `keep` selects, every 1 cm (the map's
/// cloud of an object or of a part; perception is not under test here).
pub fn sample(o: &Object, keep: impl Fn(&asp_sim::world::Geom) -> bool) -> Vec<Point3> {
    let b = o.aabb_where(&keep);
    let ext = b.maxs - b.mins;
    let step: Real = (ext.min() / 4.0).clamp(0.002, 0.01);
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
                if o.geoms
                    .iter()
                    .filter(|g| keep(g))
                    .any(|g| g.prim.contains(&o.geom_pose(g), &p))
                {
                    pts.push(p);
                }
            }
        }
    }
    assert!(!pts.is_empty());
    pts
}

/// The object's cloud and the cloud of its parts whose names start with `part_prefix`.
pub fn clouds(sim: &SimRobot, object: &str, part_prefix: &str) -> (PointCloud, PointCloud) {
    sim.with_state(|s| {
        let o = s.world.object(object).unwrap();
        let obj = sample(o, |_| true);
        let part = sample(o, |g| {
            g.part
                .is_some_and(|p| o.parts[p].name.starts_with(part_prefix))
        });
        (PointCloud::new("map", obj), PointCloud::new("map", part))
    })
}
