//! A building's storeys in one simulation (issue 16): the robot is on one storey, whose
//! world is [`crate::SimState::world`]; the others wait as the robot left them. The
//! elevator is a navigation leg: the base stands at the elevator's spot of its storey,
//! rides (`doors_s + travel_s_per_floor · |Δstorey|` of simulated time) and comes out
//! at the same spot of the other storey, with whatever the gripper carries.
//!
//! Each storey keeps its own flat world and map frame (as a robot keeps one Nav2 map
//! per floor); how high the storey's floor is goes out as the `building → map`
//! transform, so that what the robot sees on different storeys stays apart.

use std::path::{Path, PathBuf};

use crate::building::BuildingIndex;
use crate::error::SimError;
use crate::world::{ObjectIdx, World, load_world};
use crate::yaml;

/// How far from the elevator's spot (metres) the base may stand to ride it.
pub const ELEVATOR_REACH_M: f32 = 1.0;

/// The frame above every storey's map: the building, z up from the ground floor.
pub const BUILDING_FRAME: &str = "building";

/// What a world file held: one world, or a building's storeys.
#[derive(Debug, Clone)]
pub enum Site {
    World(World),
    Building {
        index: BuildingIndex,
        /// One per storey, in the index's order.
        worlds: Vec<World>,
    },
}

/// Loads a world file, or a building index (`building.yaml` from `asp world generate`:
/// a file with `storeys`) and every storey's world, each path relative to the index.
pub fn load_site(path: impl AsRef<Path>) -> Result<Site, SimError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| SimError::Io {
        file: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let is_building = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text)
        .ok()
        .is_some_and(|v| v.get("storeys").is_some());
    if !is_building {
        return load_world(path).map(Site::World);
    }
    let index: BuildingIndex = yaml::parse_str(&text, path)?;
    if index.storeys.is_empty() {
        return Err(SimError::invalid(
            path,
            "storeys",
            "a building needs a storey",
        ));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let worlds = index
        .storeys
        .iter()
        .map(|s| load_world(dir.join(&s.world)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Site::Building { index, worlds })
}

/// The storeys of the building the robot is in.
#[derive(Debug, Clone)]
pub struct Storeys {
    pub index: BuildingIndex,
    /// The storey the robot is on.
    pub current: usize,
    /// Every other storey's world as the robot left it (`None` at `current`, whose world
    /// the simulation holds).
    parked: Vec<Option<World>>,
}

/// Why a ride was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RideRefused {
    #[error("storey {to} does not exist: the building has storeys 0 to {last}")]
    NoSuchStorey { to: usize, last: usize },
    #[error(
        "the base is {distance:.2} m from the elevator of storey {storey} at ({x:.2}, {y:.2}); it rides from within {ELEVATOR_REACH_M} m"
    )]
    NotAtElevator {
        storey: usize,
        distance: f32,
        x: f32,
        y: f32,
    },
    #[error("the gripper holds something fixed in place; release it before riding")]
    HoldsFixed,
}

/// Why a ride did not happen or did not end at the storey asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RideError {
    #[error("the robot is not in a building: sim_node.world is a single world")]
    NotInBuilding,
    #[error("{0}")]
    Refused(#[from] RideRefused),
    #[error("cancelled while the doors closed: the base is still on storey {storey}")]
    Cancelled { storey: usize },
}

impl Storeys {
    /// The storeys of `worlds` (one per storey of `index`), the robot on `current`:
    /// returns them and the world of `current`.
    pub fn new(
        index: BuildingIndex,
        worlds: Vec<World>,
        current: usize,
        file: &Path,
    ) -> Result<(Self, World), SimError> {
        if worlds.len() != index.storeys.len() {
            return Err(SimError::invalid(
                file,
                "storeys",
                format!(
                    "{} storeys listed, {} worlds loaded",
                    index.storeys.len(),
                    worlds.len()
                ),
            ));
        }
        if current >= worlds.len() {
            return Err(SimError::invalid(
                PathBuf::from("sim_node"),
                "start_storey",
                format!(
                    "storey {current} does not exist: {} has storeys 0 to {}",
                    file.display(),
                    worlds.len() - 1
                ),
            ));
        }
        let mut parked: Vec<Option<World>> = worlds.into_iter().map(Some).collect();
        let world = parked[current].take().expect("taken once");
        Ok((
            Self {
                index,
                current,
                parked,
            },
            world,
        ))
    }

    /// How high the current storey's floor is above the ground floor's, metres.
    pub fn height_m(&self) -> f32 {
        self.index.storeys[self.current].height_m
    }

    /// The current storey's map in the building's frame (`building → map`).
    pub fn map_in_building(&self) -> asp_core::Isometry3 {
        asp_core::Isometry3::translation(0.0, 0.0, self.height_m())
    }

    /// Where the base stands to ride the elevator on the current storey.
    pub fn elevator_xy(&self) -> [f32; 2] {
        self.index.storeys[self.current].elevator_xy
    }

    /// Checks a ride from `base_xy` on the current storey to `to`.
    pub fn check_ride(&self, base_xy: [f32; 2], to: usize) -> Result<(), RideRefused> {
        let last = self.index.storeys.len() - 1;
        if to > last {
            return Err(RideRefused::NoSuchStorey { to, last });
        }
        let [x, y] = self.elevator_xy();
        let distance = (base_xy[0] - x).hypot(base_xy[1] - y);
        if distance > ELEVATOR_REACH_M {
            return Err(RideRefused::NotAtElevator {
                storey: self.current,
                distance,
                x,
                y,
            });
        }
        Ok(())
    }

    /// Moves the robot to storey `to`: `world` (the current storey's) is parked and
    /// becomes storey `to`'s. The object `carried` (in the current world) goes along: it
    /// leaves a far-away placeholder where it was (indices stay valid) and takes the
    /// place of its own placeholder on the other storey, if it was there before. Returns
    /// the carried object's index in the new world.
    pub fn switch(
        &mut self,
        world: &mut World,
        to: usize,
        carried: Option<ObjectIdx>,
    ) -> Option<ObjectIdx> {
        if to == self.current {
            return carried;
        }
        let mut next = self.parked[to]
            .take()
            .expect("every other storey is parked");
        let moved = carried.map(|i| {
            let object = world.objects[i].clone();
            world.objects[i].pose.translation.vector += PLACEHOLDER_OFFSET;
            match next.index_of(&object.name) {
                Some(j) => {
                    next.objects[j] = object;
                    j
                }
                None => {
                    next.objects.push(object);
                    next.objects.len() - 1
                }
            }
        });
        std::mem::swap(world, &mut next);
        self.parked[self.current] = Some(next);
        self.current = to;
        moved
    }

    /// Storey `k`'s world: the current one is `current_world` (the simulation's).
    pub fn world<'a>(&'a self, k: usize, current_world: &'a World) -> Option<&'a World> {
        if k == self.current {
            Some(current_world)
        } else {
            self.parked.get(k).and_then(Option::as_ref)
        }
    }
}

/// Where an object that left its storey is put: far outside every map, below the floor
/// (no camera, planner or cost map reaches it).
const PLACEHOLDER_OFFSET: asp_core::Vector3 = asp_core::Vector3::new(1.0e4, 1.0e4, -1.0e4);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::building::{ElevatorSpec, StoreyIndex};
    use crate::world::parse_world;

    fn world(name: &str, objects: &[&str]) -> World {
        let mut text = format!("name: {name}\ndescription: a storey\nobjects:\n");
        for (k, o) in objects.iter().enumerate() {
            text.push_str(&format!(
                "  - name: {o}\n    description: a {o}\n    pose: {{xyz: [{}, 0, 0.5]}}\n    shapes: [{{box: {{size: [0.1, 0.1, 0.1]}}}}]\n",
                k as f32
            ));
        }
        parse_world(&text, "test.yaml").unwrap()
    }

    fn index(n: usize) -> BuildingIndex {
        BuildingIndex {
            name: "house".into(),
            seed: 0,
            storeys: (0..n)
                .map(|k| StoreyIndex {
                    world: format!("storey_{k}.yaml"),
                    height_m: 3.5 * k as f32,
                    elevator_xy: [-2.0, 1.0],
                })
                .collect(),
            elevator: ElevatorSpec {
                travel_s_per_floor: 4.0,
                doors_s: 6.0,
            },
        }
    }

    #[test]
    fn a_carried_object_goes_along_and_comes_back_to_its_own_place() {
        let worlds = vec![
            world("s0", &["s0_mug", "s0_desk"]),
            world("s1", &["s1_box"]),
        ];
        let (mut storeys, mut w) =
            Storeys::new(index(2), worlds, 0, Path::new("building.yaml")).unwrap();
        assert_eq!(storeys.height_m(), 0.0);
        let mug = w.index_of("s0_mug").unwrap();
        let at = w.objects[mug].pose.translation.vector;
        let moved = storeys.switch(&mut w, 1, Some(mug)).unwrap();
        assert_eq!(w.name, "s1");
        assert_eq!(storeys.current, 1);
        assert_eq!(storeys.height_m(), 3.5);
        assert_eq!(w.objects[moved].name, "s0_mug");
        assert_eq!(w.objects[moved].pose.translation.vector, at);
        // the ground floor keeps a placeholder far away
        let ground = storeys.world(0, &w).unwrap();
        let left = ground.object("s0_mug").unwrap();
        assert!(left.pose.translation.vector.z < -1000.0);
        // carried back, it takes its placeholder's index again (no second mug)
        let back = storeys.switch(&mut w, 0, Some(moved)).unwrap();
        assert_eq!(back, mug);
        assert_eq!(w.objects.len(), 2);
        assert_eq!(w.objects[mug].pose.translation.vector, at);
    }

    #[test]
    fn rides_are_refused_away_from_the_elevator_and_to_storeys_that_do_not_exist() {
        let worlds = vec![
            world("s0", &["a"]),
            world("s1", &["b"]),
            world("s2", &["c"]),
        ];
        let (storeys, _) = Storeys::new(index(3), worlds, 1, Path::new("b.yaml")).unwrap();
        assert_eq!(storeys.check_ride([-2.3, 1.2], 2), Ok(()));
        let far = storeys.check_ride([1.0, 1.0], 2).unwrap_err();
        assert!(
            far.to_string()
                .contains("3.00 m from the elevator of storey 1"),
            "{far}"
        );
        assert_eq!(
            storeys.check_ride([-2.0, 1.0], 3),
            Err(RideRefused::NoSuchStorey { to: 3, last: 2 })
        );
        let bad =
            Storeys::new(index(3), vec![world("s0", &["a"])], 0, Path::new("b.yaml")).unwrap_err();
        assert!(
            bad.to_string().contains("3 storeys listed, 1 worlds"),
            "{bad}"
        );
    }
}
