//! Building worlds (issue 16): a seeded generator that turns a YAML recipe and a
//! catalogue into one simulator world per storey, joined by an elevator, plus the truth
//! about rooms that only an evaluation may read.
//!
//! Each storey is a corridor running east from an elevator lobby with a row of rooms on
//! each side, doors onto the corridor. A room gets a kind, furniture of that kind along
//! its back wall, and objects of categories found in that kind resting on the furniture
//! tops, each with a size, colour and material drawn per instance and written into its
//! description. The product never reads room kinds or bounds: they are in
//! [`BuildingTruth`], kept apart from the worlds.
//!
//! Storeys are separate worlds because the simulator's worlds are flat; the elevator is
//! a navigation leg between them costing `doors_s + travel_s_per_floor · |Δfloor|`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::SimError;
use crate::world::spec::{
    BoxSpec, CylinderSpec, FloorSpec, LightSpec, MapSpec, ObjectSpec, PoseSpec, ShapeSpec,
    SphereSpec, WorldSpec,
};
use crate::yaml;

/// A recipe file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    pub name: String,
    pub seed: u64,
    /// Catalogue file, relative to the recipe's folder.
    pub catalogue: String,
    pub floors: usize,
    pub floor_height_m: f32,
    pub rooms_per_side: usize,
    /// Room width (along the corridor) and depth.
    pub room_size_m: [f32; 2],
    pub corridor_width_m: f32,
    pub door_width_m: f32,
    pub room_kinds: Vec<String>,
    /// Inclusive range.
    pub furniture_per_room: [usize; 2],
    /// Inclusive range.
    pub objects_per_room: [usize; 2],
    pub size_jitter: [f32; 2],
    pub elevator: ElevatorSpec,
}

/// How the elevator costs time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElevatorSpec {
    pub travel_s_per_floor: f32,
    pub doors_s: f32,
}

/// A box, cylinder (radius, height) or sphere (radius), metres.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogueObject {
    pub words: String,
    #[serde(default, rename = "box")]
    pub cuboid: Option<[f32; 3]>,
    #[serde(default)]
    pub cylinder: Option<[f32; 2]>,
    #[serde(default)]
    pub sphere: Option<f32>,
    pub materials: Vec<String>,
    /// Room kinds it is found in; `any` for all.
    pub rooms: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogueFurniture {
    pub words: String,
    #[serde(rename = "box")]
    pub cuboid: [f32; 3],
    pub materials: Vec<String>,
}

/// The catalogue file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalogue {
    pub colours: BTreeMap<String, [u8; 3]>,
    /// Room kind → the furniture it may hold.
    pub rooms: BTreeMap<String, Vec<String>>,
    pub furniture: BTreeMap<String, CatalogueFurniture>,
    pub objects: BTreeMap<String, CatalogueObject>,
}

/// One storey of a generated building.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreyIndex {
    /// World file, relative to the index.
    pub world: String,
    /// Height of the storey's floor above the ground floor's, metres.
    pub height_m: f32,
    /// Where the base stands to ride the elevator, map frame of the storey.
    pub elevator_xy: [f32; 2],
}

/// `building.yaml`: what the product may read about a building (its storeys' worlds and
/// how to move between them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildingIndex {
    pub name: String,
    pub seed: u64,
    pub storeys: Vec<StoreyIndex>,
    pub elevator: ElevatorSpec,
}

impl BuildingIndex {
    /// Seconds the elevator takes from storey `from` to `to` (0 when they are the same).
    pub fn elevator_time_s(&self, from: usize, to: usize) -> f32 {
        if from == to {
            0.0
        } else {
            self.elevator.doors_s + self.elevator.travel_s_per_floor * from.abs_diff(to) as f32
        }
    }
}

/// A room as generated: for evaluation only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoomTruth {
    pub id: String,
    pub storey: usize,
    pub kind: String,
    /// `[x_min, y_min, x_max, y_max]` in the storey's map frame.
    pub bounds: [f32; 4],
}

/// An object as generated: for evaluation only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectTruth {
    pub name: String,
    pub storey: usize,
    pub room: String,
    pub category: String,
    pub description: String,
    /// The furniture it rests on (empty for furniture itself).
    pub on: String,
    pub receptacle: bool,
    pub position: [f32; 3],
}

/// `truth.yaml`: rooms and objects by room, which the memory must learn, not read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildingTruth {
    pub rooms: Vec<RoomTruth>,
    pub objects: Vec<ObjectTruth>,
}

/// A generated building.
#[derive(Debug, Clone, PartialEq)]
pub struct Building {
    pub index: BuildingIndex,
    pub storeys: Vec<WorldSpec>,
    pub truth: BuildingTruth,
}

const WALL_T: f32 = 0.1;
const WALL_H: f32 = 2.4;
const LOBBY_M: f32 = 3.0;
const WALL_COLOUR: [u8; 3] = [215, 210, 200];

impl Recipe {
    pub fn load(path: &Path) -> Result<(Recipe, Catalogue), SimError> {
        let (recipe, _): (Recipe, _) = yaml::load_file(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let catalogue_path = dir.join(&recipe.catalogue);
        let catalogue = Catalogue::load(&catalogue_path)?;
        recipe.validate(path, &catalogue, &catalogue_path)?;
        Ok((recipe, catalogue))
    }

    fn validate(&self, file: &Path, cat: &Catalogue, cat_file: &Path) -> Result<(), SimError> {
        let bad = |entry: &str, problem: String| Err(SimError::invalid(file, entry, problem));
        if self.floors == 0 || self.rooms_per_side == 0 {
            return bad(
                "floors",
                format!(
                    "needs at least one floor and one room per side, got {} and {}",
                    self.floors, self.rooms_per_side
                ),
            );
        }
        let [w, d] = self.room_size_m;
        if !(w >= 3.0 && d >= 3.0) {
            return bad(
                "room_size_m",
                format!("rooms must be at least 3 m × 3 m, got {w} × {d}"),
            );
        }
        if !(self.door_width_m > 0.5 && self.door_width_m < w - 0.5) {
            return bad(
                "door_width_m",
                format!(
                    "{} must be over 0.5 m and fit the room's width {w}",
                    self.door_width_m
                ),
            );
        }
        if !self.corridor_width_m.is_finite() || self.corridor_width_m < 1.2 {
            return bad(
                "corridor_width_m",
                format!(
                    "{} is too narrow for a base (≥ 1.2 m)",
                    self.corridor_width_m
                ),
            );
        }
        if !self.floor_height_m.is_finite() || self.floor_height_m < 2.5 {
            return bad(
                "floor_height_m",
                format!("{} is under 2.5 m", self.floor_height_m),
            );
        }
        for (name, [lo, hi]) in [
            ("furniture_per_room", self.furniture_per_room),
            ("objects_per_room", self.objects_per_room),
        ] {
            if lo > hi || hi == 0 {
                return bad(name, format!("[{lo}, {hi}] is not a range"));
            }
        }
        let [lo, hi] = self.size_jitter;
        if !(lo > 0.0 && lo <= hi) {
            return bad(
                "size_jitter",
                format!("[{lo}, {hi}] is not a range of positive factors"),
            );
        }
        if self.room_kinds.is_empty() {
            return bad("room_kinds", "is empty".into());
        }
        for kind in &self.room_kinds {
            let Some(furniture) = cat.rooms.get(kind) else {
                return bad(
                    "room_kinds",
                    format!(
                        "{kind:?} is not a room kind of {} (it has {})",
                        cat_file.display(),
                        cat.rooms.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                );
            };
            if let Some(f) = furniture.iter().find(|f| !cat.furniture.contains_key(*f)) {
                return Err(SimError::invalid(
                    cat_file,
                    format!("rooms.{kind}"),
                    format!("furniture {f:?} is not in the catalogue's furniture"),
                ));
            }
            if !cat.objects.values().any(|o| o.found_in(kind)) {
                return Err(SimError::invalid(
                    cat_file,
                    format!("rooms.{kind}"),
                    "no object is found in this kind of room".to_owned(),
                ));
            }
        }
        for (name, o) in &cat.objects {
            let shapes = [o.cuboid.is_some(), o.cylinder.is_some(), o.sphere.is_some()];
            if shapes.iter().filter(|s| **s).count() != 1 || o.materials.is_empty() {
                return Err(SimError::invalid(
                    cat_file,
                    format!("objects.{name}"),
                    "needs exactly one of box, cylinder, sphere and at least one material"
                        .to_owned(),
                ));
            }
        }
        if cat.colours.is_empty() {
            return Err(SimError::invalid(cat_file, "colours", "is empty"));
        }
        Ok(())
    }
}

impl Catalogue {
    pub fn load(path: &Path) -> Result<Catalogue, SimError> {
        let (catalogue, _): (Catalogue, _) = yaml::load_file(path)?;
        Ok(catalogue)
    }
}

impl CatalogueObject {
    fn found_in(&self, kind: &str) -> bool {
        self.rooms.iter().any(|r| r == kind || r == "any")
    }

    /// Footprint radius and height at scale `s`, and the shape with its frame at the base.
    fn shape(&self, s: f32) -> (f32, f32, ShapeSpec) {
        let at = |z: f32| PoseSpec {
            xyz: [0.0, 0.0, z],
            ..PoseSpec::default()
        };
        if let Some([x, y, z]) = self.cuboid {
            let size = [x * s, y * s, z * s];
            let r = 0.5 * (size[0].hypot(size[1]));
            let shape = ShapeSpec {
                cuboid: Some(BoxSpec { size }),
                at: at(size[2] / 2.0),
                ..ShapeSpec::default()
            };
            (r, size[2], shape)
        } else if let Some([radius, height]) = self.cylinder {
            let (radius, height) = (radius * s, height * s);
            let shape = ShapeSpec {
                cylinder: Some(CylinderSpec { radius, height }),
                at: at(height / 2.0),
                ..ShapeSpec::default()
            };
            (radius, height, shape)
        } else {
            let radius = self.sphere.unwrap_or(0.05) * s;
            let shape = ShapeSpec {
                sphere: Some(SphereSpec { radius }),
                at: at(radius),
                ..ShapeSpec::default()
            };
            (radius, 2.0 * radius, shape)
        }
    }
}

fn pick<'a, T>(rng: &mut ChaCha8Rng, xs: &'a [T]) -> &'a T {
    &xs[rng.random_range(0..xs.len())]
}

fn wall(shapes: &mut Vec<ShapeSpec>, x0: f32, y0: f32, x1: f32, y1: f32) {
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    let size = [
        (x1 - x0).abs().max(WALL_T),
        (y1 - y0).abs().max(WALL_T),
        WALL_H,
    ];
    if size[0] <= WALL_T + 1e-4 && size[1] <= WALL_T + 1e-4 {
        return;
    }
    shapes.push(ShapeSpec {
        cuboid: Some(BoxSpec { size }),
        at: PoseSpec {
            xyz: [cx, cy, WALL_H / 2.0],
            ..PoseSpec::default()
        },
        ..ShapeSpec::default()
    });
}

/// A room being furnished: where things may stand.
struct Layout {
    id: String,
    bounds: [f32; 4],
    /// +1: the door is on the room's north side (a south room), -1: on its south side.
    door_side: f32,
}

/// Generates the building of `recipe` from `catalogue`. Deterministic in the recipe's seed.
pub fn generate(recipe: &Recipe, catalogue: &Catalogue) -> Building {
    let mut rng = ChaCha8Rng::seed_from_u64(recipe.seed);
    let [w, d] = recipe.room_size_m;
    let c = recipe.corridor_width_m;
    let n = recipe.rooms_per_side;
    let length = n as f32 * w;
    let depth = 2.0 * d + c;
    // every kind once before any repeats, the order shuffled
    let total_rooms = recipe.floors * 2 * n;
    let mut kinds: Vec<String> = Vec::with_capacity(total_rooms);
    while kinds.len() < total_rooms {
        let mut round = recipe.room_kinds.clone();
        for i in (1..round.len()).rev() {
            round.swap(i, rng.random_range(0..=i));
        }
        kinds.extend(round);
    }
    kinds.truncate(total_rooms);
    let colour_names: Vec<&String> = catalogue.colours.keys().collect();

    let mut storeys = Vec::new();
    let mut truth = BuildingTruth {
        rooms: Vec::new(),
        objects: Vec::new(),
    };
    let mut index = BuildingIndex {
        name: recipe.name.clone(),
        seed: recipe.seed,
        storeys: Vec::new(),
        elevator: recipe.elevator,
    };
    for storey in 0..recipe.floors {
        let mut objects = vec![walls(recipe)];
        objects.push(ObjectSpec {
            name: "elevator".into(),
            description: "an elevator with sliding steel doors".into(),
            fixed: true,
            color: [170, 170, 180],
            pose: PoseSpec {
                xyz: [-LOBBY_M + 0.05, d + c / 2.0, 0.0],
                ..PoseSpec::default()
            },
            shapes: vec![ShapeSpec {
                cuboid: Some(BoxSpec {
                    size: [0.1, 1.4, 2.2],
                }),
                at: PoseSpec {
                    xyz: [0.0, 0.0, 1.1],
                    ..PoseSpec::default()
                },
                ..ShapeSpec::default()
            }],
            ..object_defaults()
        });
        for side in 0..2 {
            for i in 0..n {
                let k = storey * 2 * n + side * n + i;
                let x0 = i as f32 * w;
                let (y0, door_side) = if side == 0 { (0.0, 1.0) } else { (d + c, -1.0) };
                let layout = Layout {
                    id: format!("s{storey}_r{}", side * n + i),
                    bounds: [x0, y0, x0 + w, y0 + d],
                    door_side,
                };
                furnish(
                    recipe,
                    catalogue,
                    &colour_names,
                    &mut rng,
                    storey,
                    &kinds[k],
                    &layout,
                    &mut objects,
                    &mut truth,
                );
                truth.rooms.push(RoomTruth {
                    id: layout.id.clone(),
                    storey,
                    kind: kinds[k].clone(),
                    bounds: layout.bounds,
                });
            }
        }
        let world = WorldSpec {
            name: format!("{}_storey_{storey}", recipe.name),
            description: format!("storey {storey} of {}", recipe.name),
            floor: Some(FloorSpec {
                size: [length + LOBBY_M + 0.4, depth + 0.4],
                center: [(length - LOBBY_M) / 2.0, depth / 2.0],
                color: [150, 150, 145],
            }),
            map: Some(MapSpec {
                origin: [-LOBBY_M - 0.2, -0.2],
                size: [length + LOBBY_M + 0.4, depth + 0.4],
            }),
            light: LightSpec::default(),
            objects,
        };
        storeys.push(world);
        index.storeys.push(StoreyIndex {
            world: format!("storey_{storey}.yaml"),
            height_m: storey as f32 * recipe.floor_height_m,
            elevator_xy: [-LOBBY_M + 1.0, d + c / 2.0],
        });
    }
    Building {
        index,
        storeys,
        truth,
    }
}

fn object_defaults() -> ObjectSpec {
    ObjectSpec {
        name: String::new(),
        description: String::new(),
        fixed: false,
        color: [180, 180, 180],
        pose: PoseSpec::default(),
        shapes: Vec::new(),
        parts: Vec::new(),
        keypads: Vec::new(),
        links: Vec::new(),
        mount: None,
    }
}

/// The storey's walls: the outline, the walls between rooms, and the corridor's walls
/// with a door into each room.
fn walls(recipe: &Recipe) -> ObjectSpec {
    let [w, d] = recipe.room_size_m;
    let c = recipe.corridor_width_m;
    let n = recipe.rooms_per_side;
    let length = n as f32 * w;
    let depth = 2.0 * d + c;
    let half_door = recipe.door_width_m / 2.0;
    let mut shapes = Vec::new();
    // outline: rooms' outer walls, the east end, and the lobby around the elevator
    wall(&mut shapes, 0.0, -WALL_T / 2.0, length, -WALL_T / 2.0);
    wall(
        &mut shapes,
        0.0,
        depth + WALL_T / 2.0,
        length,
        depth + WALL_T / 2.0,
    );
    wall(
        &mut shapes,
        length + WALL_T / 2.0,
        0.0,
        length + WALL_T / 2.0,
        depth,
    );
    wall(&mut shapes, 0.0, 0.0, 0.0, d);
    wall(&mut shapes, 0.0, d + c, 0.0, depth);
    wall(&mut shapes, -LOBBY_M, d, 0.0, d);
    wall(&mut shapes, -LOBBY_M, d + c, 0.0, d + c);
    wall(
        &mut shapes,
        -LOBBY_M - WALL_T / 2.0,
        d,
        -LOBBY_M - WALL_T / 2.0,
        d + c,
    );
    for i in 1..n {
        let x = i as f32 * w;
        wall(&mut shapes, x, 0.0, x, d);
        wall(&mut shapes, x, d + c, x, depth);
    }
    // corridor walls with doors at each room's centre
    for y in [d, d + c] {
        let mut x = 0.0;
        for i in 0..n {
            let door = (i as f32 + 0.5) * w;
            wall(&mut shapes, x, y, door - half_door, y);
            x = door + half_door;
        }
        wall(&mut shapes, x, y, length, y);
    }
    ObjectSpec {
        name: "walls".into(),
        description: "the building's walls".into(),
        fixed: true,
        color: WALL_COLOUR,
        shapes,
        ..object_defaults()
    }
}

/// Furniture along the room's back wall, objects on the furniture tops.
#[allow(clippy::too_many_arguments)]
fn furnish(
    recipe: &Recipe,
    cat: &Catalogue,
    colours: &[&String],
    rng: &mut ChaCha8Rng,
    storey: usize,
    kind: &str,
    room: &Layout,
    objects: &mut Vec<ObjectSpec>,
    truth: &mut BuildingTruth,
) {
    let [x0, y0, x1, y1] = room.bounds;
    let options = &cat.rooms[kind];
    let count = rng
        .random_range(recipe.furniture_per_room[0]..=recipe.furniture_per_room[1])
        .max(1);
    let slot = (x1 - x0 - 0.4) / count as f32;
    // (name, top centre, top half extents, top height)
    let mut tops: Vec<(String, [f32; 2], [f32; 2], f32)> = Vec::new();
    for k in 0..count {
        let key = pick(rng, options);
        let f = &cat.furniture[key];
        let material = pick(rng, &f.materials);
        let [mut fx, fy, fz] = f.cuboid;
        fx = fx.min(slot - 0.2);
        // against the back wall, away from the door
        let back_y = if room.door_side > 0.0 {
            y0 + WALL_T + fy / 2.0 + 0.05
        } else {
            y1 - WALL_T - fy / 2.0 - 0.05
        };
        let cx = x0 + 0.2 + slot * (k as f32 + 0.5);
        let name = format!("{key}_{}_{k}", room.id);
        objects.push(ObjectSpec {
            name: name.clone(),
            description: format!("a {material} {}", f.words),
            fixed: true,
            color: [140, 110, 80],
            pose: PoseSpec {
                xyz: [cx, back_y, 0.0],
                ..PoseSpec::default()
            },
            shapes: vec![ShapeSpec {
                cuboid: Some(BoxSpec { size: [fx, fy, fz] }),
                at: PoseSpec {
                    xyz: [0.0, 0.0, fz / 2.0],
                    ..PoseSpec::default()
                },
                ..ShapeSpec::default()
            }],
            ..object_defaults()
        });
        truth.objects.push(ObjectTruth {
            name: name.clone(),
            storey,
            room: room.id.clone(),
            category: key.clone(),
            description: format!("a {material} {}", f.words),
            on: String::new(),
            receptacle: true,
            position: [cx, back_y, fz],
        });
        tops.push((name, [cx, back_y], [fx / 2.0, fy / 2.0], fz));
    }

    let here: Vec<(&String, &CatalogueObject)> = cat
        .objects
        .iter()
        .filter(|(_, o)| o.found_in(kind))
        .collect();
    let wanted = rng.random_range(recipe.objects_per_room[0]..=recipe.objects_per_room[1]);
    // (x, y, footprint radius) of what stands on each top
    let mut placed: Vec<(usize, f32, f32, f32)> = Vec::new();
    let mut made = 0;
    for attempt in 0..wanted * 20 {
        if made == wanted {
            break;
        }
        let (key, o) = here[rng.random_range(0..here.len())];
        let scale = rng.random_range(recipe.size_jitter[0]..=recipe.size_jitter[1]);
        let (radius, _height, shape) = o.shape(scale);
        let t = rng.random_range(0..tops.len());
        let (ref top_name, centre, half, top_z) = tops[t];
        let margin = radius + 0.02;
        if half[0] < margin || half[1] < margin {
            continue;
        }
        let x = centre[0] + rng.random_range(-(half[0] - margin)..=(half[0] - margin));
        let y = centre[1] + rng.random_range(-(half[1] - margin)..=(half[1] - margin));
        if placed
            .iter()
            .any(|&(pt, px, py, pr)| pt == t && (px - x).hypot(py - y) < pr + radius + 0.02)
        {
            continue;
        }
        placed.push((t, x, y, radius));
        let colour = pick(rng, colours);
        let material = pick(rng, &o.materials);
        let size_word = if scale < 0.9 {
            "small "
        } else if scale > 1.15 {
            "large "
        } else {
            ""
        };
        let description = format!("a {size_word}{colour} {material} {}", o.words);
        let name = format!("{key}_{}_{attempt}", room.id);
        objects.push(ObjectSpec {
            name: name.clone(),
            description: description.clone(),
            fixed: false,
            color: cat.colours[*colour],
            pose: PoseSpec {
                xyz: [x, y, top_z],
                rpy: Some([0.0, 0.0, rng.random_range(-3.1..3.1)]),
                ..PoseSpec::default()
            },
            shapes: vec![shape],
            ..object_defaults()
        });
        truth.objects.push(ObjectTruth {
            name,
            storey,
            room: room.id.clone(),
            category: key.clone(),
            description,
            on: top_name.clone(),
            receptacle: false,
            position: [x, y, top_z],
        });
        made += 1;
    }
}

/// Writes `building.yaml`, `storey_<k>.yaml` and `truth.yaml` into `dir`; returns the
/// files written.
pub fn write(building: &Building, dir: &Path) -> Result<Vec<PathBuf>, SimError> {
    let io = |file: &Path, e: &dyn std::fmt::Display| SimError::Io {
        file: file.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, &e))?;
    let mut written = Vec::new();
    let mut put = |name: &str, header: &str, text: Result<String, serde_yaml_ng::Error>| {
        let file = dir.join(name);
        let text = text.map_err(|e| io(&file, &e))?;
        std::fs::write(&file, format!("{header}{text}")).map_err(|e| io(&file, &e))?;
        written.push(file);
        Ok::<(), SimError>(())
    };
    let generated = format!(
        "# generated by `asp world generate` from recipe {} (seed {}); do not edit\n",
        building.index.name, building.index.seed
    );
    put(
        "building.yaml",
        &generated,
        serde_yaml_ng::to_string(&building.index),
    )?;
    for (k, s) in building.storeys.iter().enumerate() {
        put(
            &format!("storey_{k}.yaml"),
            &generated,
            serde_yaml_ng::to_string(s),
        )?;
    }
    put(
        "truth.yaml",
        &format!(
            "{generated}# EVALUATION ONLY: rooms and where every object is. The product never reads this file.\n"
        ),
        serde_yaml_ng::to_string(&building.truth),
    )?;
    Ok(written)
}
