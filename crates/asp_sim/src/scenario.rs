//! Scenario files: a world, a goal in plain language, where the robot starts, a success
//! predicate and partial-progress predicates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use asp_core::{Pose2D, Real};
use serde::{Deserialize, Serialize};

use crate::error::SimError;
use crate::predicate::{Predicate, RobotView};
use crate::storeys::{Site, load_site};
use crate::world::shape::pose_from_spec;
use crate::world::spec::PoseSpec;
use crate::world::{World, load_world_adding};
use crate::yaml;

/// Which published study a scenario is modelled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Study {
    Tabletop,
    Mobile,
}

/// Where the robot starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotStart {
    /// Base position (x, y), metres, map frame.
    pub base: [Real; 2],
    /// Base heading, degrees.
    #[serde(default)]
    pub heading_deg: Real,
    /// Named arm configuration. Default `home`.
    #[serde(default = "home")]
    pub arm: String,
    /// The storey the robot starts on when `world` names a building (`building.yaml`
    /// from `asp world generate`). Default 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub storey: usize,
}

fn is_zero(k: &usize) -> bool {
    *k == 0
}

fn home() -> String {
    "home".into()
}

impl RobotStart {
    pub fn base_pose(&self) -> Pose2D {
        Pose2D::new(self.base[0], self.base[1], self.heading_deg.to_radians())
    }
}

/// Edits to the world before the scenario starts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// New poses for objects, by name.
    #[serde(default, rename = "move")]
    pub moves: BTreeMap<String, PoseSpec>,
    /// Objects taken out of the world.
    #[serde(default)]
    pub remove: Vec<String>,
    /// Objects put into the world (the scenario's props), written as a world file's.
    #[serde(default)]
    pub add: Vec<crate::world::spec::ObjectSpec>,
}

/// One partial-progress level: `score` when `when` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partial {
    pub score: Real,
    #[serde(with = "serde_yaml_ng::with::singleton_map_recursive")]
    pub when: Predicate,
}

/// A scenario file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    pub study: Study,
    /// A suite's grouping of its scenarios (the concepts suite's `easy`, `medium`,
    /// `hard`); `asp eval` reports success per level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// The instruction given to the robot.
    pub goal: String,
    /// World file, relative to the config folder (the parent of `scenarios/`), or a
    /// building's index (`building.yaml`): the robot starts on `robot.storey`, the setup
    /// edits objects on whichever storey they are, and the predicates are judged on the
    /// storey the robot is on at the end (an object carried between storeys goes with
    /// the robot).
    pub world: String,
    #[serde(default)]
    pub notes: String,
    pub robot: RobotStart,
    #[serde(default)]
    pub setup: Setup,
    #[serde(with = "serde_yaml_ng::with::singleton_map_recursive")]
    pub success: Predicate,
    /// Partial credit; the score of a run is 1 on success, else the highest level that
    /// holds, else 0.
    #[serde(default)]
    pub partial: Vec<Partial>,
    /// Simulated seconds a run may take. Default 600.
    #[serde(default = "default_limit")]
    pub time_limit_s: f64,
}

fn default_limit() -> f64 {
    600.0
}

/// A loaded scenario with its (edited) world.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub file: PathBuf,
    pub spec: ScenarioSpec,
    /// The world the robot starts in (in a building, its start storey's).
    pub world: World,
    /// In a building, every storey (`None` for a single world).
    pub building: Option<ScenarioBuilding>,
}

/// A scenario's building: its index and every storey's world, edited by the setup (the
/// start storey's is also [`Scenario::world`]).
#[derive(Debug, Clone)]
pub struct ScenarioBuilding {
    pub index: crate::building::BuildingIndex,
    pub worlds: Vec<World>,
}

/// Every storey's objects in one world, for checking names (each object's mount points
/// at its holder in the same list).
fn all_objects(worlds: &[World]) -> World {
    let mut all = worlds[0].clone();
    for w in &worlds[1..] {
        let offset = all.objects.len();
        all.objects.extend(w.objects.iter().cloned().map(|mut o| {
            if let Some(m) = o.mount.as_mut() {
                m.holder += offset;
            }
            o
        }));
    }
    all
}

/// The config folder a scenario file's world path refers to: the parent of the nearest
/// `scenarios` folder above it, else the file's own folder.
pub fn config_root_of(file: &Path) -> PathBuf {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d.file_name().is_some_and(|n| n == "scenarios") {
            return d.parent().map(Path::to_path_buf).unwrap_or_default();
        }
        dir = d.parent();
    }
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl Scenario {
    /// Loads a scenario, its world, applies the setup and checks every name it uses.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, SimError> {
        let path = path.as_ref();
        let (spec, _): (ScenarioSpec, _) = yaml::load_file(path)?;
        let world_path = config_root_of(path).join(&spec.world);
        let unreadable = |e| match e {
            SimError::Io { message, .. } => SimError::invalid(
                path,
                "world",
                format!("cannot read world {}: {message}", world_path.display()),
            ),
            other => other,
        };
        let site = match load_site(&world_path).map_err(unreadable)? {
            Site::World(_) => {
                Site::World(load_world_adding(&world_path, &spec.setup.add).map_err(unreadable)?)
            }
            Site::Building { index, mut worlds } => {
                // the props go onto the start storey
                let start = spec.robot.storey;
                if let Some(storey) = index.storeys.get(start)
                    && !spec.setup.add.is_empty()
                {
                    let dir = world_path.parent().unwrap_or(Path::new("."));
                    worlds[start] = load_world_adding(dir.join(&storey.world), &spec.setup.add)
                        .map_err(unreadable)?;
                }
                Site::Building { index, worlds }
            }
        };
        Self::from_site(path, spec, site)
    }

    /// A scenario from an already parsed spec and its world.
    pub fn from_parts(path: &Path, spec: ScenarioSpec, world: World) -> Result<Scenario, SimError> {
        Self::from_site(path, spec, Site::World(world))
    }

    /// A scenario from an already parsed spec and its world or building.
    pub fn from_site(path: &Path, spec: ScenarioSpec, site: Site) -> Result<Scenario, SimError> {
        let err = |entry: &str, problem: String| SimError::invalid(path, entry, problem);
        let start = spec.robot.storey;
        let (mut worlds, index) = match site {
            Site::World(w) => {
                if start != 0 {
                    return Err(err(
                        "robot.storey",
                        format!(
                            "is {start}, but {} is a single world (storey 0)",
                            spec.world
                        ),
                    ));
                }
                (vec![w], None)
            }
            Site::Building { index, worlds } => (worlds, Some(index)),
        };
        if start >= worlds.len() {
            return Err(err(
                "robot.storey",
                format!(
                    "storey {start} does not exist: {} has storeys 0 to {}",
                    spec.world,
                    worlds.len() - 1
                ),
            ));
        }
        if spec.name.trim().is_empty() {
            return Err(err("name", "a scenario needs a name".into()));
        }
        if spec.goal.trim().is_empty() {
            return Err(err("goal", "a scenario needs a goal".into()));
        }
        if !(spec.time_limit_s.is_finite() && spec.time_limit_s > 0.0) {
            return Err(err(
                "time_limit_s",
                format!("must be positive, got {}", spec.time_limit_s),
            ));
        }
        if !spec
            .robot
            .base
            .iter()
            .chain([&spec.robot.heading_deg])
            .all(|v| v.is_finite())
        {
            return Err(err(
                "robot",
                format!("base pose must be finite, got {:?}", spec.robot),
            ));
        }
        // the props come with the world (Self::load); a world made without them lacks them
        for (k, o) in spec.setup.add.iter().enumerate() {
            if worlds[start].index_of(&o.name).is_none() {
                return Err(err(
                    &format!("setup.add[{k}]"),
                    format!("{:?} is not in the world given", o.name),
                ));
            }
        }
        // the storey whose world holds `name`, and its index there
        let find = |worlds: &[World], name: &str| {
            worlds
                .iter()
                .enumerate()
                .find_map(|(k, w)| w.index_of(name).map(|i| (k, i)))
        };
        for (name, pose) in &spec.setup.moves {
            let at = format!("setup.move.{name}");
            let (k, i) =
                find(&worlds, name).ok_or_else(|| err(&at, format!("unknown object {name:?}")))?;
            let world = &mut worlds[k];
            let p = pose_from_spec(pose).map_err(|e| err(&at, e))?;
            let o = &mut world.objects[i];
            o.pose = p;
            if let Some(m) = o.mount.as_mut() {
                m.seated = p;
            }
        }
        for (k, name) in spec.setup.remove.iter().enumerate() {
            let (storey, i) = find(&worlds, name).ok_or_else(|| {
                err(
                    &format!("setup.remove[{k}]"),
                    format!("unknown object {name:?}"),
                )
            })?;
            let world = &mut worlds[storey];
            if world
                .objects
                .iter()
                .any(|o| o.mount.as_ref().is_some_and(|m| m.holder == i))
            {
                return Err(err(
                    &format!("setup.remove[{k}]"),
                    format!("{name:?} holds a mounted object and cannot be removed"),
                ));
            }
            world.objects.remove(i);
            for o in &mut world.objects {
                if let Some(m) = o.mount.as_mut()
                    && m.holder > i
                {
                    m.holder -= 1;
                }
            }
        }
        let everything = all_objects(&worlds);
        spec.success
            .check(&everything)
            .map_err(|e| err("success", e.to_string()))?;
        // a storey the judge would never find the base on makes a scenario nobody passes
        let storey_names = |p: &Predicate| {
            p.named_worlds()
                .into_iter()
                .find(|n| !worlds.iter().any(|w| w.name == *n))
                .map(|n| {
                    let known: Vec<&str> = worlds.iter().map(|w| w.name.as_str()).collect();
                    format!(
                        "base_in.world {n:?} is none of {}'s worlds {known:?}",
                        spec.world
                    )
                })
        };
        if let Some(problem) = storey_names(&spec.success) {
            return Err(err("success", problem));
        }
        for (i, p) in spec.partial.iter().enumerate() {
            let at = format!("partial[{i}]");
            if !(p.score > 0.0 && p.score < 1.0) {
                return Err(err(
                    &at,
                    format!("score must be in (0, 1), got {}", p.score),
                ));
            }
            p.when
                .check(&everything)
                .map_err(|e| err(&at, e.to_string()))?;
            if let Some(problem) = storey_names(&p.when) {
                return Err(err(&at, problem));
            }
        }
        let world = worlds[start].clone();
        Ok(Scenario {
            file: path.to_path_buf(),
            spec,
            world,
            building: index.map(|index| ScenarioBuilding { index, worlds }),
        })
    }

    pub fn success(&self, world: &World, robot: &RobotView<'_>) -> bool {
        self.spec.success.eval(world, robot)
    }

    /// 1 on success, else the highest partial level that holds, else 0.
    pub fn score(&self, world: &World, robot: &RobotView<'_>) -> Real {
        if self.success(world, robot) {
            return 1.0;
        }
        self.spec
            .partial
            .iter()
            .filter(|p| p.when.eval(world, robot))
            .map(|p| p.score)
            .fold(0.0, Real::max)
    }
}
