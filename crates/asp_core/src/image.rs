//! Row-major images and 2D regions: RGB, depth, masks, label images, pixel boxes.
//!
//! Pixel coordinates: `x` grows to the right, `y` grows down, pixel `(x, y)` covers
//! `[x, x+1) × [y, y+1)`. Boxes are half-open in the same continuous coordinates, so a
//! box `[0, 2) × [0, 2)` covers exactly four pixels.

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// An 8-bit RGB pixel.
pub type Rgb8 = [u8; 3];

/// A dense row-major image of `T`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image<T> {
    width: u32,
    height: u32,
    data: Vec<T>,
}

/// RGB image, 8 bits per channel.
pub type RgbImage = Image<Rgb8>;
/// Depth image in metres; `0.0` or a non-finite value means "no reading".
pub type DepthImage = Image<f32>;
/// Per-pixel instance or part labels; `0` is background.
pub type LabelImage = Image<u32>;

impl<T: Clone> Image<T> {
    /// An image filled with `value`.
    pub fn filled(width: u32, height: u32, value: T) -> Self {
        Self {
            width,
            height,
            data: vec![value; width as usize * height as usize],
        }
    }

    /// The pixels inside `roi` (clamped to the image) as a new image, with the clamped
    /// integer box it was cut from.
    pub fn crop(&self, roi: &Box2) -> (Self, PixelRect) {
        let rect = roi.to_pixel_rect(self.width, self.height);
        let mut data = Vec::with_capacity(rect.area() as usize);
        for y in rect.y0..rect.y1 {
            let row = y as usize * self.width as usize;
            data.extend_from_slice(&self.data[row + rect.x0 as usize..row + rect.x1 as usize]);
        }
        (
            Self {
                width: rect.width(),
                height: rect.height(),
                data,
            },
            rect,
        )
    }
}

impl<T> Image<T> {
    /// An image from row-major pixels; fails when `data` does not hold `width × height`.
    pub fn from_vec(width: u32, height: u32, data: Vec<T>) -> Result<Self, CoreError> {
        let expected = width as usize * height as usize;
        if data.len() != expected {
            return Err(CoreError::ImageSize {
                width,
                height,
                len: data.len(),
            });
        }
        Ok(Self {
            width,
            height,
            data,
        })
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    pub fn pixels(&self) -> &[T] {
        &self.data
    }

    pub fn pixels_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    pub fn into_pixels(self) -> Vec<T> {
        self.data
    }

    /// The pixel at `(x, y)`, or `None` outside the image.
    pub fn get(&self, x: u32, y: u32) -> Option<&T> {
        (x < self.width && y < self.height)
            .then(|| &self.data[y as usize * self.width as usize + x as usize])
    }

    /// Mutable pixel at `(x, y)`, or `None` outside the image.
    pub fn get_mut(&mut self, x: u32, y: u32) -> Option<&mut T> {
        (x < self.width && y < self.height)
            .then(|| &mut self.data[y as usize * self.width as usize + x as usize])
    }

    /// Iterates `(x, y, &pixel)` in row-major order.
    pub fn enumerate(&self) -> impl Iterator<Item = (u32, u32, &T)> {
        let w = self.width.max(1);
        self.data
            .iter()
            .enumerate()
            .map(move |(i, p)| ((i as u32) % w, (i as u32) / w, p))
    }

    /// Applies `f` to every pixel.
    pub fn map<U>(&self, f: impl FnMut(&T) -> U) -> Image<U> {
        Image {
            width: self.width,
            height: self.height,
            data: self.data.iter().map(f).collect(),
        }
    }
}

/// An axis-aligned integer pixel rectangle, half-open: `x0 ≤ x < x1`, `y0 ≤ y < y1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PixelRect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl PixelRect {
    pub fn width(&self) -> u32 {
        self.x1.saturating_sub(self.x0)
    }
    pub fn height(&self) -> u32 {
        self.y1.saturating_sub(self.y0)
    }
    pub fn area(&self) -> u64 {
        u64::from(self.width()) * u64::from(self.height())
    }
    /// Whether the rectangle touches the border of a `width × height` image.
    pub fn touches_border(&self, width: u32, height: u32) -> bool {
        self.x0 == 0 || self.y0 == 0 || self.x1 >= width || self.y1 >= height
    }
    pub fn to_box(&self) -> Box2 {
        Box2::new(
            self.x0 as f32,
            self.y0 as f32,
            self.x1 as f32,
            self.y1 as f32,
        )
    }
}

/// An axis-aligned box in continuous pixel coordinates, `[x0, x1) × [y0, y1)`.
///
/// A box with `x1 ≤ x0` or `y1 ≤ y0` is empty and has zero area.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Box2 {
    pub x0: f32,
    pub y0: f32,
    pub x1: f32,
    pub y1: f32,
}

impl Box2 {
    pub const fn new(x0: f32, y0: f32, x1: f32, y1: f32) -> Self {
        Self { x0, y0, x1, y1 }
    }

    /// A box from its centre and size.
    pub fn from_center(cx: f32, cy: f32, w: f32, h: f32) -> Self {
        Self::new(cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0)
    }

    pub fn width(&self) -> f32 {
        (self.x1 - self.x0).max(0.0)
    }
    pub fn height(&self) -> f32 {
        (self.y1 - self.y0).max(0.0)
    }
    pub fn area(&self) -> f32 {
        self.width() * self.height()
    }
    pub fn is_empty(&self) -> bool {
        self.area() <= 0.0
    }
    pub fn center(&self) -> (f32, f32) {
        ((self.x0 + self.x1) / 2.0, (self.y0 + self.y1) / 2.0)
    }

    pub fn intersection(&self, other: &Box2) -> Box2 {
        Box2::new(
            self.x0.max(other.x0),
            self.y0.max(other.y0),
            self.x1.min(other.x1),
            self.y1.min(other.y1),
        )
    }

    /// Intersection over union; two empty boxes have IoU 0.
    pub fn iou(&self, other: &Box2) -> f32 {
        let inter = self.intersection(other).area();
        let union = self.area() + other.area() - inter;
        if union <= 0.0 { 0.0 } else { inter / union }
    }

    /// The box grown by `factor` around its centre (2.0 doubles width and height).
    pub fn scaled(&self, factor: f32) -> Box2 {
        let (cx, cy) = self.center();
        Box2::from_center(cx, cy, self.width() * factor, self.height() * factor)
    }

    /// The box grown by `margin` pixels on every side.
    pub fn padded(&self, margin: f32) -> Box2 {
        Box2::new(
            self.x0 - margin,
            self.y0 - margin,
            self.x1 + margin,
            self.y1 + margin,
        )
    }

    /// The box shifted by `(dx, dy)`.
    pub fn translated(&self, dx: f32, dy: f32) -> Box2 {
        Box2::new(self.x0 + dx, self.y0 + dy, self.x1 + dx, self.y1 + dy)
    }

    /// The pixels whose centres lie inside the box, clamped to a `width × height` image.
    pub fn to_pixel_rect(&self, width: u32, height: u32) -> PixelRect {
        // pixel i is inside when its centre i + 0.5 lies in [x0, x1)
        // and ends (exclusive) at the first centre at or past x1: both are ceil(v - 0.5)
        let edge = |v: f32, max: u32| ((v - 0.5).ceil().max(0.0) as u32).min(max);
        let r = PixelRect {
            x0: edge(self.x0, width),
            y0: edge(self.y0, height),
            x1: edge(self.x1, width),
            y1: edge(self.y1, height),
        };
        if r.x1 <= r.x0 || r.y1 <= r.y0 {
            PixelRect {
                x0: r.x0,
                y0: r.y0,
                x1: r.x0,
                y1: r.y0,
            }
        } else {
            r
        }
    }
}

/// A binary mask the size of its image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mask(Image<bool>);

impl Mask {
    /// An all-false mask.
    pub fn empty(width: u32, height: u32) -> Self {
        Mask(Image::filled(width, height, false))
    }

    pub fn from_image(image: Image<bool>) -> Self {
        Mask(image)
    }

    /// The mask of pixels of `labels` equal to `label`.
    pub fn from_label(labels: &LabelImage, label: u32) -> Self {
        Mask(labels.map(|&l| l == label))
    }

    /// `fill(b)`: the mask of the pixels whose centres lie inside `b` (SPEC §2.5).
    pub fn fill_box(width: u32, height: u32, b: &Box2) -> Self {
        let mut mask = Self::empty(width, height);
        let r = b.to_pixel_rect(width, height);
        for y in r.y0..r.y1 {
            for x in r.x0..r.x1 {
                if let Some(p) = mask.0.get_mut(x, y) {
                    *p = true;
                }
            }
        }
        mask
    }

    pub fn width(&self) -> u32 {
        self.0.width()
    }
    pub fn height(&self) -> u32 {
        self.0.height()
    }
    pub fn image(&self) -> &Image<bool> {
        &self.0
    }
    pub fn get(&self, x: u32, y: u32) -> bool {
        self.0.get(x, y).copied().unwrap_or(false)
    }
    pub fn set(&mut self, x: u32, y: u32, value: bool) {
        if let Some(p) = self.0.get_mut(x, y) {
            *p = value;
        }
    }

    /// The set pixel deepest inside the mask and its chessboard distance to the nearest
    /// unset pixel or the image border (1 for a pixel on the mask's edge); `None` for an
    /// empty mask. Ties go to the first in row order.
    pub fn interior_point(&self) -> Option<(u32, u32, u32)> {
        let (w, h) = (self.width() as usize, self.height() as usize);
        // two-pass chessboard distance transform; outside the image counts as unset
        let mut d = vec![0u32; w * h];
        for y in 0..h {
            for x in 0..w {
                if !self.get(x as u32, y as u32) {
                    continue;
                }
                let mut m = u32::MAX;
                for (dx, dy) in [(-1i64, 0i64), (-1, -1), (0, -1), (1, -1)] {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    m = m.min(if nx < 0 || ny < 0 || nx >= w as i64 {
                        0
                    } else {
                        d[ny as usize * w + nx as usize]
                    });
                }
                d[y * w + x] = m + 1;
            }
        }
        let mut best: Option<(u32, u32, u32)> = None;
        for y in (0..h).rev() {
            for x in (0..w).rev() {
                if d[y * w + x] == 0 {
                    continue;
                }
                let mut m = d[y * w + x] - 1;
                for (dx, dy) in [(1i64, 0i64), (1, 1), (0, 1), (-1, 1)] {
                    let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                    m = m.min(if nx < 0 || nx >= w as i64 || ny >= h as i64 {
                        0
                    } else {
                        d[ny as usize * w + nx as usize]
                    });
                }
                d[y * w + x] = m + 1;
            }
        }
        for y in 0..h {
            for x in 0..w {
                let v = d[y * w + x];
                if v > 0 && best.is_none_or(|b| v > b.2) {
                    best = Some((x as u32, y as u32, v));
                }
            }
        }
        best
    }

    /// Number of set pixels.
    pub fn area(&self) -> u64 {
        self.0.pixels().iter().filter(|&&b| b).count() as u64
    }

    pub fn is_empty(&self) -> bool {
        !self.0.pixels().iter().any(|&b| b)
    }

    /// Iterates the `(x, y)` of set pixels.
    pub fn set_pixels(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.0
            .enumerate()
            .filter(|(_, _, b)| **b)
            .map(|(x, y, _)| (x, y))
    }

    /// The tight bounding box of the set pixels, `None` for an empty mask.
    pub fn bounding_rect(&self) -> Option<PixelRect> {
        let mut rect: Option<PixelRect> = None;
        for (x, y) in self.set_pixels() {
            let r = rect.get_or_insert(PixelRect {
                x0: x,
                y0: y,
                x1: x + 1,
                y1: y + 1,
            });
            r.x0 = r.x0.min(x);
            r.y0 = r.y0.min(y);
            r.x1 = r.x1.max(x + 1);
            r.y1 = r.y1.max(y + 1);
        }
        rect
    }

    /// Intersection and union pixel counts; fails on masks of different sizes.
    pub fn intersection_union(&self, other: &Mask) -> Result<(u64, u64), CoreError> {
        if self.width() != other.width() || self.height() != other.height() {
            return Err(CoreError::MaskSize {
                a: (self.width(), self.height()),
                b: (other.width(), other.height()),
            });
        }
        let (mut inter, mut union) = (0u64, 0u64);
        for (&a, &b) in self.0.pixels().iter().zip(other.0.pixels()) {
            inter += u64::from(a && b);
            union += u64::from(a || b);
        }
        Ok((inter, union))
    }

    /// Intersection over union. Two empty masks agree perfectly and score 1.0 (the
    /// convention of the ReasonSeg/ReasonAff evaluation code: "no object" predicted for
    /// "no object").
    pub fn iou(&self, other: &Mask) -> Result<f32, CoreError> {
        let (inter, union) = self.intersection_union(other)?;
        Ok(if union == 0 {
            1.0
        } else {
            inter as f32 / union as f32
        })
    }

    /// Pixel-wise AND.
    pub fn and(&self, other: &Mask) -> Result<Mask, CoreError> {
        self.zip_with(other, |a, b| a && b)
    }

    /// Pixel-wise OR.
    pub fn or(&self, other: &Mask) -> Result<Mask, CoreError> {
        self.zip_with(other, |a, b| a || b)
    }

    fn zip_with(&self, other: &Mask, f: impl Fn(bool, bool) -> bool) -> Result<Mask, CoreError> {
        if self.width() != other.width() || self.height() != other.height() {
            return Err(CoreError::MaskSize {
                a: (self.width(), self.height()),
                b: (other.width(), other.height()),
            });
        }
        let data = self
            .0
            .pixels()
            .iter()
            .zip(other.0.pixels())
            .map(|(&a, &b)| f(a, b))
            .collect();
        Ok(Mask(Image::from_vec(self.width(), self.height(), data)?))
    }

    /// The mask cut to `rect` (clamped), e.g. to move a full-image mask into a crop.
    pub fn crop(&self, rect: &PixelRect) -> Mask {
        Mask(self.0.crop(&rect.to_box()).0)
    }

    /// A `width × height` mask with `self` pasted at `(rect.x0, rect.y0)`: the inverse of
    /// [`Mask::crop`], used to project a mask predicted on a crop back to the full image.
    pub fn paste_into(&self, rect: &PixelRect, width: u32, height: u32) -> Mask {
        let mut full = Mask::empty(width, height);
        for (x, y) in self.set_pixels() {
            full.set(rect.x0 + x, rect.y0 + y, true);
        }
        full
    }

    /// Resizes by nearest neighbour, e.g. to bring a zoomed prediction back to crop size.
    pub fn resize_nearest(&self, width: u32, height: u32) -> Mask {
        let mut out = Mask::empty(width, height);
        if self.width() == 0 || self.height() == 0 {
            return out;
        }
        for y in 0..height {
            let sy = ((y as f32 + 0.5) * self.height() as f32 / height as f32) as u32;
            for x in 0..width {
                let sx = ((x as f32 + 0.5) * self.width() as f32 / width as f32) as u32;
                out.set(
                    x,
                    y,
                    self.get(sx.min(self.width() - 1), sy.min(self.height() - 1)),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn from_vec_rejects_wrong_length() {
        let err = Image::from_vec(2, 2, vec![0u8; 3]).unwrap_err();
        assert!(err.to_string().contains("2×2"), "{err}");
    }

    #[test]
    fn box_iou_hand_computed() {
        let a = Box2::new(0.0, 0.0, 2.0, 2.0);
        let b = Box2::new(1.0, 1.0, 3.0, 3.0);
        // intersection 1, union 4 + 4 - 1 = 7
        assert_relative_eq!(a.iou(&b), 1.0 / 7.0);
        assert_relative_eq!(a.iou(&a), 1.0);
        let far = Box2::new(10.0, 10.0, 11.0, 11.0);
        assert_eq!(a.iou(&far), 0.0);
        let empty = Box2::new(1.0, 1.0, 1.0, 5.0);
        assert_eq!(empty.iou(&empty), 0.0);
    }

    #[test]
    fn fill_box_covers_pixel_centres() {
        let m = Mask::fill_box(4, 4, &Box2::new(0.0, 0.0, 2.0, 2.0));
        assert_eq!(m.area(), 4);
        assert!(m.get(1, 1) && !m.get(2, 2));
        // centres at 0.5, 1.5 are inside [0.4, 1.6); 2.5 is not
        let m = Mask::fill_box(4, 4, &Box2::new(0.4, 0.4, 1.6, 1.6));
        assert_eq!(m.area(), 4);
        // a box reaching outside is clamped
        let m = Mask::fill_box(4, 4, &Box2::new(-5.0, -5.0, 50.0, 1.0));
        assert_eq!(m.area(), 4);
        // an empty box fills nothing
        assert!(Mask::fill_box(4, 4, &Box2::new(2.0, 2.0, 2.0, 3.0)).is_empty());
    }

    #[test]
    fn mask_iou_hand_computed_and_empty() {
        let a = Mask::fill_box(4, 4, &Box2::new(0.0, 0.0, 2.0, 2.0));
        let b = Mask::fill_box(4, 4, &Box2::new(1.0, 0.0, 3.0, 2.0));
        // intersection 2, union 6
        assert_relative_eq!(a.iou(&b).unwrap(), 2.0 / 6.0);
        let e = Mask::empty(4, 4);
        assert_eq!(e.iou(&e).unwrap(), 1.0, "empty vs empty agrees");
        assert_eq!(a.iou(&e).unwrap(), 0.0);
        assert!(a.iou(&Mask::empty(3, 4)).is_err());
    }

    #[test]
    fn crop_and_paste_round_trip() {
        let mut m = Mask::empty(6, 5);
        m.set(2, 3, true);
        m.set(3, 3, true);
        let rect = PixelRect {
            x0: 1,
            y0: 2,
            x1: 5,
            y1: 5,
        };
        let c = m.crop(&rect);
        assert_eq!((c.width(), c.height()), (4, 3));
        assert!(c.get(1, 1) && c.get(2, 1));
        assert_eq!(c.paste_into(&rect, 6, 5), m);
        assert_eq!(
            m.bounding_rect().unwrap().to_box(),
            Box2::new(2.0, 3.0, 4.0, 4.0)
        );
    }

    #[test]
    fn resize_nearest_preserves_shape() {
        let m = Mask::fill_box(4, 4, &Box2::new(0.0, 0.0, 2.0, 4.0));
        let big = m.resize_nearest(8, 8);
        assert_eq!(big.area(), 32);
        assert_eq!(big.resize_nearest(4, 4), m);
    }

    #[test]
    fn image_crop_clamps() {
        let img = Image::from_vec(3, 2, vec![1, 2, 3, 4, 5, 6]).unwrap();
        let (c, r) = img.crop(&Box2::new(1.0, -3.0, 9.0, 1.0));
        assert_eq!(
            r,
            PixelRect {
                x0: 1,
                y0: 0,
                x1: 3,
                y1: 1
            }
        );
        assert_eq!(c.pixels(), &[2, 3]);
        assert!(r.touches_border(3, 2));
    }
}
