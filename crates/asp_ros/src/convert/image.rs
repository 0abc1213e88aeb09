//! Camera images and calibration.
//!
//! Colour: `rgb8` and `bgr8` (also `rgba8`/`bgra8`, alpha dropped) decode to
//! [`RgbImage`]; encoding writes `rgb8`. Depth: `32FC1` (metres) and `16UC1`
//! (millimetres, the RealSense/OpenNI convention) decode to [`DepthImage`] in metres
//! with 0 for "no reading"; encoding writes either. Row padding (`step`) and
//! big-endian data are honoured.

use asp_core::{CameraIntrinsics, DepthImage, Image, RgbImage};

use crate::RosError;
use crate::msg::builtin_interfaces::Time;
use crate::msg::sensor_msgs::{CameraInfo, Image as RosImage, RegionOfInterest};
use crate::msg::std_msgs::Header;

/// The depth encodings [`depth_image`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthEncoding {
    /// `32FC1`: metres as 32-bit floats.
    Meters32F,
    /// `16UC1`: millimetres as 16-bit integers (0 = no reading).
    Millimeters16U,
}

fn rows(img: &RosImage, bytes_per_pixel: usize) -> Result<Vec<&[u8]>, RosError> {
    let (w, h) = (img.width as usize, img.height as usize);
    let row_bytes = w * bytes_per_pixel;
    let step = img.step as usize;
    if step < row_bytes {
        return Err(RosError::Conversion(format!(
            "image ({}): step {step} is shorter than a row of {w} pixels × {bytes_per_pixel} bytes",
            img.encoding
        )));
    }
    let needed = if h == 0 {
        0
    } else {
        step * (h - 1) + row_bytes
    };
    if img.data.len() < needed {
        return Err(RosError::Conversion(format!(
            "image ({}, {w}×{h}, step {step}): {} data bytes, need {needed}",
            img.encoding,
            img.data.len()
        )));
    }
    Ok((0..h)
        .map(|y| &img.data[y * step..y * step + row_bytes])
        .collect())
}

/// Decodes a colour image.
pub fn rgb_image(img: &RosImage) -> Result<RgbImage, RosError> {
    let (bpp, order): (usize, [usize; 3]) = match img.encoding.as_str() {
        "rgb8" => (3, [0, 1, 2]),
        "bgr8" => (3, [2, 1, 0]),
        "rgba8" => (4, [0, 1, 2]),
        "bgra8" => (4, [2, 1, 0]),
        other => {
            return Err(RosError::Conversion(format!(
                "colour image encoding {other:?} is not supported (rgb8, bgr8, rgba8, bgra8)"
            )));
        }
    };
    let mut pixels = Vec::with_capacity(img.width as usize * img.height as usize);
    for row in rows(img, bpp)? {
        pixels.extend(
            row.chunks_exact(bpp)
                .map(|p| [p[order[0]], p[order[1]], p[order[2]]]),
        );
    }
    Image::from_vec(img.width, img.height, pixels).map_err(|e| RosError::Conversion(e.to_string()))
}

/// Encodes a colour image as `rgb8`.
pub fn ros_rgb_image(img: &RgbImage, header: Header) -> RosImage {
    RosImage {
        header,
        height: img.height(),
        width: img.width(),
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: img.width() * 3,
        data: img.pixels().iter().flatten().copied().collect(),
    }
}

/// Decodes a depth image to metres (0 = no reading).
pub fn depth_image(img: &RosImage) -> Result<DepthImage, RosError> {
    let big = img.is_bigendian != 0;
    let mut pixels = Vec::with_capacity(img.width as usize * img.height as usize);
    match img.encoding.as_str() {
        "32FC1" => {
            for row in rows(img, 4)? {
                pixels.extend(row.chunks_exact(4).map(|b| {
                    let b = [b[0], b[1], b[2], b[3]];
                    let v = if big {
                        f32::from_be_bytes(b)
                    } else {
                        f32::from_le_bytes(b)
                    };
                    if v.is_finite() && v > 0.0 { v } else { 0.0 }
                }));
            }
        }
        "16UC1" | "mono16" => {
            for row in rows(img, 2)? {
                pixels.extend(row.chunks_exact(2).map(|b| {
                    let mm = if big {
                        u16::from_be_bytes([b[0], b[1]])
                    } else {
                        u16::from_le_bytes([b[0], b[1]])
                    };
                    f32::from(mm) / 1000.0
                }));
            }
        }
        other => {
            return Err(RosError::Conversion(format!(
                "depth image encoding {other:?} is not supported (32FC1 metres, 16UC1 millimetres)"
            )));
        }
    }
    Image::from_vec(img.width, img.height, pixels).map_err(|e| RosError::Conversion(e.to_string()))
}

/// Encodes a depth image (metres; 0 or non-finite = no reading).
pub fn ros_depth_image(img: &DepthImage, header: Header, encoding: DepthEncoding) -> RosImage {
    let (name, bpp, data): (&str, u32, Vec<u8>) = match encoding {
        DepthEncoding::Meters32F => (
            "32FC1",
            4,
            img.pixels()
                .iter()
                .flat_map(|&d| {
                    let d = if d.is_finite() && d > 0.0 { d } else { 0.0 };
                    d.to_le_bytes()
                })
                .collect(),
        ),
        DepthEncoding::Millimeters16U => (
            "16UC1",
            2,
            img.pixels()
                .iter()
                .flat_map(|&d| {
                    let mm = if d.is_finite() && d > 0.0 {
                        (d * 1000.0).round().min(f32::from(u16::MAX)) as u16
                    } else {
                        0
                    };
                    mm.to_le_bytes()
                })
                .collect(),
        ),
    };
    RosImage {
        header,
        height: img.height(),
        width: img.width(),
        encoding: name.into(),
        is_bigendian: 0,
        step: img.width() * bpp,
        data,
    }
}

/// Pinhole intrinsics from `K`. Distortion coefficients are not applied (ASP expects
/// rectified or distortion-free streams, such as aligned RealSense depth).
pub fn intrinsics(info: &CameraInfo) -> Result<CameraIntrinsics, RosError> {
    let bx = info.binning_x.max(1) as f32;
    let by = info.binning_y.max(1) as f32;
    let k = &info.k;
    let intr = CameraIntrinsics {
        width: info.width,
        height: info.height,
        fx: k[0] as f32 / bx,
        fy: k[4] as f32 / by,
        cx: k[2] as f32 / bx,
        cy: k[5] as f32 / by,
    };
    intr.validate().map_err(|e| {
        RosError::Conversion(format!(
            "camera_info of frame {:?}: {e}",
            info.header.frame_id
        ))
    })?;
    Ok(intr)
}

/// Camera info for ideal pinhole intrinsics (`plumb_bob` with zero distortion).
pub fn camera_info(intr: &CameraIntrinsics, header: Header) -> CameraInfo {
    let (fx, fy, cx, cy) = (
        f64::from(intr.fx),
        f64::from(intr.fy),
        f64::from(intr.cx),
        f64::from(intr.cy),
    );
    CameraInfo {
        header,
        height: intr.height,
        width: intr.width,
        distortion_model: "plumb_bob".into(),
        d: vec![0.0; 5],
        k: [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
        binning_x: 0,
        binning_y: 0,
        roi: RegionOfInterest::default(),
    }
}

/// A header for camera data.
pub fn header(stamp_s: f64, frame: &str) -> Header {
    Header::new(Time::from_secs_f64(stamp_s), frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rgb() -> RgbImage {
        Image::from_vec(3, 2, (0..6u8).map(|i| [i, i * 10, i * 20]).collect()).unwrap()
    }

    #[test]
    fn rgb_round_trip_and_bgr_with_padding() {
        let img = rgb();
        let msg = ros_rgb_image(&img, Header::default());
        assert_eq!((msg.step, msg.data.len()), (9, 18));
        assert_eq!(rgb_image(&msg).unwrap(), img);
        // bgr8 with 2 bytes of padding per row
        let mut data = Vec::new();
        for y in 0..2 {
            for x in 0..3 {
                let p = img.get(x, y).unwrap();
                data.extend([p[2], p[1], p[0]]);
            }
            data.extend([0xEE, 0xEE]);
        }
        let bgr = RosImage {
            encoding: "bgr8".into(),
            step: 11,
            data,
            ..msg.clone()
        };
        assert_eq!(rgb_image(&bgr).unwrap(), img);
        let short = RosImage {
            data: vec![0; 10],
            ..msg.clone()
        };
        let e = rgb_image(&short).unwrap_err().to_string();
        assert!(e.contains("10 data bytes"), "{e}");
        let odd = RosImage {
            encoding: "yuv422".into(),
            ..msg
        };
        assert!(rgb_image(&odd).unwrap_err().to_string().contains("yuv422"));
    }

    #[test]
    fn depth_in_metres_and_millimetres() {
        let depth = Image::from_vec(2, 2, vec![0.5, 0.0, f32::NAN, 2.25]).unwrap();
        let f = ros_depth_image(&depth, Header::default(), DepthEncoding::Meters32F);
        assert_eq!(f.encoding, "32FC1");
        let back = depth_image(&f).unwrap();
        assert_eq!(back.pixels(), &[0.5, 0.0, 0.0, 2.25]);
        let mm = ros_depth_image(&depth, Header::default(), DepthEncoding::Millimeters16U);
        assert_eq!(mm.encoding, "16UC1");
        assert_eq!(&mm.data[..2], &500u16.to_le_bytes());
        assert_eq!(depth_image(&mm).unwrap().pixels(), &[0.5, 0.0, 0.0, 2.25]);
        // big-endian 16UC1
        let be = RosImage {
            is_bigendian: 1,
            data: [1234u16, 0, 0, 1]
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
            ..mm
        };
        assert_eq!(depth_image(&be).unwrap().pixels()[0], 1.234);
    }

    #[test]
    fn camera_info_round_trip() {
        let intr = CameraIntrinsics::from_hfov(640, 480, 1.2);
        let info = camera_info(&intr, header(1.0, "head_camera_optical"));
        assert_eq!(info.k[8], 1.0);
        assert_eq!(intrinsics(&info).unwrap(), intr);
        let bad = CameraInfo {
            k: [0.0; 9],
            ..info
        };
        let e = intrinsics(&bad).unwrap_err().to_string();
        assert!(e.contains("head_camera_optical"), "{e}");
    }
}
