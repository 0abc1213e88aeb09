//! Image pre- and post-processing the vision models expect: PIL-style resampling (with
//! antialiasing when shrinking), SAM's longest-side resize + normalise + pad, CLIP's
//! shortest-side resize + centre crop + normalise, and bilinear upscaling of mask logits
//! (`torch.nn.functional.interpolate(mode="bilinear", align_corners=False)`).

use asp_core::image::RgbImage;

/// Resampling kernel of [`resample_rgb`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Triangle kernel (PIL `BILINEAR`).
    Bilinear,
    /// Cubic convolution with a = -0.5 (PIL `BICUBIC`, CLIP's resize).
    Bicubic,
}

impl Filter {
    fn support(self) -> f32 {
        match self {
            Filter::Bilinear => 1.0,
            Filter::Bicubic => 2.0,
        }
    }

    fn weight(self, x: f32) -> f32 {
        let x = x.abs();
        match self {
            Filter::Bilinear => (1.0 - x).max(0.0),
            Filter::Bicubic => {
                const A: f32 = -0.5;
                if x < 1.0 {
                    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
                } else if x < 2.0 {
                    (((x - 5.0) * x + 8.0) * x - 4.0) * A
                } else {
                    0.0
                }
            }
        }
    }
}

/// For each output index: the first input index and the normalised weights, following
/// PIL's `precompute_coeffs` (the kernel is stretched by the scale when shrinking, which
/// antialiases).
fn coefficients(in_size: usize, out_size: usize, filter: Filter) -> Vec<(usize, Vec<f32>)> {
    let scale = in_size as f32 / out_size as f32;
    let filterscale = scale.max(1.0);
    let support = filter.support() * filterscale;
    (0..out_size)
        .map(|i| {
            let center = (i as f32 + 0.5) * scale;
            let xmin = ((center - support + 0.5).floor().max(0.0)) as usize;
            let xmax = ((center + support + 0.5).floor() as usize).min(in_size);
            let mut w: Vec<f32> = (xmin..xmax)
                .map(|x| filter.weight((x as f32 - center + 0.5) / filterscale))
                .collect();
            let total: f32 = w.iter().sum();
            if total != 0.0 {
                w.iter_mut().for_each(|v| *v /= total);
            }
            (xmin, w)
        })
        .collect()
}

/// Resizes an RGB image to `out_w × out_h`, returning row-major pixels on the 0–255 scale
/// (not rounded, as a float pipeline sees them).
pub fn resample_rgb(src: &RgbImage, out_w: u32, out_h: u32, filter: Filter) -> Vec<[f32; 3]> {
    let (w, h) = (src.width() as usize, src.height() as usize);
    let (ow, oh) = (out_w as usize, out_h as usize);
    if w == 0 || h == 0 || ow == 0 || oh == 0 {
        return vec![[0.0; 3]; ow * oh];
    }
    let px = src.pixels();
    // horizontal pass: h × ow
    let cx = coefficients(w, ow, filter);
    let mut tmp = vec![[0.0f32; 3]; h * ow];
    for y in 0..h {
        let row = &px[y * w..(y + 1) * w];
        for (x, (start, weights)) in cx.iter().enumerate() {
            let mut acc = [0.0f32; 3];
            for (k, wt) in weights.iter().enumerate() {
                let p = row[start + k];
                for c in 0..3 {
                    acc[c] += wt * f32::from(p[c]);
                }
            }
            tmp[y * ow + x] = acc;
        }
    }
    // vertical pass: oh × ow
    let cy = coefficients(h, oh, filter);
    let mut out = vec![[0.0f32; 3]; oh * ow];
    for (y, (start, weights)) in cy.iter().enumerate() {
        for x in 0..ow {
            let mut acc = [0.0f32; 3];
            for (k, wt) in weights.iter().enumerate() {
                let p = tmp[(start + k) * ow + x];
                for c in 0..3 {
                    acc[c] += wt * p[c];
                }
            }
            // PIL clips to the 8-bit range after resampling
            out[y * ow + x] = acc.map(|v| v.clamp(0.0, 255.0));
        }
    }
    out
}

/// Bilinear resize of one float plane with `align_corners = False` and no antialiasing
/// (PyTorch's `F.interpolate`, as SAM upscales mask logits).
pub fn resize_plane_bilinear(
    src: &[f32],
    w: usize,
    h: usize,
    out_w: usize,
    out_h: usize,
) -> Vec<f32> {
    if w == 0 || h == 0 {
        return vec![0.0; out_w * out_h];
    }
    let sx = w as f32 / out_w as f32;
    let sy = h as f32 / out_h as f32;
    let axis = |i: usize, s: f32, n: usize| -> (usize, usize, f32) {
        let c = ((i as f32 + 0.5) * s - 0.5).max(0.0);
        let i0 = (c.floor() as usize).min(n - 1);
        let i1 = (i0 + 1).min(n - 1);
        (i0, i1, c - i0 as f32)
    };
    let xs: Vec<_> = (0..out_w).map(|x| axis(x, sx, w)).collect();
    let mut out = Vec::with_capacity(out_w * out_h);
    for y in 0..out_h {
        let (y0, y1, fy) = axis(y, sy, h);
        for &(x0, x1, fx) in &xs {
            let top = src[y0 * w + x0] * (1.0 - fx) + src[y0 * w + x1] * fx;
            let bottom = src[y1 * w + x0] * (1.0 - fx) + src[y1 * w + x1] * fx;
            out.push(top * (1.0 - fy) + bottom * fy);
        }
    }
    out
}

/// SAM's pixel mean and standard deviation (0–255 scale, RGB).
pub const SAM_PIXEL_MEAN: [f32; 3] = [123.675, 116.28, 103.53];
pub const SAM_PIXEL_STD: [f32; 3] = [58.395, 57.12, 57.375];

/// The size SAM's `ResizeLongestSide` gives an image of `w × h` for a `target` side.
pub fn longest_side_size(w: u32, h: u32, target: u32) -> (u32, u32, f32) {
    let scale = target as f32 / w.max(h).max(1) as f32;
    let nw = ((w as f32 * scale) + 0.5) as u32;
    let nh = ((h as f32 * scale) + 0.5) as u32;
    (nw.clamp(1, target), nh.clamp(1, target), scale)
}

/// SAM's pre-processing: resize the longest side to `size` (bilinear), normalise with
/// [`SAM_PIXEL_MEAN`]/[`SAM_PIXEL_STD`], pad bottom-right with zeros to `size × size`;
/// returns the CHW tensor data and the resized `(w, h)`.
pub fn sam_input(image: &RgbImage, size: u32) -> (Vec<f32>, (u32, u32)) {
    let (nw, nh, _) = longest_side_size(image.width(), image.height(), size);
    let resized = resample_rgb(image, nw, nh, Filter::Bilinear);
    let s = size as usize;
    let mut data = vec![0.0f32; 3 * s * s];
    for y in 0..nh as usize {
        for x in 0..nw as usize {
            let p = resized[y * nw as usize + x];
            for c in 0..3 {
                data[c * s * s + y * s + x] = (p[c] - SAM_PIXEL_MEAN[c]) / SAM_PIXEL_STD[c];
            }
        }
    }
    (data, (nw, nh))
}

/// CLIP's pre-processing: resize the shortest side to `size` (bicubic), centre-crop
/// `size × size`, scale to 0–1 and normalise with `mean`/`std`; returns CHW data.
pub fn clip_input(image: &RgbImage, size: u32, mean: [f32; 3], std: [f32; 3]) -> Vec<f32> {
    let (w, h) = (image.width().max(1), image.height().max(1));
    let scale = size as f32 / w.min(h) as f32;
    let nw = ((w as f32 * scale).round() as u32).max(size);
    let nh = ((h as f32 * scale).round() as u32).max(size);
    let resized = resample_rgb(image, nw, nh, Filter::Bicubic);
    // torchvision CenterCrop: top = round((h - size) / 2)
    let x0 = ((nw - size) as f32 / 2.0).round() as usize;
    let y0 = ((nh - size) as f32 / 2.0).round() as usize;
    let s = size as usize;
    let mut data = vec![0.0f32; 3 * s * s];
    for y in 0..s {
        for x in 0..s {
            let p = resized[(y0 + y) * nw as usize + x0 + x];
            for c in 0..3 {
                // torchvision's ToTensor sees the 8-bit image PIL produced
                let v = p[c].round() / 255.0;
                data[c * s * s + y * s + x] = (v - mean[c]) / std[c];
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::image::Image;

    #[test]
    fn resampling_keeps_a_flat_colour_and_averages_when_shrinking() {
        let flat = Image::filled(7, 5, [10u8, 200, 30]);
        for f in [Filter::Bilinear, Filter::Bicubic] {
            for p in resample_rgb(&flat, 3, 11, f) {
                for c in 0..3 {
                    assert!(
                        (p[c] - f32::from(flat.pixels()[0][c])).abs() < 1e-3,
                        "{f:?} {p:?}"
                    );
                }
            }
        }
        // 2:1 shrink of alternating columns 0/200 with the triangle kernel averages them
        let stripes = Image::from_vec(
            4,
            1,
            vec![[0u8, 0, 0], [200, 200, 200], [0, 0, 0], [200, 200, 200]],
        )
        .unwrap();
        let half = resample_rgb(&stripes, 2, 1, Filter::Bilinear);
        // PIL's kernel stretched to support 2: output 0 (centre 1.0) weighs x = 0, 1, 2 by
        // 0.75, 0.75, 0.25 → 200 · 0.75 / 1.75 = 85.71; output 1 mirrors it → 114.29.
        // (PIL's Image.resize((2, 1), BILINEAR) gives 86 and 114.)
        assert!((half[0][0] - 85.714).abs() < 1e-2, "{half:?}");
        assert!((half[1][0] - 114.286).abs() < 1e-2, "{half:?}");
    }

    #[test]
    fn bilinear_plane_matches_torch_align_corners_false() {
        // torch.nn.functional.interpolate([[0, 1]], size=4, mode="linear", align_corners=False)
        // = [0.0, 0.25, 0.75, 1.0]
        let up = resize_plane_bilinear(&[0.0, 1.0], 2, 1, 4, 1);
        let want = [0.0, 0.25, 0.75, 1.0];
        for (a, b) in up.iter().zip(want) {
            assert!((a - b).abs() < 1e-6, "{up:?}");
        }
    }

    #[test]
    fn sam_input_resizes_longest_side_and_pads() {
        let img = Image::filled(8, 4, [123u8, 116, 103]);
        let (data, (w, h)) = sam_input(&img, 16);
        assert_eq!((w, h), (16, 8));
        assert_eq!(data.len(), 3 * 16 * 16);
        // inside: near zero after normalisation; padding rows are exactly zero
        assert!(data[0].abs() < 0.02 && data[16 * 7 + 15].abs() < 0.02);
        assert_eq!(data[16 * 8], 0.0);
        assert_eq!(longest_side_size(640, 480, 1024), (1024, 768, 1.6));
    }

    #[test]
    fn clip_input_centre_crops_the_long_side() {
        // left half red, right half blue, 2:1 → the centre crop holds both halves equally
        let mut img = Image::filled(20, 10, [255u8, 0, 0]);
        for y in 0..10 {
            for x in 10..20 {
                *img.get_mut(x, y).unwrap() = [0, 0, 255];
            }
        }
        let d = clip_input(&img, 10, [0.0; 3], [1.0; 3]);
        let s = 10 * 10;
        // red channel: 1 in the left columns, 0 in the right ones
        assert!((d[0] - 1.0).abs() < 1e-6 && d[9].abs() < 1e-6);
        // blue channel mirrors it
        assert!(d[2 * s].abs() < 1e-6 && (d[2 * s + 9] - 1.0).abs() < 1e-6);
    }
}
