//! Pinhole cameras and RGB-D frames. Camera coordinates follow the ROS optical-frame
//! convention (REP 103): +z forward, +x right, +y down.

use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::geometry::{FrameId, Point3, PointCloud, Real, Transform};
use crate::image::{DepthImage, Mask, PixelRect, RgbImage};
use crate::models::{GroundTruth, Observation};

/// Pinhole intrinsics without distortion (the `K` of sensor_msgs/CameraInfo).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CameraIntrinsics {
    pub width: u32,
    pub height: u32,
    pub fx: Real,
    pub fy: Real,
    pub cx: Real,
    pub cy: Real,
}

impl CameraIntrinsics {
    /// Intrinsics of an ideal camera with horizontal field of view `hfov` (radians),
    /// square pixels and the principal point at the image centre.
    pub fn from_hfov(width: u32, height: u32, hfov: Real) -> Self {
        let fx = width as Real / 2.0 / (hfov / 2.0).tan();
        Self {
            width,
            height,
            fx,
            fy: fx,
            cx: width as Real / 2.0,
            cy: height as Real / 2.0,
        }
    }

    /// Checks that the intrinsics can project: positive size and focal lengths.
    pub fn validate(&self) -> Result<(), CoreError> {
        let ok = self.width > 0
            && self.height > 0
            && self.fx.is_finite()
            && self.fy.is_finite()
            && self.fx > 0.0
            && self.fy > 0.0
            && self.cx.is_finite()
            && self.cy.is_finite();
        if ok {
            Ok(())
        } else {
            Err(CoreError::InvalidArgument(format!(
                "camera intrinsics need positive size and focal lengths, got {self:?}"
            )))
        }
    }

    /// The 3D point in camera coordinates seen at pixel centre `(u, v)` at `depth` metres.
    pub fn unproject(&self, u: Real, v: Real, depth: Real) -> Point3 {
        Point3::new(
            (u - self.cx) * depth / self.fx,
            (v - self.cy) * depth / self.fy,
            depth,
        )
    }

    /// The continuous pixel coordinates of a camera-frame point; `None` behind the camera.
    pub fn project(&self, p: &Point3) -> Option<(Real, Real)> {
        (p.z > 1e-6).then(|| (self.fx * p.x / p.z + self.cx, self.fy * p.y / p.z + self.cy))
    }

    /// Intrinsics of the sub-image `rect` (a crop keeps focal lengths, shifts the centre).
    pub fn cropped(&self, rect: &PixelRect) -> CameraIntrinsics {
        CameraIntrinsics {
            width: rect.width(),
            height: rect.height(),
            fx: self.fx,
            fy: self.fy,
            cx: self.cx - rect.x0 as Real,
            cy: self.cy - rect.y0 as Real,
        }
    }
}

/// One posed RGB-D observation: colour and depth registered to the same intrinsics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RgbdFrame {
    pub rgb: RgbImage,
    pub depth: DepthImage,
    pub intrinsics: CameraIntrinsics,
    /// `map → camera optical frame`.
    pub camera_pose: Transform,
    /// Capture time in seconds (simulation or ROS time).
    pub stamp: f64,
    /// Simulator ground truth registered to the images; `None` for real cameras.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground_truth: Option<GroundTruth>,
}

impl RgbdFrame {
    /// Checks that the images match the intrinsics.
    pub fn validate(&self) -> Result<(), CoreError> {
        self.intrinsics.validate()?;
        let (w, h) = (self.intrinsics.width, self.intrinsics.height);
        for (what, size) in [
            ("rgb", (self.rgb.width(), self.rgb.height())),
            ("depth", (self.depth.width(), self.depth.height())),
        ] {
            if size != (w, h) {
                return Err(CoreError::InvalidArgument(format!(
                    "{what} image is {}×{} but the intrinsics say {w}×{h}",
                    size.0, size.1
                )));
            }
        }
        Ok(())
    }

    /// The frame as a model input.
    pub fn observation(&self) -> Observation {
        Observation {
            rgb: self.rgb.clone(),
            depth: Some(self.depth.clone()),
            ground_truth: self.ground_truth.clone(),
        }
    }

    pub fn camera_frame(&self) -> &FrameId {
        &self.camera_pose.child
    }

    /// Back-projects the depth pixels under `mask` (all pixels when `None`) into the
    /// parent frame of the camera pose (the map), keeping their colours. Pixels without a
    /// valid reading, or outside `[min_depth, max_depth]`, are skipped.
    pub fn back_project(
        &self,
        mask: Option<&Mask>,
        min_depth: Real,
        max_depth: Real,
    ) -> Result<PointCloud, CoreError> {
        self.validate()?;
        if let Some(m) = mask
            && (m.width(), m.height()) != (self.depth.width(), self.depth.height())
        {
            return Err(CoreError::MaskSize {
                a: (m.width(), m.height()),
                b: (self.depth.width(), self.depth.height()),
            });
        }
        let mut points = Vec::new();
        let mut colors = Vec::new();
        for (x, y, &d) in self.depth.enumerate() {
            if !(d.is_finite() && d > 0.0 && d >= min_depth && d <= max_depth) {
                continue;
            }
            if mask.is_some_and(|m| !m.get(x, y)) {
                continue;
            }
            let p = self
                .intrinsics
                .unproject(x as Real + 0.5, y as Real + 0.5, d);
            points.push(self.camera_pose.iso * p);
            colors.push(self.rgb.get(x, y).copied().unwrap_or([0, 0, 0]));
        }
        PointCloud::new(self.camera_pose.parent.clone(), points).with_colors(colors)
    }

    /// Whether the map point `p` is in this view: in front of the camera within
    /// `max_depth`, inside the image, and not hidden behind something the depth image
    /// reads more than `occlusion_margin` nearer (a pixel with no reading hides nothing).
    pub fn sees(&self, p: &Point3, max_depth: Real, occlusion_margin: Real) -> bool {
        let c = self.camera_pose.iso.inverse_transform_point(p);
        if !(c.z > 0.0 && c.z <= max_depth) {
            return false;
        }
        let Some((u, v)) = self.intrinsics.project(&c) else {
            return false;
        };
        let (w, h) = (
            self.intrinsics.width as Real,
            self.intrinsics.height as Real,
        );
        if !(u >= 0.0 && v >= 0.0 && u < w && v < h) {
            return false;
        }
        match self.depth.get(u as u32, v as u32) {
            Some(&d) if d.is_finite() && d > 0.0 => d + occlusion_margin >= c.z,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Isometry3, Vector3};
    use crate::image::{Box2, Image};
    use approx::assert_relative_eq;

    fn intr() -> CameraIntrinsics {
        CameraIntrinsics {
            width: 4,
            height: 4,
            fx: 2.0,
            fy: 2.0,
            cx: 2.0,
            cy: 2.0,
        }
    }

    #[test]
    fn project_unproject_round_trip() {
        let k = intr();
        let p = k.unproject(3.5, 0.5, 2.0);
        assert_relative_eq!(p, Point3::new(1.5, -1.5, 2.0));
        let (u, v) = k.project(&p).unwrap();
        assert_relative_eq!(u, 3.5);
        assert_relative_eq!(v, 0.5);
        assert!(k.project(&Point3::new(0.0, 0.0, -1.0)).is_none());
        let hf = CameraIntrinsics::from_hfov(640, 480, std::f32::consts::FRAC_PI_2);
        assert_relative_eq!(hf.fx, 320.0, epsilon = 1e-3);
    }

    #[test]
    fn back_project_masked_depth_into_map() {
        let mut depth = Image::filled(4, 4, 1.0f32);
        *depth.get_mut(0, 0).unwrap() = 0.0; // no reading
        *depth.get_mut(1, 0).unwrap() = f32::NAN;
        let frame = RgbdFrame {
            rgb: Image::filled(4, 4, [10, 20, 30]),
            depth,
            intrinsics: intr(),
            camera_pose: Transform::new("map", "camera", Isometry3::translation(0.0, 0.0, 1.0)),
            stamp: 0.0,
            ground_truth: None,
        };
        let all = frame.back_project(None, 0.1, 10.0).unwrap();
        assert_eq!(all.len(), 14);
        assert_eq!(all.frame.as_str(), "map");
        let mask = Mask::fill_box(4, 4, &Box2::new(2.0, 2.0, 3.0, 3.0));
        let one = frame.back_project(Some(&mask), 0.1, 10.0).unwrap();
        assert_eq!(one.len(), 1);
        // pixel (2, 2) centre (2.5, 2.5) at 1 m → camera (0.25, 0.25, 1) → map z + 1
        assert_relative_eq!(one.points()[0], Point3::new(0.25, 0.25, 2.0));
        assert_eq!(one.colors().unwrap()[0], [10, 20, 30]);
        assert_eq!(frame.back_project(None, 1.5, 10.0).unwrap().len(), 0);
        let wrong = Mask::empty(3, 3);
        assert!(frame.back_project(Some(&wrong), 0.1, 10.0).is_err());
    }

    #[test]
    fn a_point_is_seen_in_the_image_in_range_and_not_behind_a_nearer_reading() {
        let mut depth = Image::filled(4, 4, 2.0f32);
        *depth.get_mut(3, 3).unwrap() = 0.5; // something near the camera in that corner
        *depth.get_mut(0, 3).unwrap() = 0.0; // no reading
        let frame = RgbdFrame {
            rgb: Image::filled(4, 4, [0, 0, 0]),
            depth,
            intrinsics: intr(),
            camera_pose: Transform::new("map", "camera", Isometry3::translation(0.0, 0.0, 1.0)),
            stamp: 0.0,
            ground_truth: None,
        };
        // the map point 1.5 m in front of the camera, at the image centre
        assert!(frame.sees(&Point3::new(0.0, 0.0, 2.5), 10.0, 0.05));
        // beyond the range, behind the camera, outside the image
        assert!(!frame.sees(&Point3::new(0.0, 0.0, 2.5), 1.0, 0.05));
        assert!(!frame.sees(&Point3::new(0.0, 0.0, 0.5), 10.0, 0.05));
        assert!(!frame.sees(&Point3::new(5.0, 0.0, 2.5), 10.0, 0.05));
        // pixel (3, 3) reads 0.5 m: a point 1.5 m away there is hidden
        let corner = frame.intrinsics.unproject(3.5, 3.5, 1.5);
        assert!(!frame.sees(&(corner + Vector3::new(0.0, 0.0, 1.0)), 10.0, 0.05));
        // pixel (0, 3) has no reading: it hides nothing
        let blind = frame.intrinsics.unproject(0.5, 3.5, 1.5);
        assert!(frame.sees(&(blind + Vector3::new(0.0, 0.0, 1.0)), 10.0, 0.05));
    }

    #[test]
    fn crop_shifts_principal_point() {
        let c = intr().cropped(&PixelRect {
            x0: 1,
            y0: 2,
            x1: 3,
            y1: 4,
        });
        assert_eq!((c.width, c.height), (2, 2));
        assert_relative_eq!(c.cx, 1.0);
        assert_relative_eq!(c.cy, 0.0);
    }
}
