//! RGB-D cameras by ray casting on parry3d shapes.
//!
//! Primary rays are coherent, so instead of walking a BVH per pixel the renderer bins
//! every shape's projected bounding box into 16×16-pixel tiles (a screen-space BVH of
//! depth one), sorts each tile's shapes by their nearest possible depth and stops a
//! pixel's search as soon as the next shape cannot be nearer than the current hit. Rays
//! are cast with a unit optical-axis component, so the time of impact is the z-depth a
//! depth camera reports. Shading: Lambert with one directional light plus ambient.

use std::collections::{BTreeMap, BTreeSet};

use asp_core::image::Image;
use asp_core::models::{GroundTruth, GtInstance, GtPart};
use asp_core::{CameraIntrinsics, FrameId, Isometry3, Point3, Real, RgbdFrame, Transform, Vector3};
use parry3d::query::Ray;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::world::{Object, Prim, World};

const TILE: u32 = 8;
const NEAR: Real = 0.05;
/// Colour where no ray hits anything.
pub const BACKGROUND: [u8; 3] = [200, 210, 225];

/// One shape as the renderer sees it.
#[derive(Debug, Clone)]
pub struct RenderItem {
    pub prim: Prim,
    pub pose: Isometry3,
    pub color: [u8; 3],
    /// Ground-truth instance id, 0 for things that are not objects (floor, robot).
    pub instance: u32,
    /// Ground-truth part id, 0 when the shape is not a part.
    pub part: u32,
}

/// Sensor imperfections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DepthNoise {
    /// Standard deviation at 1 m, metres; grows with depth².
    pub std_at_1m: Real,
    /// Share of pixels without a reading.
    pub dropout: Real,
    /// Readings beyond this are "no reading", metres.
    pub max_range: Real,
}

impl Default for DepthNoise {
    fn default() -> Self {
        Self {
            std_at_1m: 0.0,
            dropout: 0.0,
            max_range: 10.0,
        }
    }
}

/// A camera to render from.
#[derive(Debug, Clone)]
pub struct CameraView {
    pub intrinsics: CameraIntrinsics,
    /// `map → optical frame` (+z forward, +x right, +y down).
    pub pose: Isometry3,
    pub frame: FrameId,
}

/// The scene's shapes: the world's objects (with ids) and the floor.
pub fn world_items(world: &World) -> Vec<RenderItem> {
    let mut items = Vec::new();
    for (oi, o) in world.objects.iter().enumerate() {
        push_object(&mut items, oi, o);
    }
    if let Some(f) = &world.floor {
        items.push(RenderItem {
            prim: Prim::Cuboid(parry3d::shape::Cuboid::new(Vector3::new(
                f.size[0] / 2.0,
                f.size[1] / 2.0,
                0.005,
            ))),
            pose: Isometry3::translation(f.center[0], f.center[1], -0.005),
            color: f.color,
            instance: 0,
            part: 0,
        });
    }
    items
}

fn push_object(items: &mut Vec<RenderItem>, oi: usize, o: &Object) {
    for g in &o.geoms {
        items.push(RenderItem {
            prim: g.prim.clone(),
            pose: o.geom_pose(g),
            color: g.color,
            instance: Object::instance_id(oi),
            part: g.part.map_or(0, |p| o.parts[p].gid),
        });
    }
}

struct Binned {
    item: usize,
    min_depth: Real,
}

/// An item's world bounding box, for a slab test before the exact ray cast.
#[derive(Clone, Copy)]
struct Slab {
    mins: [Real; 3],
    maxs: [Real; 3],
}

impl Slab {
    /// Whether the ray `origin + t·dir` (`inv` = 1/dir) meets the box for t < `max_t`.
    #[inline]
    fn hit(&self, origin: &[Real; 3], inv: &[Real; 3], max_t: Real) -> bool {
        let mut t0: Real = 0.0;
        let mut t1 = max_t;
        for k in 0..3 {
            let a = (self.mins[k] - origin[k]) * inv[k];
            let b = (self.maxs[k] - origin[k]) * inv[k];
            let (lo, hi) = if a < b { (a, b) } else { (b, a) };
            // NaN (0·∞ on a face) falls through as "no constraint"
            if lo > t0 {
                t0 = lo;
            }
            if hi < t1 {
                t1 = hi;
            }
            if t0 > t1 {
                return false;
            }
        }
        true
    }
}

/// Renders one frame. `seed` drives the noise and dropout of this frame only.
pub fn render(
    world: &World,
    items: &[RenderItem],
    view: &CameraView,
    noise: &DepthNoise,
    light_brightness: Real,
    stamp: f64,
    seed: u64,
) -> RgbdFrame {
    let k = view.intrinsics;
    let (w, h) = (k.width, k.height);
    let cam_from_map = view.pose.inverse();
    let (tx, ty) = (w.div_ceil(TILE), h.div_ceil(TILE));
    let mut tiles: Vec<Vec<Binned>> = (0..tx * ty).map(|_| Vec::new()).collect();
    let mut slabs = Vec::with_capacity(items.len());

    for (i, it) in items.iter().enumerate() {
        let aabb = it.prim.aabb(&it.pose);
        slabs.push(Slab {
            mins: [aabb.mins.x - 1e-4, aabb.mins.y - 1e-4, aabb.mins.z - 1e-4],
            maxs: [aabb.maxs.x + 1e-4, aabb.maxs.y + 1e-4, aabb.maxs.z + 1e-4],
        });
        let mut min_z = Real::INFINITY;
        let mut max_z = Real::NEG_INFINITY;
        let (mut u0, mut v0, mut u1, mut v1) = (
            Real::INFINITY,
            Real::INFINITY,
            Real::NEG_INFINITY,
            Real::NEG_INFINITY,
        );
        let mut straddles = false;
        for c in aabb.vertices() {
            let p = cam_from_map * c;
            min_z = min_z.min(p.z);
            max_z = max_z.max(p.z);
            if p.z < NEAR {
                straddles = true;
                continue;
            }
            let (u, v) = (k.fx * p.x / p.z + k.cx, k.fy * p.y / p.z + k.cy);
            u0 = u0.min(u);
            v0 = v0.min(v);
            u1 = u1.max(u);
            v1 = v1.max(v);
        }
        if max_z < NEAR || min_z > noise.max_range {
            continue;
        }
        let (tx0, ty0, tx1, ty1) = if straddles {
            (0, 0, tx, ty)
        } else {
            if u1 < 0.0 || v1 < 0.0 || u0 >= w as Real || v0 >= h as Real {
                continue;
            }
            let clampx = |u: Real| (u.max(0.0) as u32 / TILE).min(tx - 1);
            let clampy = |v: Real| (v.max(0.0) as u32 / TILE).min(ty - 1);
            (clampx(u0), clampy(v0), clampx(u1) + 1, clampy(v1) + 1)
        };
        for ty_ in ty0..ty1 {
            for tx_ in tx0..tx1 {
                tiles[(ty_ * tx + tx_) as usize].push(Binned {
                    item: i,
                    min_depth: min_z.max(0.0),
                });
            }
        }
    }
    for t in &mut tiles {
        t.sort_by(|a, b| a.min_depth.total_cmp(&b.min_depth));
    }

    let n = (w * h) as usize;
    let mut rgb = vec![BACKGROUND; n];
    let mut depth = vec![0.0f32; n];
    let mut inst = vec![0u32; n];
    let mut part = vec![0u32; n];
    let origin = Point3::from(view.pose.translation.vector);
    let rot = view.pose.rotation;
    let to_light = world.light.to_light.into_inner();
    let ambient = world.light.ambient;

    for tyi in 0..ty {
        for txi in 0..tx {
            let list = &tiles[(tyi * tx + txi) as usize];
            if list.is_empty() {
                continue;
            }
            for y in tyi * TILE..((tyi + 1) * TILE).min(h) {
                for x in txi * TILE..((txi + 1) * TILE).min(w) {
                    let dir_cam = Vector3::new(
                        (x as Real + 0.5 - k.cx) / k.fx,
                        (y as Real + 0.5 - k.cy) / k.fy,
                        1.0,
                    );
                    let ray = Ray::new(origin, rot * dir_cam);
                    let o = [origin.x, origin.y, origin.z];
                    let inv = [1.0 / ray.dir.x, 1.0 / ray.dir.y, 1.0 / ray.dir.z];
                    let mut best = noise.max_range;
                    let mut hit: Option<usize> = None;
                    for b in list {
                        if b.min_depth >= best {
                            break;
                        }
                        if !slabs[b.item].hit(&o, &inv, best) {
                            continue;
                        }
                        let it = &items[b.item];
                        if let Some(t) = it.prim.ray_toi(&it.pose, &ray, best)
                            && t >= NEAR
                            && t < best
                        {
                            best = t;
                            hit = Some(b.item);
                        }
                    }
                    let Some(hi) = hit else { continue };
                    let it = &items[hi];
                    let normal = it
                        .prim
                        .cast_ray(&it.pose, &ray, best + 1e-3)
                        .map_or(-ray.dir.normalize(), |(_, n)| n);
                    let normal = if normal.dot(&ray.dir) > 0.0 {
                        -normal
                    } else {
                        normal
                    };
                    let lambert = normal.dot(&to_light).max(0.0);
                    let shade = (ambient + (1.0 - ambient) * lambert) * light_brightness;
                    let i = (y * w + x) as usize;
                    rgb[i] = it
                        .color
                        .map(|c| (c as Real * shade).round().clamp(0.0, 255.0) as u8);
                    depth[i] = best;
                    inst[i] = it.instance;
                    part[i] = it.part;
                }
            }
        }
    }

    if noise.std_at_1m > 0.0 || noise.dropout > 0.0 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for d in depth.iter_mut().filter(|d| **d > 0.0) {
            if noise.dropout > 0.0 && rng.random::<f32>() < noise.dropout {
                *d = 0.0;
                continue;
            }
            if noise.std_at_1m > 0.0 {
                *d = (*d + gaussian(&mut rng) * noise.std_at_1m * *d * *d).max(0.0);
            }
        }
    }

    let ground_truth = legend(world, &inst, &part, w, h);
    RgbdFrame {
        rgb: Image::from_vec(w, h, rgb).unwrap_or_else(|_| Image::filled(w, h, BACKGROUND)),
        depth: Image::from_vec(w, h, depth).unwrap_or_else(|_| Image::filled(w, h, 0.0)),
        intrinsics: k,
        camera_pose: Transform::new(FrameId::map(), view.frame.clone(), view.pose),
        stamp,
        ground_truth: Some(ground_truth),
    }
}

/// A standard normal sample (Box–Muller on two uniform draws).
fn gaussian(rng: &mut ChaCha8Rng) -> Real {
    let u1: f32 = rng.random::<f32>().max(1e-12);
    let u2: f32 = rng.random::<f32>();
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

fn legend(world: &World, inst: &[u32], part: &[u32], w: u32, h: u32) -> GroundTruth {
    let seen_i: BTreeSet<u32> = inst.iter().copied().filter(|&i| i > 0).collect();
    let seen_p: BTreeSet<u32> = part.iter().copied().filter(|&p| p > 0).collect();
    let mut instances = BTreeMap::new();
    let mut parts = BTreeMap::new();
    for (oi, o) in world.objects.iter().enumerate() {
        let id = Object::instance_id(oi);
        if seen_i.contains(&id) {
            instances.insert(
                id,
                GtInstance {
                    id,
                    name: o.name.clone(),
                    description: o.description.clone(),
                    fixed: o.fixed,
                },
            );
        }
        for p in &o.parts {
            if seen_p.contains(&p.gid) {
                parts.insert(
                    p.gid,
                    GtPart {
                        id: p.gid,
                        instance: id,
                        name: p.name.clone(),
                        skills: p.skills.clone(),
                        presses: p.presses,
                    },
                );
            }
        }
    }
    GroundTruth {
        instance_ids: Image::from_vec(w, h, inst.to_vec())
            .unwrap_or_else(|_| Image::filled(w, h, 0)),
        part_ids: Image::from_vec(w, h, part.to_vec()).unwrap_or_else(|_| Image::filled(w, h, 0)),
        instances,
        parts,
    }
}

/// The optical-frame pose of a camera at `eye` looking at `target` with the image's up
/// direction as close to +z (map) as possible.
pub fn look_at(eye: Point3, target: Point3) -> Isometry3 {
    let z = (target - eye).normalize();
    let up = Vector3::z();
    let x = {
        let c = z.cross(&up);
        if c.norm() < 1e-6 {
            Vector3::x()
        } else {
            c.normalize()
        }
    };
    let y = z.cross(&x);
    let m = nalgebra::Matrix3::from_columns(&[x, y, z]);
    let rot = nalgebra::UnitQuaternion::from_matrix(&m);
    Isometry3::from_parts(nalgebra::Translation3::from(eye.coords), rot)
}
