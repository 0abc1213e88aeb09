//! `asp bench memory`: the building memory's retrieval on generated buildings (issue 16).
//!
//! For each building seed: generate the building, tour it, build the memory from the
//! tour's views only, and retrieve the target and the receptacle of "bring X to Y"
//! instructions. A retrieved view counts for an object when the object is truly in the
//! view (geometry: inside the 60° field of view, within range, no wall between).
//!
//! The tour is a stand-in until the exploration tour records MCAP (issue 16): waypoints
//! on a 3 m grid over the storey's free floor (from the walls and furniture a map would
//! show; no room is known to it), six 60° views each. Each view is described by a
//! stand-in VLM that reads the generated truth with seeded per-view errors: objects
//! missed more often far away and when small, wrong colours, dropped materials, confused
//! categories, hallucinated objects, a room word that is right only 60 % of the time,
//! affordance scores with noise and stray wrong affordances. The visual embedding sees
//! the three nearest objects with noise. Instruction phrasings of the test split are
//! held apart from the dev split's, and the test buildings' seeds from the dev ones.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Instant;

use asp_core::models::TextEmbedder;
use asp_memory::building::{
    Affordance, AffordanceScore, ClusterParams, EmbeddingJudge, Hierarchy, Instance,
    KeywordSummariser, Query, RetrievalParams, View, flat_retrieve, retrieve,
};
use asp_perception::HashingTextEmbedder;
use asp_sim::building::{Building, Catalogue, Recipe, generate};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const RANGE_M: f32 = 6.0;
const HALF_FOV: f32 = std::f32::consts::PI / 6.0;
const CAMERA_HEIGHT_M: f32 = 1.2;
const KS: [usize; 3] = [5, 10, 20];
const DIM: usize = 384;

/// Which instructions and buildings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Dev,
    Test,
}

impl Split {
    fn seeds(self) -> &'static [u64] {
        match self {
            Split::Dev => &[1, 2],
            Split::Test => &[11, 12, 13, 14],
        }
    }
    fn name(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Test => "test",
        }
    }
}

/// One method's hits: per instruction, the rank (0-based) of the first view holding
/// the target and the receptacle, if within the answer.
#[derive(Debug, Default, Clone)]
struct Hits {
    target: Vec<Option<usize>>,
    receptacle: Vec<Option<usize>>,
}

impl Hits {
    fn recall(v: &[Option<usize>], k: usize) -> f64 {
        100.0 * v.iter().filter(|r| r.is_some_and(|r| r < k)).count() as f64 / v.len().max(1) as f64
    }
    fn success(&self, k: usize) -> f64 {
        let both = self
            .target
            .iter()
            .zip(&self.receptacle)
            .filter(|(t, r)| t.is_some_and(|t| t < k) && r.is_some_and(|r| r < k))
            .count();
        100.0 * both as f64 / self.target.len().max(1) as f64
    }
}

/// A view with what it truly shows.
struct TourView {
    view: View,
    shows: HashSet<usize>,
}

struct Wall {
    min: [f32; 2],
    max: [f32; 2],
}

/// Does the segment a→b cross the box (slab test)?
fn crosses(a: [f32; 2], b: [f32; 2], w: &Wall) -> bool {
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    for i in 0..2 {
        let d = b[i] - a[i];
        if d.abs() < 1e-9 {
            if a[i] < w.min[i] || a[i] > w.max[i] {
                return false;
            }
        } else {
            let (mut lo, mut hi) = ((w.min[i] - a[i]) / d, (w.max[i] - a[i]) / d);
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            t0 = t0.max(lo);
            t1 = t1.min(hi);
            if t0 > t1 {
                return false;
            }
        }
    }
    true
}

fn boxes_of(building: &Building, storey: usize, fixed_only_walls: bool) -> Vec<Wall> {
    building.storeys[storey]
        .objects
        .iter()
        .filter(|o| o.fixed && (o.name == "walls") == fixed_only_walls)
        .flat_map(|o| {
            let p = o.pose.xyz;
            o.shapes.iter().filter_map(move |s| {
                let size = s.cuboid.as_ref()?.size;
                let c = [p[0] + s.at.xyz[0], p[1] + s.at.xyz[1]];
                Some(Wall {
                    min: [c[0] - size[0] / 2.0, c[1] - size[1] / 2.0],
                    max: [c[0] + size[0] / 2.0, c[1] + size[1] / 2.0],
                })
            })
        })
        .collect()
}

fn words(kind: &str) -> String {
    kind.replace('_', " ")
}

/// The stand-in tour of one building.
fn tour(
    building: &Building,
    catalogue: &Catalogue,
    embedder: &HashingTextEmbedder,
) -> Vec<TourView> {
    let truth = &building.truth;
    let kinds: Vec<&str> = catalogue.rooms.keys().map(String::as_str).collect();
    let categories: Vec<&String> = catalogue.objects.keys().collect();
    let colours: Vec<&String> = catalogue.colours.keys().collect();
    let mut out = Vec::new();
    for (storey, world) in building.storeys.iter().enumerate() {
        let walls = boxes_of(building, storey, true);
        let furniture = boxes_of(building, storey, false);
        let map = world.map.as_ref().map_or([0.0, 0.0, 10.0, 10.0], |m| {
            [m.origin[0], m.origin[1], m.size[0], m.size[1]]
        });
        let height = building.index.storeys[storey].height_m;
        let here: Vec<usize> = (0..truth.objects.len())
            .filter(|&i| truth.objects[i].storey == storey)
            .collect();
        let mut y = map[1] + 1.5;
        while y < map[1] + map[3] {
            let mut x = map[0] + 1.5;
            while x < map[0] + map[2] {
                let near = |b: &Wall, m: f32| {
                    x > b.min[0] - m && x < b.max[0] + m && y > b.min[1] - m && y < b.max[1] + m
                };
                let free =
                    !walls.iter().any(|w| near(w, 0.4)) && !furniture.iter().any(|f| near(f, 0.3));
                if free {
                    for k in 0..6 {
                        let yaw = k as f32 * std::f32::consts::FRAC_PI_3;
                        let index = out.len();
                        out.push(describe(
                            building,
                            catalogue,
                            embedder,
                            &walls,
                            &here,
                            storey,
                            height,
                            [x, y],
                            yaw,
                            index,
                            &kinds,
                            &categories,
                            &colours,
                        ));
                    }
                }
                x += 3.0;
            }
            y += 3.0;
        }
    }
    out
}

/// One view: what the camera truly shows, and what the stand-in VLM says about it.
#[allow(clippy::too_many_arguments)]
fn describe(
    building: &Building,
    catalogue: &Catalogue,
    embedder: &HashingTextEmbedder,
    walls: &[Wall],
    here: &[usize],
    storey: usize,
    height: f32,
    at: [f32; 2],
    yaw: f32,
    index: usize,
    kinds: &[&str],
    categories: &[&String],
    colours: &[&String],
) -> TourView {
    let truth = &building.truth;
    let mut rng =
        ChaCha8Rng::seed_from_u64(building.index.seed.wrapping_mul(1_000_003) ^ index as u64);
    // (distance, object) truly in view
    let mut seen: Vec<(f32, usize)> = here
        .iter()
        .filter_map(|&i| {
            let p = truth.objects[i].position;
            let (dx, dy) = (p[0] - at[0], p[1] - at[1]);
            let dist = dx.hypot(dy);
            let mut bearing = dy.atan2(dx) - yaw;
            while bearing > std::f32::consts::PI {
                bearing -= std::f32::consts::TAU;
            }
            while bearing < -std::f32::consts::PI {
                bearing += std::f32::consts::TAU;
            }
            let visible = dist > 0.3
                && dist < RANGE_M
                && bearing.abs() < HALF_FOV
                && !walls.iter().any(|w| crosses(at, [p[0], p[1]], w));
            visible.then_some((dist, i))
        })
        .collect();
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    let shows: HashSet<usize> = seen.iter().map(|&(_, i)| i).collect();

    // the room word: right 60 %, wrong 15 %, left out 25 %
    let room_kind = truth
        .rooms
        .iter()
        .find(|r| {
            r.storey == storey
                && at[0] >= r.bounds[0]
                && at[0] <= r.bounds[2]
                && at[1] >= r.bounds[1]
                && at[1] <= r.bounds[3]
        })
        .map_or("corridor", |r| r.kind.as_str());
    let roll: f32 = rng.random();
    let room_word = if roll < 0.6 {
        Some(words(room_kind))
    } else if roll < 0.75 {
        Some(words(kinds[rng.random_range(0..kinds.len())]))
    } else {
        None
    };

    let mut instances = Vec::new();
    let mut phrases = Vec::new();
    for &(dist, i) in &seen {
        let o = &truth.objects[i];
        let small = !o.receptacle
            && catalogue.objects.get(&o.category).is_some_and(|c| {
                c.cuboid.is_some_and(|b| b[0].max(b[1]).max(b[2]) < 0.1)
                    || c.cylinder.is_some_and(|c| c[1] < 0.08)
            });
        let p_detect = (0.95 - 0.07 * dist).clamp(0.3, 0.95) * if small { 0.75 } else { 1.0 };
        if rng.random::<f32>() > p_detect {
            continue;
        }
        let phrase = vlm_phrase(o, catalogue, colours, categories, &mut rng);
        instances.push(instance(
            &phrase,
            o.receptacle,
            &mut rng,
            embedder,
            Some(o.position),
            height,
        ));
        phrases.push(phrase);
    }
    if rng.random::<f32>() < 0.1 {
        let c = categories[rng.random_range(0..categories.len())];
        let phrase = format!(
            "{} {}",
            colours[rng.random_range(0..colours.len())],
            catalogue.objects[c].words
        );
        instances.push(instance(&phrase, false, &mut rng, embedder, None, height));
        phrases.push(phrase);
    }
    let description = match (&room_word, phrases.is_empty()) {
        (Some(r), false) => format!("a {r} with {}", phrases.join(", ")),
        (Some(r), true) => format!("an empty part of a {r}"),
        (None, false) => format!("a room with {}", phrases.join(", ")),
        (None, true) => "a wall and an empty floor".to_owned(),
    };
    // the image embedding sees the nearest three objects, blurred
    let nearest: Vec<String> = seen
        .iter()
        .take(3)
        .map(|&(_, i)| {
            let o = &truth.objects[i];
            o.description.clone()
        })
        .collect();
    let mut visual = embedder
        .embed_text(&format!("{} {}", words(room_kind), nearest.join(" ")))
        .unwrap_or_else(|_| vec![0.0; DIM]);
    let noise: Vec<f32> = (0..visual.len())
        .map(|_| rng.random::<f32>() - 0.5)
        .collect();
    let norm = noise.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    for (v, n) in visual.iter_mut().zip(&noise) {
        *v += 0.6 * n / norm;
    }
    let regional = embedder
        .embed_text(&description)
        .unwrap_or_else(|_| vec![0.0; DIM]);
    TourView {
        view: View {
            source: format!("{}#{index}", building.index.name),
            position: [
                f64::from(at[0]),
                f64::from(at[1]),
                f64::from(height + CAMERA_HEIGHT_M),
            ],
            yaw: f64::from(yaw),
            description,
            regional,
            visual,
            instances,
        },
        shows,
    }
}

/// The colour word of a generated object's description.
fn colour_of(o: &asp_sim::building::ObjectTruth, catalogue: &Catalogue) -> Option<String> {
    catalogue
        .colours
        .keys()
        .find(|k| o.description.split(' ').any(|w| w == k.as_str()))
        .cloned()
}

/// What the stand-in VLM calls an object: its colour (wrong 15 %), material (half the
/// time), category (confused 5 %).
fn vlm_phrase(
    o: &asp_sim::building::ObjectTruth,
    catalogue: &Catalogue,
    colours: &[&String],
    categories: &[&String],
    rng: &mut ChaCha8Rng,
) -> String {
    if o.receptacle {
        let f = &catalogue.furniture[&o.category];
        return if rng.random::<f32>() < 0.5 {
            o.description.trim_start_matches("a ").to_owned()
        } else {
            f.words.clone()
        };
    }
    let c = &catalogue.objects[&o.category];
    let true_colour = colour_of(o, catalogue).unwrap_or_default();
    let colour = if rng.random::<f32>() < 0.85 {
        true_colour
    } else {
        colours[rng.random_range(0..colours.len())].clone()
    };
    let material = c
        .materials
        .iter()
        .find(|m| o.description.contains(m.as_str()))
        .filter(|_| rng.random::<f32>() < 0.5)
        .map(|m| format!("{m} "))
        .unwrap_or_default();
    let noun = if rng.random::<f32>() < 0.05 {
        catalogue.objects[categories[rng.random_range(0..categories.len())]]
            .words
            .clone()
    } else {
        c.words.clone()
    };
    format!("{colour} {material}{noun}")
}

fn instance(
    phrase: &str,
    receptacle: bool,
    rng: &mut ChaCha8Rng,
    embedder: &HashingTextEmbedder,
    position: Option<[f32; 3]>,
    height: f32,
) -> Instance {
    let (main, other) = if receptacle {
        (Affordance::Place, Affordance::Pick)
    } else {
        (Affordance::Pick, Affordance::Place)
    };
    let mut affordances = vec![AffordanceScore {
        affordance: main,
        score: rng.random_range(0.55..=1.0),
    }];
    if rng.random::<f32>() < 0.1 {
        affordances.push(AffordanceScore {
            affordance: other,
            score: rng.random_range(0.0..=0.4),
        });
    }
    Instance {
        description: phrase.to_owned(),
        affordances,
        position: position.map(|p| [f64::from(p[0]), f64::from(p[1]), f64::from(p[2] + height)]),
        embedding: embedder
            .embed_text(phrase)
            .unwrap_or_else(|_| vec![0.0; DIM]),
    }
}

/// "bring X to Y" phrasings; the test split's are not the dev split's.
fn phrase_instruction(split: Split, t: &str, r: &str, rng: &mut ChaCha8Rng) -> String {
    let dev = [
        "bring the {t} to the {r}",
        "take the {t} and put it on the {r}",
        "move the {t} onto the {r}",
        "put the {t} on the {r}",
    ];
    let test = [
        "could you fetch the {t} and leave it on the {r}",
        "I need the {t} on the {r}, please",
        "grab the {t} for me and set it down on the {r}",
        "the {t} belongs on the {r}; take it there",
        "please carry the {t} over to the {r}",
    ];
    let templates: &[&str] = match split {
        Split::Dev => &dev,
        Split::Test => &test,
    };
    templates[rng.random_range(0..templates.len())]
        .replace("{t}", t)
        .replace("{r}", r)
}

/// How a person refers to an object: its colour and noun, sometimes its material and
/// the kind of room it is in.
fn reference(
    o: &asp_sim::building::ObjectTruth,
    catalogue: &Catalogue,
    room_kind: &str,
    rng: &mut ChaCha8Rng,
) -> String {
    let (noun, materials, colour): (&str, &[String], _) = if o.receptacle {
        let f = &catalogue.furniture[&o.category];
        (&f.words, &f.materials, None)
    } else {
        let c = &catalogue.objects[&o.category];
        (&c.words, &c.materials, colour_of(o, catalogue))
    };
    let mut s = String::new();
    if let Some(c) = colour {
        s.push_str(&c);
        s.push(' ');
    }
    if let Some(m) = materials
        .iter()
        .find(|m| o.description.contains(m.as_str()))
        && rng.random::<f32>() < 0.35
    {
        s.push_str(m);
        s.push(' ');
    }
    s.push_str(noun);
    if rng.random::<f32>() < 0.5 {
        s.push_str(&format!(" in the {}", words(room_kind)));
    }
    s
}

/// One method's recalls, percent.
#[derive(Debug, Clone)]
pub struct MethodRow {
    pub method: String,
    /// Target recall@5/10/20.
    pub target: [f64; 3],
    /// Receptacle recall@5/10/20.
    pub receptacle: [f64; 3],
    /// Mean of target and receptacle recall@10.
    pub overall_at_10: f64,
    /// Both found within the top 10.
    pub success_at_10: f64,
}

/// The bench's figures for one split.
#[derive(Debug, Clone)]
pub struct MemoryBenchReport {
    pub split: &'static str,
    pub buildings: usize,
    pub views: usize,
    pub instructions: usize,
    pub rows: Vec<MethodRow>,
    /// Share of views in the majority room of their cluster, at the level whose size is
    /// closest to the number of rooms (and that level's size against the rooms').
    pub room_purity: f64,
    pub floor_accuracy: f64,
    pub build_s: f64,
    pub query_ms_p50: f64,
    /// Clusters per level (4..N) of the first building's memory.
    pub levels: Vec<usize>,
}

/// Runs the bench on `recipe`'s buildings of `split`.
pub fn run(
    recipe_path: &Path,
    split: Split,
    per_building: usize,
) -> Result<MemoryBenchReport, String> {
    let (recipe, catalogue) = Recipe::load(recipe_path).map_err(|e| e.to_string())?;
    let embedder = HashingTextEmbedder::new(DIM);
    let methods: Vec<(&str, Option<RetrievalParams>, bool)> = vec![
        (
            "Affordance RAG (full)",
            Some(RetrievalParams::default()),
            true,
        ),
        ("flat: one image embedding", None, true),
        (
            "w/o regional (α = 0)",
            Some(RetrievalParams {
                alpha: 0.0,
                ..RetrievalParams::default()
            }),
            true,
        ),
        (
            "w/o visual (α = 1)",
            Some(RetrievalParams {
                alpha: 1.0,
                ..RetrievalParams::default()
            }),
            true,
        ),
        ("w/o reranking", Some(RetrievalParams::default()), false),
        (
            "w/o affordance proposals",
            Some(RetrievalParams {
                affordance_proposals: false,
                ..RetrievalParams::default()
            }),
            true,
        ),
    ];
    let mut hits: Vec<Hits> = vec![Hits::default(); methods.len()];
    let (mut views_total, mut purity_num, mut floor_num) = (0usize, 0usize, 0usize);
    let mut build_s = 0.0;
    let mut query_ms = Vec::new();
    let mut levels = Vec::new();
    let seeds = split.seeds();
    for &seed in seeds {
        let mut r = recipe.clone();
        r.seed = seed;
        let building = generate(&r, &catalogue);
        let tour_views = tour(&building, &catalogue, &embedder);
        let (views, shows): (Vec<View>, Vec<HashSet<usize>>) =
            tour_views.into_iter().map(|t| (t.view, t.shows)).unzip();
        let started = Instant::now();
        let memory = Hierarchy::build(
            views,
            &ClusterParams::default(),
            &KeywordSummariser::default(),
            &embedder,
        )
        .map_err(|e| e.to_string())?;
        build_s += started.elapsed().as_secs_f64();
        views_total += memory.views.len();
        if levels.is_empty() {
            levels = memory.levels.iter().map(Vec::len).collect();
        }
        let (p, f) = structure(&memory, &building);
        purity_num += p;
        floor_num += f;

        // instructions: a seen object to a seen piece of furniture in another room
        let seen: HashSet<usize> = shows.iter().flatten().copied().collect();
        let objects = &building.truth.objects;
        let movable: Vec<usize> = (0..objects.len())
            .filter(|i| !objects[*i].receptacle && seen.contains(i))
            .collect();
        let receptacles: Vec<usize> = (0..objects.len())
            .filter(|i| objects[*i].receptacle && seen.contains(i))
            .collect();
        let room_kind: BTreeMap<&str, &str> = building
            .truth
            .rooms
            .iter()
            .map(|r| (r.id.as_str(), r.kind.as_str()))
            .collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1257_7c7d);
        for _ in 0..per_building {
            let t = movable[rng.random_range(0..movable.len())];
            let candidates: Vec<usize> = receptacles
                .iter()
                .copied()
                .filter(|&r| objects[r].room != objects[t].room)
                .collect();
            let r = candidates[rng.random_range(0..candidates.len())];
            let t_ref = reference(
                &objects[t],
                &catalogue,
                room_kind[objects[t].room.as_str()],
                &mut rng,
            );
            let r_ref = reference(
                &objects[r],
                &catalogue,
                room_kind[objects[r].room.as_str()],
                &mut rng,
            );
            let instruction = phrase_instruction(split, &t_ref, &r_ref, &mut rng);
            let t_vec = embedder.embed_text(&t_ref).map_err(|e| e.to_string())?;
            let r_vec = embedder.embed_text(&r_ref).map_err(|e| e.to_string())?;
            for (m, (_, params, rerank)) in methods.iter().enumerate() {
                for (object, vec, affordance, out) in [
                    (t, &t_vec, Affordance::Pick, 0),
                    (r, &r_vec, Affordance::Place, 1),
                ] {
                    let started = Instant::now();
                    let found = match params {
                        Some(p) => retrieve(
                            &memory,
                            &Query {
                                instruction: &instruction,
                                text: vec,
                                visual: vec,
                                affordance: rerank.then_some(affordance),
                                heights: None,
                            },
                            p,
                            &EmbeddingJudge,
                        ),
                        None => flat_retrieve(&memory, vec, 20),
                    };
                    if m == 0 {
                        query_ms.push(started.elapsed().as_secs_f64() * 1e3);
                    }
                    let rank = found
                        .iter()
                        .position(|v| shows[v.view as usize].contains(&object));
                    if out == 0 {
                        hits[m].target.push(rank);
                    } else {
                        hits[m].receptacle.push(rank);
                    }
                }
            }
        }
    }
    query_ms.sort_by(f64::total_cmp);
    let rows = methods
        .iter()
        .zip(&hits)
        .map(|((name, _, _), h)| {
            let t = KS.map(|k| Hits::recall(&h.target, k));
            let r = KS.map(|k| Hits::recall(&h.receptacle, k));
            MethodRow {
                method: (*name).to_owned(),
                target: t,
                receptacle: r,
                overall_at_10: (t[1] + r[1]) / 2.0,
                success_at_10: h.success(10),
            }
        })
        .collect();
    Ok(MemoryBenchReport {
        split: split.name(),
        buildings: seeds.len(),
        views: views_total,
        instructions: hits[0].target.len(),
        rows,
        room_purity: 100.0 * purity_num as f64 / views_total.max(1) as f64,
        floor_accuracy: 100.0 * floor_num as f64 / views_total.max(1) as f64,
        build_s,
        query_ms_p50: query_ms.get(query_ms.len() / 2).copied().unwrap_or(0.0),
        levels,
    })
}

/// Views in the majority room (and storey) of their cluster, at the levels whose sizes
/// are closest to the number of rooms (and storeys); the truth is read here, by the
/// judge, never by the memory.
fn structure(memory: &Hierarchy, building: &Building) -> (usize, usize) {
    let storey = |v: &View| -> usize {
        building
            .index
            .storeys
            .iter()
            .rposition(|s| f64::from(s.height_m) <= v.position[2])
            .unwrap_or(0)
    };
    let room_of = |v: &View| -> String {
        let storey = storey(v);
        building
            .truth
            .rooms
            .iter()
            .find(|r| {
                r.storey == storey
                    && v.position[0] >= f64::from(r.bounds[0])
                    && v.position[0] <= f64::from(r.bounds[2])
                    && v.position[1] >= f64::from(r.bounds[1])
                    && v.position[1] <= f64::from(r.bounds[3])
            })
            .map_or(format!("corridor_{storey}"), |r| r.id.clone())
    };
    let storey_of = |v: &View| -> String { storey(v).to_string() };
    let majority = |target: usize, key: &dyn Fn(&View) -> String| -> usize {
        let Some(level) =
            (0..memory.levels.len()).min_by_key(|&l| memory.levels[l].len().abs_diff(target))
        else {
            return 0;
        };
        (0..memory.levels[level].len())
            .map(|c| {
                let mut counts: BTreeMap<String, usize> = BTreeMap::new();
                for v in memory.views_under(level, c) {
                    *counts.entry(key(&memory.views[v as usize])).or_default() += 1;
                }
                counts.values().copied().max().unwrap_or(0)
            })
            .sum()
    };
    let rooms = building.truth.rooms.len() + building.storeys.len();
    (
        majority(rooms, &room_of),
        majority(building.storeys.len(), &storey_of),
    )
}

impl MemoryBenchReport {
    /// The table `asp bench memory` prints.
    pub fn table(&self) -> String {
        let mut s = format!(
            "building memory, {} split: {} buildings, {} views, {} instructions (hashing embedder, stand-in tour VLM)\n",
            self.split, self.buildings, self.views, self.instructions
        );
        s.push_str(&format!(
            "{:<28} {:>6} {:>6} {:>6}   {:>6} {:>6} {:>6}   {:>8} {:>7}\n",
            "method", "T@5", "T@10", "T@20", "R@5", "R@10", "R@20", "all@10", "SR@10"
        ));
        for row in &self.rows {
            let (t, r) = (row.target, row.receptacle);
            s.push_str(&format!(
                "{:<28} {:>6.1} {:>6.1} {:>6.1}   {:>6.1} {:>6.1} {:>6.1}   {:>8.1} {:>7.1}\n",
                row.method,
                t[0],
                t[1],
                t[2],
                r[0],
                r[1],
                r[2],
                row.overall_at_10,
                row.success_at_10
            ));
        }
        s.push_str(&format!(
            "memory: room purity {:.1} %, storey accuracy {:.1} % (levels 4..N of the first building: {:?}), build {:.2} s for {} views, query p50 {:.2} ms (excluding embedding)\n",
            self.room_purity,
            self.floor_accuracy,
            self.levels,
            self.build_s,
            self.views,
            self.query_ms_p50
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_between_blocks_the_view_and_a_door_does_not() {
        let wall = Wall {
            min: [1.0, -5.0],
            max: [1.1, 5.0],
        };
        assert!(crosses([0.0, 0.0], [2.0, 0.5], &wall));
        assert!(!crosses([0.0, 0.0], [0.9, 3.0], &wall));
        // a wall with a door: two pieces, the sight line passes the gap
        let upper = Wall {
            min: [1.0, 0.5],
            max: [1.1, 5.0],
        };
        let lower = Wall {
            min: [1.0, -5.0],
            max: [1.1, -0.5],
        };
        let through_door = [0.0, 0.0];
        assert!(
            !crosses(through_door, [3.0, 0.1], &upper)
                && !crosses(through_door, [3.0, 0.1], &lower)
        );
    }

    #[test]
    fn the_memory_beats_the_flat_baseline_on_the_dev_buildings() {
        let recipe = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../config/buildings/recipes/three_floors.yaml");
        let report = run(&recipe, Split::Dev, 30).unwrap();
        assert_eq!(report.instructions, 60);
        assert_eq!(report.buildings, 2);
        let overall = |name: &str| {
            report
                .rows
                .iter()
                .find(|r| r.method.starts_with(name))
                .map(|r| r.overall_at_10)
                .unwrap()
        };
        assert!(
            overall("Affordance RAG") > overall("flat"),
            "{}",
            report.table()
        );
        assert!(
            overall("Affordance RAG") > overall("w/o reranking"),
            "{}",
            report.table()
        );
        // storeys never mix: height separates them
        assert!(report.floor_accuracy > 99.0, "{}", report.table());
    }
}
