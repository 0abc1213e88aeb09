//! [`FrameLog`]: the frames the simulator rendered, with their ground truth, and the
//! lookup that finds where an image a client sent was cut from.
//!
//! Clients send crops of camera frames (an object's view, a zoomed part, the region of a
//! press), PNG-encoded, so every pixel survives: an image is found by an exact sub-image
//! match. Rendered scenes have large flat regions, so the match is anchored on the
//! image's busiest run of pixels and then checked in full.

use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use asp_core::PixelRect;
use asp_core::image::{LabelImage, Rgb8, RgbImage};
use asp_core::models::{GroundTruth, Observation};

/// One rendered frame. Frames with the same pixels share their image.
#[derive(Debug)]
struct Entry {
    seq: u64,
    digest: u64,
    rgb: Arc<RgbImage>,
    gt: Arc<PackedTruth>,
}

/// A label image as runs of equal labels: rendered labels come in long runs, so a
/// 640×480 frame's 1.2 MB per image packs into a few kilobytes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PackedLabels {
    width: u32,
    height: u32,
    runs: Vec<(u32, u32)>,
}

impl PackedLabels {
    fn pack(img: &LabelImage) -> Self {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &l in img.pixels() {
            match runs.last_mut() {
                Some((v, n)) if *v == l => *n += 1,
                _ => runs.push((l, 1)),
            }
        }
        Self {
            width: img.width(),
            height: img.height(),
            runs,
        }
    }

    fn unpack(&self) -> LabelImage {
        let mut px = Vec::with_capacity((self.width * self.height) as usize);
        for &(v, n) in &self.runs {
            px.extend(std::iter::repeat_n(v, n as usize));
        }
        // the runs cover the image by construction
        LabelImage::from_vec(self.width, self.height, px)
            .unwrap_or_else(|_| LabelImage::filled(self.width, self.height, 0))
    }
}

/// A frame's ground truth with its label images packed.
#[derive(Debug, Clone, PartialEq)]
struct PackedTruth {
    instance_ids: PackedLabels,
    part_ids: PackedLabels,
    instances: std::collections::BTreeMap<u32, asp_core::models::GtInstance>,
    parts: std::collections::BTreeMap<u32, asp_core::models::GtPart>,
}

impl PackedTruth {
    fn pack(gt: &GroundTruth) -> Self {
        Self {
            instance_ids: PackedLabels::pack(&gt.instance_ids),
            part_ids: PackedLabels::pack(&gt.part_ids),
            instances: gt.instances.clone(),
            parts: gt.parts.clone(),
        }
    }

    fn unpack(&self) -> GroundTruth {
        GroundTruth {
            instance_ids: self.instance_ids.unpack(),
            part_ids: self.part_ids.unpack(),
            instances: self.instances.clone(),
            parts: self.parts.clone(),
        }
    }
}

/// Where an image was found: the frame's number (later frames have larger ones) and the
/// image as an observation with the frame's ground truth cut alike.
#[derive(Debug, Clone)]
pub struct Found {
    pub seq: u64,
    pub observation: Observation,
}

/// The last `capacity` rendered frames.
#[derive(Debug)]
pub struct FrameLog {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_seq: u64,
    entries: VecDeque<Entry>,
}

fn digest(img: &RgbImage) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (img.width(), img.height()).hash(&mut h);
    img.pixels().hash(&mut h);
    h.finish()
}

impl FrameLog {
    /// A log keeping the last `capacity` frames (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a simulated frame (one with ground truth); a real camera's is skipped.
    pub fn record_frame(&self, frame: &asp_core::RgbdFrame) {
        if let Some(gt) = &frame.ground_truth {
            self.record(&frame.rgb, gt);
        }
    }

    /// Records a rendered frame; the oldest goes when the log is full.
    pub fn record(&self, rgb: &RgbImage, gt: &GroundTruth) {
        let d = digest(rgb);
        let packed = PackedTruth::pack(gt);
        let mut inner = self.lock();
        // a still scene renders the same pixels again: share them, and when the truth
        // has not changed either, the frame adds nothing (a streaming camera would
        // otherwise push the frames a map's views were cut from out of the log)
        let same = inner
            .entries
            .iter()
            .rev()
            .find(|e| e.digest == d && *e.rgb == *rgb);
        if same.is_some_and(|e| *e.gt == packed) {
            return;
        }
        let rgb = same.map_or_else(|| Arc::new(rgb.clone()), |e| Arc::clone(&e.rgb));
        let gt = inner
            .entries
            .iter()
            .rev()
            .find(|e| *e.gt == packed)
            .map_or_else(|| Arc::new(packed), |e| Arc::clone(&e.gt));
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.entries.push_back(Entry {
            seq,
            digest: d,
            rgb,
            gt,
        });
        while inner.entries.len() > self.capacity {
            inner.entries.pop_front();
        }
    }

    /// Frames held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The newest frame that contains `image` — among frames older than `older_than`, when
    /// given (the "before" of a before/after pair) — as an observation with its ground
    /// truth. `None` when no frame held contains it.
    pub fn find(&self, image: &RgbImage, older_than: Option<u64>) -> Option<Found> {
        let candidates: Vec<(u64, Arc<RgbImage>, Arc<PackedTruth>)> = self
            .lock()
            .entries
            .iter()
            .rev()
            .filter(|e| older_than.is_none_or(|s| e.seq < s))
            .map(|e| (e.seq, Arc::clone(&e.rgb), Arc::clone(&e.gt)))
            .collect();
        let anchor = Anchor::of(image)?;
        // frames sharing pixels are searched once
        let mut searched: Vec<(*const RgbImage, Option<(u32, u32)>)> = Vec::new();
        for (seq, rgb, gt) in candidates {
            let key = Arc::as_ptr(&rgb);
            let at = match searched.iter().find(|(k, _)| *k == key) {
                Some((_, at)) => *at,
                None => {
                    let at = locate(&rgb, image, &anchor);
                    searched.push((key, at));
                    at
                }
            };
            if let Some((x, y)) = at {
                let rect = PixelRect {
                    x0: x,
                    y0: y,
                    x1: x + image.width(),
                    y1: y + image.height(),
                };
                return Some(Found {
                    seq,
                    observation: Observation {
                        rgb: image.clone(),
                        depth: None,
                        ground_truth: Some(gt.unpack().crop(&rect)),
                    },
                });
            }
        }
        None
    }
}

/// The run of pixels a search starts from: the row segment with the most colour changes.
#[derive(Debug)]
struct Anchor {
    x: u32,
    y: u32,
    len: u32,
}

impl Anchor {
    const LEN: u32 = 16;

    fn of(image: &RgbImage) -> Option<Self> {
        let (w, h) = (image.width(), image.height());
        if w == 0 || h == 0 {
            return None;
        }
        let len = w.min(Self::LEN);
        let px = image.pixels();
        let mut best = (0usize, 0u32, 0u32);
        for y in 0..h {
            let row = &px[(y * w) as usize..((y + 1) * w) as usize];
            let changes: Vec<usize> = row.windows(2).map(|p| usize::from(p[0] != p[1])).collect();
            // changes inside the window [x, x + len)
            let mut n: usize = changes.iter().take(len as usize - 1).sum();
            for x in 0..=(w - len) {
                if x > 0 {
                    n -= changes[x as usize - 1];
                    n += changes.get((x + len - 2) as usize).copied().unwrap_or(0);
                }
                if n > best.0 {
                    best = (n, x, y);
                }
            }
        }
        Some(Self {
            x: best.1,
            y: best.2,
            len,
        })
    }
}

fn run_at(img: &[Rgb8], stride: u32, x: u32, y: u32, len: u32) -> &[Rgb8] {
    let s = (y * stride + x) as usize;
    &img[s..s + len as usize]
}

/// Top-left corner of `image` inside `frame`, by exact match.
fn locate(frame: &RgbImage, image: &RgbImage, anchor: &Anchor) -> Option<(u32, u32)> {
    let (fw, fh) = (frame.width(), frame.height());
    let (w, h) = (image.width(), image.height());
    if w > fw || h > fh {
        return None;
    }
    let (fp, ip) = (frame.pixels(), image.pixels());
    let wanted = run_at(ip, w, anchor.x, anchor.y, anchor.len);
    for y in 0..=(fh - h) {
        let fy = y + anchor.y;
        for x in 0..=(fw - w) {
            let fx = x + anchor.x;
            if fp[(fy * fw + fx) as usize] != wanted[0]
                || run_at(fp, fw, fx, fy, anchor.len) != wanted
            {
                continue;
            }
            let whole = (0..h).all(|r| run_at(fp, fw, x, y + r, w) == run_at(ip, w, 0, r, w));
            if whole {
                return Some((x, y));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Box2;
    use asp_core::image::Image;
    use asp_core::models::GtInstance;

    /// A frame with a gradient (every pixel its own colour) and one labelled square.
    fn frame(shift: u8, instance: u32) -> (RgbImage, GroundTruth) {
        let (w, h) = (40u32, 30u32);
        let rgb = Image::from_vec(
            w,
            h,
            (0..w * h)
                .map(|i| [(i % w) as u8 * 3, (i / w) as u8 * 5, shift])
                .collect(),
        )
        .expect("size");
        let ids = Image::from_vec(
            w,
            h,
            (0..w * h)
                .map(|i| {
                    let (x, y) = (i % w, i / w);
                    u32::from((10..20).contains(&x) && (5..15).contains(&y)) * instance
                })
                .collect(),
        )
        .expect("size");
        let gt = GroundTruth {
            instance_ids: ids,
            part_ids: Image::filled(w, h, 0),
            instances: [(
                instance,
                GtInstance {
                    id: instance,
                    name: format!("object {instance}"),
                    description: String::new(),
                    fixed: false,
                },
            )]
            .into(),
            parts: Default::default(),
        };
        (rgb, gt)
    }

    fn cut(img: &RgbImage, x0: f32, y0: f32, x1: f32, y1: f32) -> RgbImage {
        img.crop(&Box2::new(x0, y0, x1, y1)).0
    }

    #[test]
    fn a_crop_is_found_with_its_ground_truth_cut_alike() {
        let log = FrameLog::new(8);
        let (rgb, gt) = frame(0, 7);
        log.record(&rgb, &gt);
        let crop = cut(&rgb, 8.0, 4.0, 22.0, 16.0);
        let found = log.find(&crop, None).expect("found");
        let g = found.observation.ground_truth.expect("ground truth");
        assert_eq!((g.instance_ids.width(), g.instance_ids.height()), (14, 12));
        // the square starts 2 px right and 1 px down of the crop's corner
        assert_eq!(g.instance_ids.get(2, 1), Some(&7));
        assert_eq!(g.instance_ids.get(1, 1), Some(&0));
        assert!(g.instances.contains_key(&7));
    }

    #[test]
    fn an_image_no_frame_contains_is_not_found() {
        let log = FrameLog::new(8);
        let (rgb, gt) = frame(0, 7);
        log.record(&rgb, &gt);
        let (other, _) = frame(9, 7);
        assert!(log.find(&cut(&other, 0.0, 0.0, 10.0, 10.0), None).is_none());
        assert!(FrameLog::new(1).find(&rgb, None).is_none());
    }

    #[test]
    fn the_newest_frame_wins_and_before_looks_further_back() {
        // the same pixels rendered twice with different truth (a press that shows nothing)
        let log = FrameLog::new(8);
        let (rgb, first) = frame(0, 3);
        let (_, second) = frame(0, 4);
        log.record(&rgb, &first);
        log.record(&rgb, &second);
        let after = log.find(&rgb, None).expect("after");
        let gt = |f: &Found| {
            *f.observation
                .ground_truth
                .as_ref()
                .expect("gt")
                .instances
                .keys()
                .next()
                .expect("instance")
        };
        assert_eq!(gt(&after), 4);
        let before = log.find(&rgb, Some(after.seq)).expect("before");
        assert_eq!(gt(&before), 3);
        assert!(log.find(&rgb, Some(before.seq)).is_none());
    }

    #[test]
    fn a_frame_repeating_the_newest_of_its_pixels_adds_nothing() {
        let log = FrameLog::new(2);
        let (rgb, gt) = frame(0, 1);
        let (other, other_gt) = frame(5, 1);
        log.record(&rgb, &gt);
        for _ in 0..5 {
            log.record(&other, &other_gt);
            log.record(&rgb, &gt);
        }
        assert_eq!(log.len(), 2);
        assert!(log.find(&rgb, None).is_some() && log.find(&other, None).is_some());
    }

    #[test]
    fn label_images_pack_into_runs_and_back() {
        let (_, gt) = frame(0, 7);
        let packed = PackedTruth::pack(&gt);
        // 40×30 with one 10×10 square: two runs per row the square crosses, merged
        // across rows elsewhere
        assert!(
            packed.instance_ids.runs.len() <= 2 * 10 + 11,
            "{}",
            packed.instance_ids.runs.len()
        );
        assert_eq!(packed.unpack(), gt);
    }

    #[test]
    fn the_oldest_frame_goes_when_full() {
        let log = FrameLog::new(2);
        for s in 0..3 {
            let (rgb, gt) = frame(s, 1);
            log.record(&rgb, &gt);
        }
        assert_eq!(log.len(), 2);
        assert!(log.find(&frame(0, 1).0, None).is_none());
        assert!(log.find(&frame(2, 1).0, None).is_some());
    }

    #[test]
    fn a_flat_crop_is_found_where_it_fits_whole() {
        // a frame that is one colour except a dot: a flat crop matches anywhere, a crop
        // with the dot only where the dot is
        let mut px = vec![[9u8, 9, 9]; 20 * 20];
        px[15 * 20 + 12] = [200, 0, 0];
        let rgb = Image::from_vec(20, 20, px).expect("size");
        let (_, mut gt) = frame(0, 5);
        gt = gt.crop(&PixelRect {
            x0: 0,
            y0: 0,
            x1: 20,
            y1: 20,
        });
        let log = FrameLog::new(4);
        log.record(&rgb, &gt);
        let dot = cut(&rgb, 10.0, 13.0, 14.0, 17.0);
        assert!(log.find(&dot, None).is_some());
        let flat = cut(&rgb, 0.0, 0.0, 5.0, 5.0);
        assert!(log.find(&flat, None).is_some());
    }
}
