//! Point clouds (`sensor_msgs/PointCloud2` ↔ `asp_core::PointCloud`).
//!
//! Writes `x y z` as float32, then `rgb` (packed 0x00RRGGBB in a float32, the PCL
//! convention) and `normal_x normal_y normal_z` when the cloud has them. Reads `x y z`
//! (float32 or float64), optional `rgb`/`rgba` and normals, any `point_step`,
//! `row_step` and byte order; invalid (NaN) points are skipped.

use asp_core::{Point3, PointCloud, Real, Vector3};

use crate::RosError;
use crate::msg::builtin_interfaces::Time;
use crate::msg::sensor_msgs::{PointCloud2, PointField};
use crate::msg::std_msgs::Header;

fn field(name: &str, offset: u32) -> PointField {
    PointField {
        name: name.into(),
        offset,
        datatype: PointField::FLOAT32,
        count: 1,
    }
}

pub fn ros_cloud(cloud: &PointCloud, stamp: Time) -> PointCloud2 {
    let mut fields = vec![field("x", 0), field("y", 4), field("z", 8)];
    let mut step = 12;
    let colors = cloud.colors();
    let normals = cloud.normals();
    if colors.is_some() {
        fields.push(field("rgb", step));
        step += 4;
    }
    if normals.is_some() {
        for n in ["normal_x", "normal_y", "normal_z"] {
            fields.push(field(n, step));
            step += 4;
        }
    }
    let mut data = Vec::with_capacity(cloud.len() * step as usize);
    for (i, p) in cloud.points().iter().enumerate() {
        for v in [p.x, p.y, p.z] {
            data.extend(v.to_le_bytes());
        }
        if let Some(c) = colors {
            let packed =
                (u32::from(c[i][0]) << 16) | (u32::from(c[i][1]) << 8) | u32::from(c[i][2]);
            data.extend(packed.to_le_bytes());
        }
        if let Some(n) = normals {
            for v in [n[i].x, n[i].y, n[i].z] {
                data.extend(v.to_le_bytes());
            }
        }
    }
    PointCloud2 {
        header: Header::new(stamp, cloud.frame.as_str()),
        height: 1,
        width: cloud.len() as u32,
        fields,
        is_bigendian: false,
        point_step: step,
        row_step: step * cloud.len() as u32,
        data,
        is_dense: true,
    }
}

struct Reader<'a> {
    msg: &'a PointCloud2,
}

impl Reader<'_> {
    fn find(&self, names: &[&str]) -> Option<&PointField> {
        self.msg
            .fields
            .iter()
            .find(|f| names.contains(&f.name.as_str()))
    }

    fn scalar(&self, point: &[u8], f: &PointField) -> Result<f64, RosError> {
        let o = f.offset as usize;
        let big = self.msg.is_bigendian;
        let bytes = |n: usize| -> Result<&[u8], RosError> {
            point.get(o..o + n).ok_or_else(|| {
                RosError::Conversion(format!(
                    "point cloud field {:?} at offset {o} runs past point_step {}",
                    f.name, self.msg.point_step
                ))
            })
        };
        Ok(match f.datatype {
            PointField::FLOAT32 => {
                let b: [u8; 4] = bytes(4)?.try_into().unwrap_or_default();
                f64::from(if big {
                    f32::from_be_bytes(b)
                } else {
                    f32::from_le_bytes(b)
                })
            }
            PointField::FLOAT64 => {
                let b: [u8; 8] = bytes(8)?.try_into().unwrap_or_default();
                if big {
                    f64::from_be_bytes(b)
                } else {
                    f64::from_le_bytes(b)
                }
            }
            other => {
                return Err(RosError::Conversion(format!(
                    "point cloud field {:?} has datatype {other}; x/y/z/normals must be FLOAT32 or FLOAT64",
                    f.name
                )));
            }
        })
    }

    fn color(&self, point: &[u8], f: &PointField) -> Result<[u8; 3], RosError> {
        let o = f.offset as usize;
        let b: [u8; 4] = point
            .get(o..o + 4)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| {
                RosError::Conversion("point cloud rgb field runs past point_step".into())
            })?;
        let packed = if self.msg.is_bigendian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        };
        Ok([(packed >> 16) as u8, (packed >> 8) as u8, packed as u8])
    }
}

pub fn cloud(msg: &PointCloud2) -> Result<PointCloud, RosError> {
    let r = Reader { msg };
    let xyz = ["x", "y", "z"].map(|n| r.find(&[n]));
    let [Some(fx), Some(fy), Some(fz)] = xyz else {
        return Err(RosError::Conversion(format!(
            "point cloud of frame {:?} lacks x, y or z fields",
            msg.header.frame_id
        )));
    };
    let rgb = r.find(&["rgb", "rgba"]);
    let normals = match ["normal_x", "normal_y", "normal_z"].map(|n| r.find(&[n])) {
        [Some(a), Some(b), Some(c)] => Some([a, b, c]),
        _ => None,
    };
    let (w, h) = (msg.width as usize, msg.height as usize);
    let step = msg.point_step as usize;
    let row_step = msg.row_step as usize;
    if step == 0
        || row_step < w * step
        || msg.data.len() < row_step * h.saturating_sub(1) + w * step
    {
        return Err(RosError::Conversion(format!(
            "point cloud {w}×{h}, point_step {step}, row_step {row_step}: {} data bytes do not fit",
            msg.data.len()
        )));
    }
    let mut points = Vec::with_capacity(w * h);
    let mut colors = Vec::new();
    let mut norms = Vec::new();
    for y in 0..h {
        for x in 0..w {
            let start = y * row_step + x * step;
            let p = &msg.data[start..start + step];
            let v = [r.scalar(p, fx)?, r.scalar(p, fy)?, r.scalar(p, fz)?];
            if !v.iter().all(|c| c.is_finite()) {
                continue;
            }
            points.push(Point3::new(v[0] as Real, v[1] as Real, v[2] as Real));
            if let Some(f) = rgb {
                colors.push(r.color(p, f)?);
            }
            if let Some([a, b, c]) = normals {
                norms.push(Vector3::new(
                    r.scalar(p, a)? as Real,
                    r.scalar(p, b)? as Real,
                    r.scalar(p, c)? as Real,
                ));
            }
        }
    }
    let mut out = PointCloud::new(msg.header.frame_id.as_str(), points);
    let err = |e: asp_core::CoreError| RosError::Conversion(e.to_string());
    if rgb.is_some() {
        out = out.with_colors(colors).map_err(err)?;
    }
    if normals.is_some() {
        out = out.with_normals(norms).map_err(err)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_round_trip_with_colours_and_normals() {
        let c = PointCloud::new(
            "map",
            vec![Point3::new(1.0, 2.0, 3.0), Point3::new(-1.0, 0.5, 0.25)],
        )
        .with_colors(vec![[255, 0, 10], [1, 2, 3]])
        .unwrap()
        .with_normals(vec![Vector3::z(), Vector3::x()])
        .unwrap();
        let msg = ros_cloud(&c, Time::default());
        assert_eq!(msg.point_step, 28);
        assert_eq!(cloud(&msg).unwrap(), c);
    }

    #[test]
    fn reads_float64_big_endian_organised_clouds_and_skips_nan() {
        let mut data = Vec::new();
        let pts = [
            [0.5f64, 1.0, 2.0],
            [f64::NAN, 0.0, 0.0],
            [3.0, 4.0, 5.0],
            [6.0, 7.0, 8.0],
        ];
        for p in pts {
            for v in p {
                data.extend(v.to_be_bytes());
            }
            data.extend([0u8; 8]); // padding inside the point
        }
        let f = |n: &str, o| PointField {
            name: n.into(),
            offset: o,
            datatype: PointField::FLOAT64,
            count: 1,
        };
        let msg = PointCloud2 {
            header: Header::new(Time::default(), "cam"),
            height: 2,
            width: 2,
            fields: vec![f("x", 0), f("y", 8), f("z", 16)],
            is_bigendian: true,
            point_step: 32,
            row_step: 64,
            data,
            is_dense: false,
        };
        let c = cloud(&msg).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c.points()[2], Point3::new(6.0, 7.0, 8.0));
        let mut bad = msg.clone();
        bad.fields.pop();
        assert!(
            cloud(&bad)
                .unwrap_err()
                .to_string()
                .contains("lacks x, y or z")
        );
        let mut short = msg;
        short.data.truncate(40);
        assert!(cloud(&short).is_err());
    }
}
