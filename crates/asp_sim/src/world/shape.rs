//! Geometric primitives of the simulator and their construction from world-file shapes.
//!
//! Every shape is one parry3d shape; cylinders get an analytic ray test (parry casts rays
//! on cylinders through GJK, which is slow for a camera's 300k rays).

use std::f32::consts::{FRAC_PI_2, PI};
use std::path::Path;
use std::sync::Arc;

use asp_core::{Isometry3, Point3, Real, Vector3};
use nalgebra::{Translation3, UnitQuaternion};
use parry3d::bounding_volume::Aabb;
use parry3d::query::{Ray, RayCast};
use parry3d::shape::{Ball, Capsule, Cuboid, Cylinder, Shape, TriMesh};

use super::spec::{MeshSpec, PoseSpec, ShapeSpec};

/// A convex primitive or a triangle mesh.
#[derive(Debug, Clone)]
pub enum Prim {
    Cuboid(Cuboid),
    /// Along the local y axis, as parry3d builds it.
    Cylinder(Cylinder),
    Ball(Ball),
    Capsule(Capsule),
    Mesh(Arc<TriMesh>),
}

impl Prim {
    pub fn shape(&self) -> &dyn Shape {
        match self {
            Prim::Cuboid(s) => s,
            Prim::Cylinder(s) => s,
            Prim::Ball(s) => s,
            Prim::Capsule(s) => s,
            Prim::Mesh(s) => s.as_ref(),
        }
    }

    pub fn aabb(&self, pose: &Isometry3) -> Aabb {
        self.shape().compute_aabb(pose)
    }

    pub fn local_aabb(&self) -> Aabb {
        self.shape().compute_local_aabb()
    }

    /// First hit of a world-frame ray (solid shapes): time of impact and world normal.
    pub fn cast_ray(&self, pose: &Isometry3, ray: &Ray, max_toi: Real) -> Option<(Real, Vector3)> {
        match self {
            Prim::Cylinder(c) => {
                let local = ray.inverse_transform_by(pose);
                ray_cylinder(c, &local, max_toi).map(|(t, n)| (t, pose.rotation * n))
            }
            Prim::Cuboid(c) => c
                .cast_ray_and_get_normal(pose, ray, max_toi, true)
                .map(|hit| (hit.time_of_impact, hit.normal)),
            Prim::Ball(c) => c
                .cast_ray_and_get_normal(pose, ray, max_toi, true)
                .map(|hit| (hit.time_of_impact, hit.normal)),
            Prim::Capsule(c) => c
                .cast_ray_and_get_normal(pose, ray, max_toi, true)
                .map(|hit| (hit.time_of_impact, hit.normal)),
            Prim::Mesh(m) => m
                .cast_ray_and_get_normal(pose, ray, max_toi, true)
                .map(|hit| (hit.time_of_impact, hit.normal)),
        }
    }

    /// Time of impact only (cheaper when the normal is not needed).
    pub fn ray_toi(&self, pose: &Isometry3, ray: &Ray, max_toi: Real) -> Option<Real> {
        match self {
            Prim::Cylinder(c) => {
                let local = ray.inverse_transform_by(pose);
                ray_cylinder(c, &local, max_toi).map(|(t, _)| t)
            }
            Prim::Cuboid(c) => c.cast_ray(pose, ray, max_toi, true),
            Prim::Ball(c) => c.cast_ray(pose, ray, max_toi, true),
            Prim::Capsule(c) => c.cast_ray(pose, ray, max_toi, true),
            Prim::Mesh(m) => m.cast_ray(pose, ray, max_toi, true),
        }
    }

    /// Distance from a world point to the shape (0 inside).
    pub fn distance(&self, pose: &Isometry3, p: &Point3) -> Real {
        use parry3d::query::PointQuery;
        match self {
            Prim::Cuboid(s) => s.distance_to_point(pose, p, true),
            Prim::Cylinder(s) => s.distance_to_point(pose, p, true),
            Prim::Ball(s) => s.distance_to_point(pose, p, true),
            Prim::Capsule(s) => s.distance_to_point(pose, p, true),
            Prim::Mesh(s) => s.distance_to_point(pose, p, true),
        }
    }

    /// Whether a world point is inside (or on) the shape.
    pub fn contains(&self, pose: &Isometry3, p: &Point3) -> bool {
        use parry3d::query::PointQuery;
        match self {
            Prim::Cuboid(s) => s.contains_point(pose, p),
            Prim::Cylinder(s) => s.contains_point(pose, p),
            Prim::Ball(s) => s.contains_point(pose, p),
            Prim::Capsule(s) => s.contains_point(pose, p),
            Prim::Mesh(s) => s.contains_point(pose, p),
        }
    }
}

/// Analytic ray–cylinder intersection in the cylinder's frame (axis y). Rays starting
/// inside hit at t = 0 like parry's solid casts.
fn ray_cylinder(c: &Cylinder, ray: &Ray, max_toi: Real) -> Option<(Real, Vector3)> {
    let (r, h) = (c.radius, c.half_height);
    let (o, d) = (ray.origin, ray.dir);
    let inside_radial = o.x * o.x + o.z * o.z <= r * r;
    if inside_radial && o.y.abs() <= h {
        return Some((0.0, -d.normalize()));
    }
    let mut best: Option<(Real, Vector3)> = None;
    let mut consider = |t: Real, n: Vector3| {
        if t >= 0.0 && t <= max_toi && best.is_none_or(|(b, _)| t < b) {
            best = Some((t, n));
        }
    };
    // side
    let a = d.x * d.x + d.z * d.z;
    if a > 1e-12 {
        let b = o.x * d.x + o.z * d.z;
        let cc = o.x * o.x + o.z * o.z - r * r;
        let disc = b * b - a * cc;
        if disc >= 0.0 {
            let t = (-b - disc.sqrt()) / a;
            let y = o.y + t * d.y;
            if y.abs() <= h {
                let p = o + d * t;
                consider(t, Vector3::new(p.x, 0.0, p.z) / r);
            }
        }
    }
    // caps
    if d.y.abs() > 1e-12 {
        for (cap, n) in [(h, 1.0), (-h, -1.0)] {
            let t = (cap - o.y) / d.y;
            let p = o + d * t;
            if p.x * p.x + p.z * p.z <= r * r && d.y * n < 0.0 {
                consider(t, Vector3::new(0.0, n, 0.0));
            }
        }
    }
    best
}

/// A pose from the file: position plus roll-pitch-yaw.
pub fn pose_from_spec(p: &PoseSpec) -> Result<Isometry3, String> {
    if p.rpy.is_some() && p.rpy_deg.is_some() {
        return Err("give either `rpy` (radians) or `rpy_deg` (degrees), not both".into());
    }
    let rpy = p
        .rpy
        .or(p.rpy_deg.map(|d| d.map(|a| a.to_radians())))
        .unwrap_or([0.0; 3]);
    if !p.xyz.iter().chain(rpy.iter()).all(|v| v.is_finite()) {
        return Err(format!(
            "pose has a non-finite value: xyz {:?}, rpy {rpy:?}",
            p.xyz
        ));
    }
    Ok(Isometry3::from_parts(
        Translation3::new(p.xyz[0], p.xyz[1], p.xyz[2]),
        UnitQuaternion::from_euler_angles(rpy[0], rpy[1], rpy[2]),
    ))
}

fn positive(what: &str, v: f32) -> Result<f32, String> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!(
            "{what} must be a positive number of metres, got {v}"
        ))
    }
}

/// The primitives a world-file shape expands to, each with its pose in the owner's frame.
pub fn build_shape(spec: &ShapeSpec, base_dir: &Path) -> Result<Vec<(Prim, Isometry3)>, String> {
    let at = pose_from_spec(&spec.at)?;
    let given: Vec<&str> = [
        ("box", spec.cuboid.is_some()),
        ("cylinder", spec.cylinder.is_some()),
        ("sphere", spec.sphere.is_some()),
        ("capsule", spec.capsule.is_some()),
        ("open_box", spec.open_box.is_some()),
        ("open_cylinder", spec.open_cylinder.is_some()),
        ("mesh", spec.mesh.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    if given.len() != 1 {
        return Err(format!(
            "a shape needs exactly one of box, cylinder, sphere, capsule, open_box, open_cylinder, mesh; got {}",
            if given.is_empty() {
                "none".to_owned()
            } else {
                given.join(", ")
            }
        ));
    }
    let y_to_z = UnitQuaternion::from_euler_angles(FRAC_PI_2, 0.0, 0.0);
    let along_z = |t: Isometry3| t * Isometry3::from_parts(Translation3::identity(), y_to_z);
    if let Some(b) = &spec.cuboid {
        let [x, y, z] = b.size;
        let he = Vector3::new(
            positive("box size x", x)? / 2.0,
            positive("box size y", y)? / 2.0,
            positive("box size z", z)? / 2.0,
        );
        return Ok(vec![(Prim::Cuboid(Cuboid::new(he)), at)]);
    }
    if let Some(c) = &spec.cylinder {
        let r = positive("cylinder radius", c.radius)?;
        let h = positive("cylinder height", c.height)?;
        return Ok(vec![(
            Prim::Cylinder(Cylinder::new(h / 2.0, r)),
            along_z(at),
        )]);
    }
    if let Some(s) = &spec.sphere {
        return Ok(vec![(
            Prim::Ball(Ball::new(positive("sphere radius", s.radius)?)),
            at,
        )]);
    }
    if let Some(c) = &spec.capsule {
        let r = positive("capsule radius", c.radius)?;
        let h = positive("capsule height", c.height)?;
        return Ok(vec![(
            Prim::Capsule(Capsule::new_y(h / 2.0, r)),
            along_z(at),
        )]);
    }
    if let Some(b) = &spec.open_box {
        let [sx, sy, sz] = b.size;
        positive("open_box size x", sx)?;
        positive("open_box size y", sy)?;
        positive("open_box size z", sz)?;
        let w = positive("open_box wall", b.wall)?;
        if 2.0 * w >= sx.min(sy) || w >= sz {
            return Err(format!(
                "open_box wall {w} is too thick for size {:?}",
                b.size
            ));
        }
        let boxed = |hx: f32, hy: f32, hz: f32, x: f32, y: f32, z: f32| {
            (
                Prim::Cuboid(Cuboid::new(Vector3::new(hx, hy, hz))),
                at * Isometry3::translation(x, y, z),
            )
        };
        return Ok(vec![
            boxed(sx / 2.0, sy / 2.0, w / 2.0, 0.0, 0.0, w / 2.0),
            boxed(
                w / 2.0,
                sy / 2.0,
                sz / 2.0,
                sx / 2.0 - w / 2.0,
                0.0,
                sz / 2.0,
            ),
            boxed(
                w / 2.0,
                sy / 2.0,
                sz / 2.0,
                -sx / 2.0 + w / 2.0,
                0.0,
                sz / 2.0,
            ),
            boxed(
                sx / 2.0 - w,
                w / 2.0,
                sz / 2.0,
                0.0,
                sy / 2.0 - w / 2.0,
                sz / 2.0,
            ),
            boxed(
                sx / 2.0 - w,
                w / 2.0,
                sz / 2.0,
                0.0,
                -sy / 2.0 + w / 2.0,
                sz / 2.0,
            ),
        ]);
    }
    if let Some(c) = &spec.open_cylinder {
        let r = positive("open_cylinder radius", c.radius)?;
        let h = positive("open_cylinder height", c.height)?;
        let w = positive("open_cylinder wall", c.wall)?;
        if w >= r || w >= h {
            return Err(format!(
                "open_cylinder wall {w} is too thick for radius {r} and height {h}"
            ));
        }
        if c.segments < 3 {
            return Err(format!(
                "open_cylinder needs at least 3 segments, got {}",
                c.segments
            ));
        }
        let n = c.segments as f32;
        let mut out = vec![(
            Prim::Cylinder(Cylinder::new(w / 2.0, r)),
            along_z(at * Isometry3::translation(0.0, 0.0, w / 2.0)),
        )];
        // segments touch at their inner corners: half-width r·tan(π/n)
        let half_width = r * (PI / n).tan();
        for i in 0..c.segments {
            let a = 2.0 * PI * i as f32 / n;
            let centre = r - w / 2.0;
            let seg = Isometry3::from_parts(
                Translation3::new(centre * a.cos(), centre * a.sin(), h / 2.0),
                UnitQuaternion::from_euler_angles(0.0, 0.0, a),
            );
            out.push((
                Prim::Cuboid(Cuboid::new(Vector3::new(w / 2.0, half_width, h / 2.0))),
                at * seg,
            ));
        }
        return Ok(out);
    }
    if let Some(m) = &spec.mesh {
        return Ok(vec![(Prim::Mesh(Arc::new(build_mesh(m, base_dir)?)), at)]);
    }
    Err("a shape needs exactly one kind".into())
}

fn build_mesh(m: &MeshSpec, base_dir: &Path) -> Result<TriMesh, String> {
    let scale = positive("mesh scale", m.scale)?;
    let (vertices, triangles) = match (&m.file, &m.vertices, &m.triangles) {
        (Some(file), None, None) => {
            let path = base_dir.join(file);
            let (models, _) = tobj::load_obj(
                &path,
                &tobj::LoadOptions {
                    triangulate: true,
                    single_index: true,
                    ..Default::default()
                },
            )
            .map_err(|e| format!("mesh file {}: {e}", path.display()))?;
            let mut vertices = Vec::new();
            let mut triangles = Vec::new();
            for model in models {
                let base = vertices.len() as u32;
                vertices.extend(
                    model
                        .mesh
                        .positions
                        .chunks_exact(3)
                        .map(|p| [p[0], p[1], p[2]]),
                );
                triangles.extend(
                    model
                        .mesh
                        .indices
                        .chunks_exact(3)
                        .map(|t| [base + t[0], base + t[1], base + t[2]]),
                );
            }
            if triangles.is_empty() {
                return Err(format!("mesh file {} has no triangles", path.display()));
            }
            (vertices, triangles)
        }
        (None, Some(v), Some(t)) => (v.clone(), t.clone()),
        _ => {
            return Err("a mesh needs either `file` or both `vertices` and `triangles`".to_owned());
        }
    };
    if let Some(bad) = triangles
        .iter()
        .flatten()
        .find(|&&i| i as usize >= vertices.len())
    {
        return Err(format!(
            "mesh triangle index {bad} is out of range ({} vertices)",
            vertices.len()
        ));
    }
    if vertices.iter().flatten().any(|v| !v.is_finite()) {
        return Err("mesh has a non-finite vertex".into());
    }
    let points = vertices
        .iter()
        .map(|v| Point3::new(v[0] * scale, v[1] * scale, v[2] * scale))
        .collect();
    TriMesh::new(points, triangles).map_err(|e| format!("invalid mesh: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn analytic_cylinder_matches_parry() {
        let c = Cylinder::new(0.1, 0.05);
        let pose = Isometry3::new(Vector3::new(0.3, -0.2, 0.5), Vector3::new(0.4, 0.1, -0.3));
        let prim = Prim::Cylinder(c);
        let mut hits = 0;
        for i in 0..200 {
            let a = i as f32 * 0.1;
            let origin = Point3::new(0.3 + a.cos(), -0.2 + a.sin(), 0.5 + (a * 0.7).sin() * 0.3);
            let target = Point3::new(0.3 + 0.04 * (a * 3.1).sin(), -0.2, 0.5 + 0.1 * a.cos());
            let ray = Ray::new(origin, (target - origin).normalize());
            let ours = prim.cast_ray(&pose, &ray, 10.0);
            let theirs = c.cast_ray_and_get_normal(&pose, &ray, 10.0, true);
            match (ours, theirs) {
                (Some((t, n)), Some(h)) => {
                    hits += 1;
                    // parry's GJK ray cast is approximate (mm); ours must be exact: just
                    // before the hit the ray is outside the solid, just after it inside
                    assert_relative_eq!(t, h.time_of_impact, epsilon = 5e-3);
                    // our normal points out of the solid at the hit
                    let p = ray.point_at(t);
                    assert!(!prim.contains(&pose, &(p + n * 1e-3)), "ray {i}");
                    assert!(prim.contains(&pose, &(p - n * 1e-3)), "ray {i}");
                    assert!(!prim.contains(&pose, &ray.point_at(t - 1e-4)), "ray {i}");
                    assert!(prim.contains(&pose, &ray.point_at(t + 1e-4)), "ray {i}");
                }
                (None, None) => {}
                (a, b) => panic!("ray {i}: ours {a:?}, parry {b:?}"),
            }
        }
        assert!(hits > 50, "only {hits} rays hit");
    }

    #[test]
    fn shapes_need_exactly_one_kind() {
        let none = ShapeSpec::default();
        let e = build_shape(&none, Path::new(".")).unwrap_err();
        assert!(e.contains("got none"), "{e}");
        let two = ShapeSpec {
            cuboid: Some(super::super::spec::BoxSpec { size: [1.0; 3] }),
            sphere: Some(super::super::spec::SphereSpec { radius: 1.0 }),
            ..Default::default()
        };
        let e = build_shape(&two, Path::new(".")).unwrap_err();
        assert!(e.contains("box, sphere"), "{e}");
    }

    #[test]
    fn open_cylinder_holds_a_point_inside_its_walls() {
        let spec = ShapeSpec {
            open_cylinder: Some(super::super::spec::OpenCylinderSpec {
                radius: 0.1,
                height: 0.06,
                wall: 0.005,
                segments: 16,
            }),
            ..Default::default()
        };
        let prims = build_shape(&spec, Path::new(".")).unwrap();
        assert_eq!(prims.len(), 17);
        let inside = Point3::new(0.0, 0.0, 0.03);
        assert!(!prims.iter().any(|(p, at)| p.contains(at, &inside)));
        let floor = Point3::new(0.05, 0.0, 0.002);
        assert!(prims.iter().any(|(p, at)| p.contains(at, &floor)));
        let wall = Point3::new(0.0, 0.0975, 0.03);
        assert!(prims.iter().any(|(p, at)| p.contains(at, &wall)));
    }
}
