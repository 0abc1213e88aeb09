//! Images for episode reports: PNG data URLs, mask overlays, projected point clouds.

use asp_core::{CameraIntrinsics, Crop, Point3, RgbImage, Transform};

use crate::error::EvalError;

/// `data:image/png;base64,…` of `img`, at full size (the agent's image encoder, which
/// scales down only above the given side).
pub fn png_data_url(img: &RgbImage) -> Result<String, EvalError> {
    asp_llm::image::encode_png_data_url(img, u32::MAX)
        .map(|e| e.data_url)
        .map_err(|e| EvalError::Report(format!("PNG encoding: {e}")))
}

/// Decodes a PNG data URL (tests and tools).
pub use asp_llm::image::decode_png_data_url;

/// `img` scaled up by an integer factor (nearest neighbour) so that its shorter side is
/// at least `min_side`, at most ×`max_factor`.
pub fn upscale(img: &RgbImage, min_side: u32, max_factor: u32) -> RgbImage {
    let short = img.width().min(img.height()).max(1);
    let f = min_side.div_ceil(short).clamp(1, max_factor.max(1));
    if f == 1 {
        return img.clone();
    }
    let (w, h) = (img.width() * f, img.height() * f);
    let src = img.pixels();
    let sw = img.width() as usize;
    let data = (0..h as usize)
        .flat_map(|y| (0..w as usize).map(move |x| (x, y)))
        .map(|(x, y)| src[(y / f as usize) * sw + x / f as usize])
        .collect();
    RgbImage::from_vec(w, h, data).unwrap_or_else(|_| img.clone())
}

/// The crop with its segment shown: the mask's pixels as they are with a coloured
/// outline, everything else dimmed.
pub fn mask_overlay(crop: &Crop, outline: [u8; 3]) -> RgbImage {
    let mut out = crop.rgb.clone();
    let (w, h) = (out.width(), out.height());
    let same_size = crop.mask.width() == w && crop.mask.height() == h;
    for y in 0..h {
        for x in 0..w {
            let inside = same_size && crop.mask.get(x, y);
            let edge = inside
                && [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)]
                    .iter()
                    .any(|(dx, dy)| {
                        let (nx, ny) = (i64::from(x) + dx, i64::from(y) + dy);
                        nx < 0
                            || ny < 0
                            || nx >= i64::from(w)
                            || ny >= i64::from(h)
                            || !crop.mask.get(nx as u32, ny as u32)
                    });
            if let Some(p) = out.get_mut(x, y) {
                if edge {
                    *p = outline;
                } else if !inside {
                    *p = [p[0] / 3, p[1] / 3, p[2] / 3];
                }
            }
        }
    }
    out
}

/// Pixel positions of map-frame `points` in a camera at `camera_pose` (`map → camera
/// optical frame`) with `intrinsics`; points behind the camera or outside the image are
/// left out.
pub fn project(
    points: &[Point3],
    camera_pose: &Transform,
    intrinsics: &CameraIntrinsics,
) -> Vec<(f32, f32)> {
    let to_camera = camera_pose.iso.inverse();
    points
        .iter()
        .filter_map(|p| intrinsics.project(&(to_camera * p)))
        .filter(|(u, v)| {
            *u >= 0.0 && *v >= 0.0 && *u < intrinsics.width as f32 && *v < intrinsics.height as f32
        })
        .collect()
}

/// Blends `color` into the pixels within `radius` of each point (half-transparent).
pub fn draw_points(img: &mut RgbImage, points: &[(f32, f32)], color: [u8; 3], radius: i64) {
    let (w, h) = (i64::from(img.width()), i64::from(img.height()));
    for &(u, v) in points {
        let (cx, cy) = (u.floor() as i64, v.floor() as i64);
        for dy in -radius..=radius {
            for dx in -radius..=radius {
                let (x, y) = (cx + dx, cy + dy);
                if x < 0 || y < 0 || x >= w || y >= h || dx * dx + dy * dy > radius * radius {
                    continue;
                }
                if let Some(p) = img.get_mut(x as u32, y as u32) {
                    for c in 0..3 {
                        p[c] = ((u16::from(p[c]) + 3 * u16::from(color[c])) / 4) as u8;
                    }
                }
            }
        }
    }
}

/// The outline of the bounding rectangle of `points`, `color`, two pixels wide.
pub fn draw_bounds(img: &mut RgbImage, points: &[(f32, f32)], color: [u8; 3]) {
    if points.is_empty() {
        return;
    }
    let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
    for &(u, v) in points {
        x0 = x0.min(u);
        y0 = y0.min(v);
        x1 = x1.max(u);
        y1 = y1.max(v);
    }
    let (w, h) = (img.width() as i64, img.height() as i64);
    let clamp = |v: f32, hi: i64| (v.floor() as i64).clamp(0, hi - 1);
    let (x0, x1, y0, y1) = (
        clamp(x0 - 2.0, w),
        clamp(x1 + 2.0, w),
        clamp(y0 - 2.0, h),
        clamp(y1 + 2.0, h),
    );
    for t in 0..2 {
        for x in x0..=x1 {
            for y in [y0 + t, y1 - t] {
                if let Some(p) = img.get_mut(x as u32, y.clamp(0, h - 1) as u32) {
                    *p = color;
                }
            }
        }
        for y in y0..=y1 {
            for x in [x0 + t, x1 - t] {
                if let Some(p) = img.get_mut(x.clamp(0, w - 1) as u32, y as u32) {
                    *p = color;
                }
            }
        }
    }
}

/// A distinct colour for the `i`-th item (golden-angle hues).
pub fn palette(i: usize) -> [u8; 3] {
    let hue = (i as f32 * 137.508) % 360.0;
    let (s, v) = (0.85f32, 1.0f32);
    let c = v * s;
    let hp = hue / 60.0;
    let x = c * (1.0 - ((hp % 2.0) - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    let to = |f: f32| ((f + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    [to(r), to(g), to(b)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gradient(w: u32, h: u32) -> RgbImage {
        let px = (0..w * h)
            .map(|i| [(i % w) as u8, (i / w) as u8, 7])
            .collect();
        RgbImage::from_vec(w, h, px).unwrap()
    }

    #[test]
    fn png_data_urls_round_trip_exactly() {
        let img = gradient(13, 7);
        let url = png_data_url(&img).unwrap();
        assert!(url.starts_with("data:image/png;base64,"));
        assert_eq!(decode_png_data_url(&url).unwrap(), img);
        assert!(decode_png_data_url("data:image/png;base64,AAAA").is_err());
    }

    #[test]
    fn upscaling_repeats_pixels_and_respects_the_cap() {
        let img = gradient(4, 2);
        let up = upscale(&img, 8, 3);
        assert_eq!((up.width(), up.height()), (12, 6));
        assert_eq!(up.get(5, 5), img.get(1, 1));
        assert_eq!(upscale(&img, 1, 8), img);
    }

    #[test]
    fn projection_puts_a_point_on_the_optical_axis_at_the_centre() {
        let k = CameraIntrinsics::from_hfov(100, 80, 1.2);
        let pose = Transform::identity("map");
        let px = project(
            &[Point3::new(0.0, 0.0, 2.0), Point3::new(0.0, 0.0, -1.0)],
            &pose,
            &k,
        );
        assert_eq!(px, vec![(50.0, 40.0)]);
        let mut img = gradient(100, 80);
        draw_points(&mut img, &px, [255, 0, 0], 1);
        assert_ne!(img.get(50, 40), gradient(100, 80).get(50, 40));
        assert_eq!(img.get(10, 10), gradient(100, 80).get(10, 10));
    }

    #[test]
    fn palette_colours_differ() {
        assert_ne!(palette(0), palette(1));
        assert_ne!(palette(1), palette(2));
    }
}
