//! World files → [`World`], with validation that names the file, the entry and the problem.

use std::collections::HashSet;
use std::path::Path;

use asp_core::{Isometry3, Real, Vector3};
use nalgebra::Unit;

use super::shape::{build_shape, pose_from_spec};
use super::spec::{LinkSpec, PartFunctionSpec, PartSpec, ShapeSpec, WorldSpec};
use super::{Floor, Geom, Light, Link, Mount, Object, Part, World};
use crate::error::SimError;
use crate::yaml::{self, entry};

/// Loads and validates a world file.
pub fn load_world(path: impl AsRef<Path>) -> Result<World, SimError> {
    let path = path.as_ref();
    let (spec, _): (WorldSpec, _) = yaml::load_file(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    build_world(&spec, path, dir)
}

/// [`load_world`] with `extra` objects placed in it (a scenario's props), checked as the
/// file's own: names unique, shapes valid.
pub fn load_world_adding(
    path: impl AsRef<Path>,
    extra: &[crate::world::spec::ObjectSpec],
) -> Result<World, SimError> {
    let path = path.as_ref();
    let (mut spec, _): (WorldSpec, _) = yaml::load_file(path)?;
    spec.objects.extend(extra.iter().cloned());
    let dir = path.parent().unwrap_or(Path::new("."));
    build_world(&spec, path, dir)
}

/// Parses and validates world YAML held in memory; `file` names it in errors and its
/// folder resolves mesh paths.
pub fn parse_world(text: &str, file: impl AsRef<Path>) -> Result<World, SimError> {
    let file = file.as_ref();
    let spec: WorldSpec = yaml::parse_str(text, file)?;
    build_world(&spec, file, file.parent().unwrap_or(Path::new(".")))
}

/// Builds a world from a spec made in code (one object shown alone, say); `origin` names
/// it in errors. Mesh paths resolve against the working directory.
pub fn world_from_spec(spec: &WorldSpec, origin: &str) -> Result<World, SimError> {
    build_world(spec, Path::new(origin), Path::new("."))
}

pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 64
}

fn unit(v: [f32; 3], what: &str) -> Result<Unit<Vector3>, String> {
    let v = Vector3::new(v[0], v[1], v[2]);
    if !v.iter().all(|x| x.is_finite()) || v.norm() < 1e-6 {
        return Err(format!(
            "{what} must be a non-zero finite vector, got {v:?}"
        ));
    }
    Ok(Unit::new_normalize(v))
}

struct Builder<'a> {
    file: &'a Path,
    dir: &'a Path,
    next_part: u32,
}

impl Builder<'_> {
    fn err(&self, entry: impl Into<String>, problem: impl Into<String>) -> SimError {
        SimError::invalid(self.file, entry, problem)
    }

    fn shapes(
        &self,
        specs: &[ShapeSpec],
        at: &str,
        link: Option<usize>,
        part: Option<usize>,
        color: [u8; 3],
        out: &mut Vec<Geom>,
    ) -> Result<(), SimError> {
        for (i, s) in specs.iter().enumerate() {
            let prims =
                build_shape(s, self.dir).map_err(|p| self.err(format!("{at}.shapes[{i}]"), p))?;
            for (prim, local) in prims {
                out.push(Geom {
                    prim,
                    local,
                    link,
                    part,
                    color: s.color.unwrap_or(color),
                });
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn part(
        &mut self,
        p: &PartSpec,
        at: &str,
        link: Option<usize>,
        color: [u8; 3],
        parts: &mut Vec<Part>,
        geoms: &mut Vec<Geom>,
    ) -> Result<(), SimError> {
        if p.name.trim().is_empty() {
            return Err(self.err(at, "a part needs a non-empty name"));
        }
        if parts.iter().any(|q| q.name == p.name) {
            return Err(self.err(at, format!("duplicate part name {:?}", p.name)));
        }
        if p.shapes.is_empty() {
            return Err(self.err(at, "a part needs at least one shape"));
        }
        let pressable = matches!(p.function, PartFunctionSpec::Button | PartFunctionSpec::Key);
        let press_axis = match (pressable, p.press_axis) {
            (true, Some(a)) => unit(a, "press_axis").map_err(|e| self.err(at, e))?,
            (true, None) => {
                return Err(self.err(at, "buttons and keys need a `press_axis`"));
            }
            (false, Some(_)) => {
                return Err(self.err(at, "`press_axis` applies to buttons and keys only"));
            }
            (false, None) => Vector3::z_axis(),
        };
        let travel = p.travel.unwrap_or(0.004);
        if !(travel.is_finite() && travel > 0.0 && travel < 0.1) {
            return Err(self.err(
                at,
                format!("`travel` must be in (0, 0.1) metres, got {travel}"),
            ));
        }
        if p.function == PartFunctionSpec::Key && p.symbol.as_deref().is_none_or(str::is_empty) {
            return Err(self.err(at, "a key needs a `symbol`"));
        }
        if p.function == PartFunctionSpec::Handle && link.is_none() {
            return Err(self.err(
                at,
                "a `handle` part must belong to a link (list it under the link's `parts`)",
            ));
        }
        let idx = parts.len();
        self.shapes(
            &p.shapes,
            at,
            link,
            Some(idx),
            p.color.unwrap_or(color),
            geoms,
        )?;
        self.next_part += 1;
        parts.push(Part {
            name: p.name.clone(),
            gid: self.next_part,
            skills: p.skills.clone(),
            function: p.function,
            link,
            press_axis,
            travel,
            symbol: p.symbol.clone(),
            presses: 0,
            pressed_now: false,
        });
        Ok(())
    }

    fn link(&self, l: &LinkSpec, at: &str) -> Result<Link, SimError> {
        let origin = pose_from_spec(&l.origin).map_err(|e| self.err(format!("{at}.origin"), e))?;
        let axis = unit(l.axis, "axis").map_err(|e| self.err(at, e))?;
        let [lower, upper] = l.limits;
        if !(lower.is_finite() && upper.is_finite() && lower < upper) {
            return Err(self.err(
                at,
                format!("limits must be finite with lower < upper, got [{lower}, {upper}]"),
            ));
        }
        if !(lower..=upper).contains(&l.position) {
            return Err(self.err(
                at,
                format!(
                    "position {} is outside the limits [{lower}, {upper}]",
                    l.position
                ),
            ));
        }
        Ok(Link {
            name: l.name.clone(),
            kind: l.joint,
            origin,
            axis,
            lower,
            upper,
            position: l.position,
        })
    }
}

fn build_world(spec: &WorldSpec, file: &Path, dir: &Path) -> Result<World, SimError> {
    let mut b = Builder {
        file,
        dir,
        next_part: 0,
    };
    if spec.name.trim().is_empty() {
        return Err(b.err("name", "the world needs a name"));
    }
    let light_dir =
        unit(spec.light.direction, "light.direction").map_err(|e| b.err("light.direction", e))?;
    if !(0.0..=1.0).contains(&spec.light.ambient) {
        return Err(b.err(
            "light.ambient",
            format!("must be in [0, 1], got {}", spec.light.ambient),
        ));
    }
    let floor = match &spec.floor {
        Some(f) => {
            if !f.size.iter().all(|s| s.is_finite() && *s > 0.0) {
                return Err(b.err("floor.size", format!("must be positive, got {:?}", f.size)));
            }
            Some(Floor {
                size: f.size,
                center: f.center,
                color: f.color,
            })
        }
        None => None,
    };
    let map_extent = match &spec.map {
        Some(m) => {
            if !m.size.iter().all(|s| s.is_finite() && *s > 0.0)
                || !m.origin.iter().all(|s| s.is_finite())
            {
                return Err(b.err(
                    "map",
                    format!("size must be positive and origin finite, got {m:?}"),
                ));
            }
            Some((m.origin, m.size))
        }
        None => None,
    };
    let mut names = HashSet::new();
    for (i, o) in spec.objects.iter().enumerate() {
        if !valid_name(&o.name) {
            return Err(b.err(
                entry("objects", i, &o.name),
                format!(
                    "invalid object name {:?}: use lowercase letters, digits and '_', starting with a letter",
                    o.name
                ),
            ));
        }
        if !names.insert(o.name.as_str()) {
            return Err(b.err(
                entry("objects", i, &o.name),
                format!("duplicate object name {:?}", o.name),
            ));
        }
    }
    let mut objects = Vec::with_capacity(spec.objects.len());
    for (i, o) in spec.objects.iter().enumerate() {
        let at = entry("objects", i, &o.name);
        let pose = pose_from_spec(&o.pose).map_err(|e| b.err(format!("{at}.pose"), e))?;
        let mut geoms = Vec::new();
        let mut parts = Vec::new();
        let mut links = Vec::new();
        b.shapes(&o.shapes, &at, None, None, o.color, &mut geoms)?;
        for (pi, p) in o.parts.iter().enumerate() {
            b.part(
                p,
                &format!("{at}.{}", entry("parts", pi, &p.name)),
                None,
                o.color,
                &mut parts,
                &mut geoms,
            )?;
        }
        for (ki, k) in o.keypads.iter().enumerate() {
            let kat = format!("{at}.keypads[{ki}]");
            let origin = pose_from_spec(&k.at).map_err(|e| b.err(format!("{kat}.at"), e))?;
            if !k
                .pitch
                .iter()
                .chain(k.key_size.iter())
                .all(|v| v.is_finite() && *v > 0.0)
            {
                return Err(b.err(&kat, "pitch and key_size must be positive"));
            }
            for (r, row) in k.rows.iter().enumerate() {
                for (c, symbol) in row.chars().enumerate() {
                    let centre = origin
                        * Isometry3::translation(
                            c as Real * k.pitch[0],
                            -(r as Real) * k.pitch[1],
                            0.0,
                        );
                    let part = PartSpec {
                        name: format!("{} {symbol}", k.prefix),
                        skills: vec![asp_core::Skill::TipPush],
                        function: PartFunctionSpec::Key,
                        press_axis: Some([0.0, 0.0, -1.0]),
                        travel: Some(k.travel),
                        symbol: Some(symbol.to_string()),
                        color: k.color,
                        shapes: vec![ShapeSpec {
                            cuboid: Some(super::spec::BoxSpec { size: k.key_size }),
                            at: super::spec::PoseSpec {
                                xyz: [
                                    centre.translation.x,
                                    centre.translation.y,
                                    centre.translation.z,
                                ],
                                rpy: Some({
                                    let (r, p, y) = centre.rotation.euler_angles();
                                    [r, p, y]
                                }),
                                rpy_deg: None,
                            },
                            color: k.color,
                            ..Default::default()
                        }],
                    };
                    b.part(
                        &part,
                        &format!("{kat} (key {symbol:?} in row {r})"),
                        None,
                        o.color,
                        &mut parts,
                        &mut geoms,
                    )?;
                }
            }
        }
        for (li, l) in o.links.iter().enumerate() {
            let lat = format!("{at}.{}", entry("links", li, &l.name));
            if links.iter().any(|x: &Link| x.name == l.name) {
                return Err(b.err(&lat, format!("duplicate link name {:?}", l.name)));
            }
            let link = b.link(l, &lat)?;
            let color = l.color.unwrap_or(o.color);
            b.shapes(&l.shapes, &lat, Some(li), None, color, &mut geoms)?;
            for (pi, p) in l.parts.iter().enumerate() {
                b.part(
                    p,
                    &format!("{lat}.{}", entry("parts", pi, &p.name)),
                    Some(li),
                    color,
                    &mut parts,
                    &mut geoms,
                )?;
            }
            links.push(link);
        }
        if geoms.is_empty() {
            return Err(b.err(
                &at,
                "an object needs at least one shape (own, part or link)",
            ));
        }
        let mount = match &o.mount {
            Some(m) => {
                let mat = format!("{at}.mount");
                if o.fixed {
                    return Err(b.err(&mat, "a fixed object cannot be mounted in a holder"));
                }
                let holder = spec
                    .objects
                    .iter()
                    .position(|x| x.name == m.holder)
                    .ok_or_else(|| b.err(&mat, format!("unknown holder object {:?}", m.holder)))?;
                if holder == i {
                    return Err(b.err(&mat, "an object cannot hold itself"));
                }
                if !(m.release.is_finite() && m.release > 0.0 && m.release < 0.5) {
                    return Err(b.err(
                        &mat,
                        format!("release must be in (0, 0.5) metres, got {}", m.release),
                    ));
                }
                Some(Mount {
                    holder,
                    axis: unit(m.axis, "axis").map_err(|e| b.err(&mat, e))?,
                    release: m.release,
                    seated: pose,
                    removed: false,
                })
            }
            None => None,
        };
        objects.push(Object {
            name: o.name.clone(),
            description: o.description.clone(),
            fixed: o.fixed,
            color: o.color,
            pose,
            geoms,
            parts,
            links,
            mount,
            typed: String::new(),
        });
    }
    Ok(World {
        name: spec.name.clone(),
        description: spec.description.clone(),
        floor,
        map_extent,
        light: Light {
            to_light: Unit::new_normalize(-light_dir.into_inner()),
            ambient: spec.light.ambient,
        },
        objects,
    })
}
