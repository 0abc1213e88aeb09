//! Map quality and throughput on simulator keyframes: what `asp bench map` reports.
//!
//! [`map_quality`] renders posed RGB-D keyframes of an [`asp_sim`] world with the
//! simulator's ray-cast camera, builds the ObjectMap from them with the SIMULATED
//! segmenter and image embedder (the real text embedder the caller passes, applied to the
//! objects' descriptions), and scores the map against the simulator's ground truth with
//! [`asp_perception::eval`]: precision is the share of map objects matching a ground-truth object
//! (voxel IoU ≥ `iou_threshold`, one-to-one), recall the share of ground-truth objects
//! (instances seen with at least `crops.min_segment_area` pixels) that a map object
//! matches.
//!
//! It also times the map builder: [`MapBuilder::integrate`] per keyframe (everything the
//! builder does after the models: back-projection, filters, merging, crops), repeated
//! `timing_rounds` times into a fresh map, on this one thread, by the thread's CPU clock
//! and by the wall clock. Model inference ([`MapBuilder::detect`]) and rendering are
//! timed separately and are not part of the frames-per-second figure.
//!
//! Keyframe poses come from a [`ViewPlan`]: a sweep along a row of objects (the tabletop
//! world's table) by a camera at the robot head camera's height, or explicit eye/target
//! pairs for other worlds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use asp_config::ObjectMapConfig;
use asp_config::sections::sim::SimCameraConfig;
use asp_core::geometry::{Point3, Real};
use asp_core::models::TextEmbedder;
use asp_core::{CameraIntrinsics, FrameId, RgbdFrame};
use asp_sim::World;
use asp_sim::render::{CameraView, DepthNoise, look_at, render, world_items};
use serde::{Deserialize, Serialize};

use asp_perception::PerceptionError;
use asp_perception::builder::{KeyframeDetections, MapBuilder};
use asp_perception::eval::{Match, ground_truth_objects, score_map};
use asp_perception::simulated::{SimulatedImageEmbedder, SimulatedSegmenter};

/// The simulated RGB-D camera.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CameraSpec {
    pub width: u32,
    pub height: u32,
    /// Horizontal field of view, degrees.
    pub hfov_deg: Real,
    /// Depth noise standard deviation at 1 m, metres (grows with depth²).
    pub depth_noise_std: Real,
    /// Share of depth pixels without a reading.
    pub depth_dropout: Real,
    /// Readings beyond this are "no reading", metres.
    pub max_range: Real,
}

impl Default for CameraSpec {
    /// 640×480, 69° (RealSense D435 colour), 2 mm depth noise at 1 m, no dropout.
    fn default() -> Self {
        Self {
            width: 640,
            height: 480,
            hfov_deg: 69.0,
            depth_noise_std: 0.002,
            depth_dropout: 0.0,
            max_range: 10.0,
        }
    }
}

impl From<&SimCameraConfig> for CameraSpec {
    /// The sim node's camera (`sim_node.camera`).
    fn from(c: &SimCameraConfig) -> Self {
        Self {
            width: c.width,
            height: c.height,
            hfov_deg: c.hfov_deg,
            depth_noise_std: c.depth_noise_std,
            depth_dropout: c.depth_dropout,
            max_range: c.max_range,
        }
    }
}

/// One keyframe's camera: where it is and what it looks at (map frame, metres).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct View {
    pub eye: [Real; 3],
    pub target: [Real; 3],
}

/// Where the keyframes are taken from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewPlan {
    /// A sweep along a row of objects, as a robot driving along a table would see it.
    /// The row is the span of the centres of the world's objects whose horizontal extent
    /// is at most `max_object_extent` (furniture such as a 5 m table or walls does not
    /// steer it); the camera moves along the row's longer horizontal axis, `standoff`
    /// metres outside the row on the side of the world origin (where the robot starts),
    /// at `eye_height`, one keyframe every at most `spacing` metres, each looking at the
    /// row's centre line at the median height of those objects' centres.
    Sweep {
        standoff: Real,
        eye_height: Real,
        spacing: Real,
        max_object_extent: Real,
    },
    /// Explicit views.
    Views(Vec<View>),
}

impl Default for ViewPlan {
    /// The tabletop sweep: 0.45 m outside the row (the robot's base stands about there),
    /// 1.37 m high (the head camera), a keyframe every 0.4 m.
    fn default() -> Self {
        ViewPlan::Sweep {
            standoff: 0.45,
            eye_height: 1.37,
            spacing: 0.4,
            max_object_extent: 1.5,
        }
    }
}

/// Settings of one [`map_quality`] run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapQualityConfig {
    /// The map builder's settings (`object_map_node`), simulated model errors included.
    pub object_map: ObjectMapConfig,
    pub camera: CameraSpec,
    pub views: ViewPlan,
    /// Seeds the depth noise of keyframe i with `seed + i`.
    pub seed: u64,
    /// Voxel edge of the ground-truth comparison, metres.
    pub eval_voxel: Real,
    /// Voxel IoU at which a map object matches a ground-truth object.
    pub iou_threshold: Real,
    /// How many times the keyframes are integrated (each into a fresh map) for the
    /// timing; the first round's map is the one scored. At least 1.
    pub timing_rounds: usize,
}

impl Default for MapQualityConfig {
    fn default() -> Self {
        Self {
            object_map: ObjectMapConfig::default(),
            camera: CameraSpec::default(),
            views: ViewPlan::default(),
            seed: 0,
            eval_voxel: 0.02,
            iou_threshold: 0.5,
            timing_rounds: 5,
        }
    }
}

impl MapQualityConfig {
    /// The object map and camera settings of a loaded configuration
    /// (`object_map_node`, `sim_node.camera`, `sim_node.seed`), other settings default.
    pub fn from_config(cfg: &asp_config::AspConfig) -> Self {
        Self {
            object_map: cfg.object_map_node.clone(),
            camera: CameraSpec::from(&cfg.sim_node.camera),
            seed: cfg.sim_node.seed,
            ..Self::default()
        }
    }
}

/// A ground-truth object and how well the map recovered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectOutcome {
    /// The world's name for it.
    pub name: String,
    /// The map object it matched, if any, and the voxel IoU.
    pub matched: Option<Match>,
}

/// What [`map_quality`] measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapQualityReport {
    pub world: String,
    pub keyframes: usize,
    pub width: u32,
    pub height: u32,
    /// Objects in the built map.
    pub objects: usize,
    /// Ground-truth objects seen in the keyframes.
    pub gt_objects: usize,
    pub precision: Real,
    pub recall: Real,
    /// Every ground-truth object, matched or missed, in instance order.
    pub per_object: Vec<ObjectOutcome>,
    /// Map objects that match no ground-truth object (e.g. pieces of a split object).
    pub unmatched_objects: usize,
    /// Map builder throughput excluding model inference, one thread: keyframes per
    /// second of thread CPU time.
    pub fps: f64,
    /// Mean thread CPU time of `MapBuilder::integrate` per keyframe, ms.
    pub integrate_cpu_ms: f64,
    /// Mean wall-clock time of the same, ms (includes waiting for a core under load).
    pub integrate_wall_ms: f64,
    /// Mean wall-clock time of the simulated models per keyframe (`detect`), ms.
    pub detect_ms: f64,
    /// Mean wall-clock time to render a keyframe, ms.
    pub render_ms: f64,
    /// Keyframes integrated for the timing (`timing_rounds` × keyframes).
    pub timed_keyframes: usize,
}

impl MapQualityReport {
    /// A few lines for a terminal.
    pub fn summary(&self) -> String {
        let missed: Vec<&str> = self
            .per_object
            .iter()
            .filter(|o| o.matched.is_none())
            .map(|o| o.name.as_str())
            .collect();
        format!(
            "world {}: {} keyframes of {}×{}\n\
             objects {} / ground truth {}: precision {:.2}, recall {:.2}{}\n\
             map builder (excluding model inference, one thread): {:.1} frames/s \
             ({:.2} ms/frame CPU, {:.2} ms/frame wall, {} keyframes timed)\n\
             simulated models {:.1} ms/frame, rendering {:.1} ms/frame (not in the above)",
            self.world,
            self.keyframes,
            self.width,
            self.height,
            self.objects,
            self.gt_objects,
            self.precision,
            self.recall,
            if missed.is_empty() {
                String::new()
            } else {
                format!(" (missed: {})", missed.join(", "))
            },
            self.fps,
            self.integrate_cpu_ms,
            self.integrate_wall_ms,
            self.timed_keyframes,
            self.detect_ms,
            self.render_ms,
        )
    }
}

fn bad(key: &str, problem: impl Into<String>) -> PerceptionError {
    PerceptionError::Config {
        key: format!("bench.map.{key}"),
        problem: problem.into(),
    }
}

/// The keyframe camera poses (`map → optical frame`) of `plan` in `world`.
pub fn plan_views(world: &World, plan: &ViewPlan) -> Result<Vec<View>, PerceptionError> {
    let (standoff, eye_height, spacing, max_extent) = match plan {
        ViewPlan::Views(v) if v.is_empty() => return Err(bad("views", "no views given")),
        ViewPlan::Views(v) => return Ok(v.clone()),
        ViewPlan::Sweep {
            standoff,
            eye_height,
            spacing,
            max_object_extent,
        } => (*standoff, *eye_height, *spacing, *max_object_extent),
    };
    if !(spacing.is_finite() && spacing > 0.0) {
        return Err(bad("spacing", format!("must be > 0 m, got {spacing}")));
    }
    let centres: Vec<Point3> = world
        .objects
        .iter()
        .filter(|o| {
            let b = o.aabb();
            (b.maxs.x - b.mins.x).max(b.maxs.y - b.mins.y) <= max_extent
        })
        .map(|o| o.centroid())
        .collect();
    if centres.is_empty() {
        return Err(bad(
            "views",
            format!(
                "world {} has no object at most {max_extent} m across to sweep along",
                world.name
            ),
        ));
    }
    let span = |a: usize| {
        centres
            .iter()
            .fold((Real::INFINITY, Real::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(p[a]), hi.max(p[a]))
            })
    };
    let (sx, sy) = (span(0), span(1));
    // the row runs along the longer axis; the camera stands off along the other one
    let (along, across) = if sy.1 - sy.0 >= sx.1 - sx.0 {
        (1, 0)
    } else {
        (0, 1)
    };
    let (a_lo, a_hi) = if along == 1 { sy } else { sx };
    let (c_lo, c_hi) = if across == 1 { sy } else { sx };
    // on the side of the origin (where the robot starts), the low side when inside
    let (eye_c, target_c) = if c_hi < 0.0 {
        (c_hi + standoff, (c_lo + c_hi) / 2.0)
    } else {
        (c_lo - standoff, (c_lo + c_hi) / 2.0)
    };
    let mut heights: Vec<Real> = centres.iter().map(|p| p.z).collect();
    heights.sort_by(Real::total_cmp);
    let target_z = heights[heights.len() / 2];
    let steps = ((a_hi - a_lo) / spacing).ceil().max(0.0) as usize;
    Ok((0..=steps)
        .map(|i| {
            let a = if steps == 0 {
                a_lo
            } else {
                a_lo + (a_hi - a_lo) * i as Real / steps as Real
            };
            let at = |along_v: Real, across_v: Real, z: Real| {
                let mut p = [0.0; 3];
                p[along] = along_v;
                p[across] = across_v;
                p[2] = z;
                p
            };
            View {
                eye: at(a, eye_c, eye_height),
                target: at(a, target_c, target_z),
            }
        })
        .collect())
}

/// Renders the keyframes of `cfg` in `world`, with ground truth. Keyframe i's stamp is
/// `i` seconds and its depth noise is seeded with `cfg.seed + i`.
pub fn render_keyframes(
    world: &World,
    cfg: &MapQualityConfig,
) -> Result<Vec<RgbdFrame>, PerceptionError> {
    let c = &cfg.camera;
    if c.width == 0 || c.height == 0 {
        return Err(bad(
            "camera",
            format!("image size {}×{} is empty", c.width, c.height),
        ));
    }
    if !(c.hfov_deg > 0.0 && c.hfov_deg < 180.0) {
        return Err(bad(
            "camera.hfov_deg",
            format!("must be in (0, 180), got {}", c.hfov_deg),
        ));
    }
    let intrinsics = CameraIntrinsics::from_hfov(c.width, c.height, c.hfov_deg.to_radians());
    let noise = DepthNoise {
        std_at_1m: c.depth_noise_std,
        dropout: c.depth_dropout,
        max_range: c.max_range,
    };
    let items = world_items(world);
    plan_views(world, &cfg.views)?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (eye, target) = (Point3::from(v.eye), Point3::from(v.target));
            if (target - eye).norm() < 1e-6 {
                return Err(bad(
                    "views",
                    format!("view {i} looks from {eye} at the same point"),
                ));
            }
            let view = CameraView {
                intrinsics,
                pose: look_at(eye, target),
                frame: FrameId::new("camera_optical_frame"),
            };
            Ok(render(
                world,
                &items,
                &view,
                &noise,
                1.0,
                i as f64,
                cfg.seed.wrapping_add(i as u64),
            ))
        })
        .collect()
}

/// A map builder on the simulated segmenter and image embedder of `config`.
pub fn simulated_builder(
    config: &ObjectMapConfig,
    text: Arc<dyn TextEmbedder>,
) -> Result<MapBuilder, PerceptionError> {
    MapBuilder::new(
        config,
        FrameId::map(),
        Arc::new(SimulatedSegmenter::new(config.simulation.clone())),
        Arc::new(SimulatedImageEmbedder::new(text, config.simulation.clone())),
    )
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

fn mean_ms(total: Duration, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        total.as_secs_f64() * 1e3 / n as f64
    }
}

/// Builds the map of `world` from simulator keyframes and scores it (see the module
/// docs). `text` is the text embedder behind the simulated image embedder (the
/// configured one: MiniLM on a robot, [`asp_perception::HashingTextEmbedder`] without models).
pub fn map_quality(
    world: &World,
    cfg: &MapQualityConfig,
    text: Arc<dyn TextEmbedder>,
) -> Result<MapQualityReport, PerceptionError> {
    if cfg.timing_rounds == 0 {
        return Err(bad("timing_rounds", "must be at least 1, got 0"));
    }
    let t = Instant::now();
    let frames = render_keyframes(world, cfg)?;
    let render_ms = mean_ms(t.elapsed(), frames.len());

    let mut builder = simulated_builder(&cfg.object_map, text)?;
    let t = Instant::now();
    let detections: Vec<KeyframeDetections> = frames
        .iter()
        .map(|f| builder.detect(f))
        .collect::<Result<_, _>>()?;
    let detect_ms = mean_ms(t.elapsed(), frames.len());

    let (mut cpu, mut wall) = (Duration::ZERO, Duration::ZERO);
    let mut map = None;
    for _ in 0..cfg.timing_rounds {
        builder.reset();
        for (f, d) in frames.iter().zip(&detections) {
            let d = d.clone();
            let (c0, w0) = (thread_cpu(), Instant::now());
            builder.integrate(f, d)?;
            wall += w0.elapsed();
            cpu += thread_cpu().saturating_sub(c0);
        }
        if map.is_none() {
            map = Some(builder.map().clone());
        }
    }
    let map = map.unwrap_or_else(|| builder.map().clone());
    let timed = cfg.timing_rounds * frames.len();

    let om = &cfg.object_map;
    let gt = ground_truth_objects(
        &frames,
        om.depth.min,
        om.depth.max,
        om.crops.min_segment_area,
        cfg.eval_voxel,
    )?;
    let score = score_map(&map, &gt, cfg.eval_voxel, cfg.iou_threshold)?;
    let per_object = gt
        .iter()
        .map(|g| ObjectOutcome {
            name: g.name.clone(),
            matched: score.matches.iter().find(|m| m.gt_id == g.id).cloned(),
        })
        .collect();
    let integrate_cpu_ms = mean_ms(cpu, timed);
    Ok(MapQualityReport {
        world: world.name.clone(),
        keyframes: frames.len(),
        width: cfg.camera.width,
        height: cfg.camera.height,
        objects: score.objects,
        gt_objects: score.gt_objects,
        precision: score.precision,
        recall: score.recall,
        per_object,
        unmatched_objects: score.objects - score.matches.len(),
        fps: if integrate_cpu_ms > 0.0 {
            1e3 / integrate_cpu_ms
        } else {
            0.0
        },
        integrate_cpu_ms,
        integrate_wall_ms: mean_ms(wall, timed),
        detect_ms,
        render_ms,
        timed_keyframes: timed,
    })
}
