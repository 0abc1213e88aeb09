//! Offline mapping from a rosbag2 recording in MCAP format: colour and depth
//! `sensor_msgs/msg/Image`, the colour camera's `sensor_msgs/msg/CameraInfo` and
//! `tf2_msgs/msg/TFMessage` (`/tf` and `/tf_static`), CDR-encoded as rosbag2 stores them.
//!
//! The file is read twice, streaming (never whole into memory): first the transforms and
//! camera info, then the images. Colour and depth images pair up by header stamp (within
//! `replay.max_sync_offset_s`); the camera pose at the colour stamp comes from the TF
//! tree (`map` → the image's `frame_id`, interpolated between recorded transforms); a
//! pair becomes a keyframe when the camera has moved or turned enough since the last one.
//!
//! The message types are small serde structs here (the ROS layer is a separate crate);
//! their CDR layout follows the Jazzy definitions.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use asp_config::sections::perception::ReplayConfig;
use asp_core::geometry::{FrameId, Isometry3, Real, Transform, UnitQuaternion, Vector3};
use asp_core::image::{DepthImage, Image, LabelImage, RgbImage};
use asp_core::models::GroundTruth;
use asp_core::{CameraIntrinsics, RgbdFrame};
use byteorder::{BigEndian, LittleEndian};
use serde::{Deserialize, Serialize};

use crate::PerceptionError;
use crate::builder::{KeyframeReport, MapBuilder};
use crate::record::{
    SIM_INSTANCE_IDS_TOPIC, SIM_LEGEND_TOPIC, SIM_PART_IDS_TOPIC, SimLegend, StringMsg,
};

/// ROS message types, as CDR-serialisable structs (field order is the wire order).
pub mod msg {
    use serde::{Deserialize, Serialize};

    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    pub struct Time {
        pub sec: i32,
        pub nanosec: u32,
    }

    impl Time {
        pub fn seconds(&self) -> f64 {
            f64::from(self.sec) + f64::from(self.nanosec) * 1e-9
        }

        pub fn from_seconds(s: f64) -> Self {
            let sec = s.floor();
            Time {
                sec: sec as i32,
                nanosec: ((s - sec) * 1e9).round().min(999_999_999.0) as u32,
            }
        }
    }

    /// std_msgs/msg/Header
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct Header {
        pub stamp: Time,
        pub frame_id: String,
    }

    /// sensor_msgs/msg/Image, borrowing its pixel data from the message buffer.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Image<'a> {
        pub header: Header,
        pub height: u32,
        pub width: u32,
        pub encoding: String,
        pub is_bigendian: u8,
        pub step: u32,
        #[serde(borrow)]
        pub data: &'a [u8],
    }

    /// sensor_msgs/msg/RegionOfInterest
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct RegionOfInterest {
        pub x_offset: u32,
        pub y_offset: u32,
        pub height: u32,
        pub width: u32,
        pub do_rectify: bool,
    }

    /// sensor_msgs/msg/CameraInfo
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct CameraInfo {
        pub header: Header,
        pub height: u32,
        pub width: u32,
        pub distortion_model: String,
        pub d: Vec<f64>,
        pub k: [f64; 9],
        pub r: [f64; 9],
        pub p: [f64; 12],
        pub binning_x: u32,
        pub binning_y: u32,
        pub roi: RegionOfInterest,
    }

    /// geometry_msgs/msg/Vector3
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    pub struct Vector3 {
        pub x: f64,
        pub y: f64,
        pub z: f64,
    }

    /// geometry_msgs/msg/Quaternion
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    pub struct Quaternion {
        pub x: f64,
        pub y: f64,
        pub z: f64,
        pub w: f64,
    }

    /// geometry_msgs/msg/Transform
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
    pub struct Transform {
        pub translation: Vector3,
        pub rotation: Quaternion,
    }

    /// geometry_msgs/msg/TransformStamped
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct TransformStamped {
        pub header: Header,
        pub child_frame_id: String,
        pub transform: Transform,
    }

    /// tf2_msgs/msg/TFMessage
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    pub struct TfMessage {
        pub transforms: Vec<TransformStamped>,
    }
}

/// Schema names as rosbag2 writes them.
pub const IMAGE_TYPE: &str = "sensor_msgs/msg/Image";
pub const CAMERA_INFO_TYPE: &str = "sensor_msgs/msg/CameraInfo";
pub const TF_TYPE: &str = "tf2_msgs/msg/TFMessage";

/// Decodes a CDR message with its 4-byte encapsulation header (`00 01` little endian,
/// `00 00` big endian).
pub fn decode_cdr<'a, T: Deserialize<'a>>(data: &'a [u8]) -> Result<T, String> {
    if data.len() < 4 {
        return Err(format!(
            "a CDR message needs at least 4 bytes, got {}",
            data.len()
        ));
    }
    let body = &data[4..];
    let result = match data[1] {
        0x01 | 0x03 => cdr_encoding::from_bytes::<T, LittleEndian>(body),
        0x00 | 0x02 => cdr_encoding::from_bytes::<T, BigEndian>(body),
        other => return Err(format!("unknown CDR encapsulation kind 0x{other:02x}")),
    };
    result.map(|(v, _)| v).map_err(|e| e.to_string())
}

/// Encodes a message as little-endian CDR with its encapsulation header, as rosbag2
/// records it.
pub fn encode_cdr<T: Serialize>(value: &T) -> Result<Vec<u8>, String> {
    let body = cdr_encoding::to_vec::<T, LittleEndian>(value).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&[0x00, 0x01, 0x00, 0x00]);
    out.extend_from_slice(&body);
    Ok(out)
}

fn to_iso(t: &msg::Transform) -> Isometry3 {
    let q = &t.rotation;
    let rot = UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
        q.w as Real,
        q.x as Real,
        q.y as Real,
        q.z as Real,
    ));
    Isometry3::from_parts(
        Vector3::new(
            t.translation.x as Real,
            t.translation.y as Real,
            t.translation.z as Real,
        )
        .into(),
        rot,
    )
}

/// One TF edge: parent, whether static, samples `(time, parent ← child)` sorted by time.
type TfEdge = (String, bool, Vec<(f64, Isometry3)>);

/// A TF tree over a recording: static and time-stamped `parent → child` transforms.
#[derive(Debug, Clone, Default)]
pub struct TfBuffer {
    /// child → its edge
    edges: HashMap<String, TfEdge>,
}

impl TfBuffer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the transforms of one TFMessage (`is_static` for `/tf_static`).
    pub fn add(&mut self, message: &msg::TfMessage, is_static: bool) {
        for t in &message.transforms {
            let parent = t.header.frame_id.trim_start_matches('/').to_owned();
            let child = t.child_frame_id.trim_start_matches('/').to_owned();
            let entry = self
                .edges
                .entry(child)
                .or_insert_with(|| (parent.clone(), is_static, Vec::new()));
            entry.0 = parent;
            entry.1 = is_static;
            let sample = (t.header.stamp.seconds(), to_iso(&t.transform));
            if is_static {
                entry.2 = vec![sample];
            } else {
                let pos = entry.2.partition_point(|s| s.0 <= sample.0);
                entry.2.insert(pos, sample);
            }
        }
    }

    /// `child → parent` at `time`, interpolated (linear translation, slerp rotation)
    /// between samples, or the nearest sample within `tolerance` outside them.
    fn edge_at(
        &self,
        child: &str,
        time: f64,
        tolerance: f64,
    ) -> Result<(String, Isometry3), String> {
        let (parent, is_static, samples) = self
            .edges
            .get(child)
            .ok_or_else(|| format!("no transform has child frame {child:?}"))?;
        let first = samples
            .first()
            .ok_or_else(|| format!("no samples for frame {child:?}"))?;
        if *is_static {
            return Ok((parent.clone(), first.1));
        }
        let i = samples.partition_point(|s| s.0 <= time);
        let iso = if i == 0 {
            if first.0 - time > tolerance {
                return Err(format!(
                    "{parent} → {child} starts at {:.3} s, after {time:.3} s",
                    first.0
                ));
            }
            first.1
        } else if i == samples.len() {
            let last = &samples[i - 1];
            if time - last.0 > tolerance {
                return Err(format!(
                    "{parent} → {child} ends at {:.3} s, before {time:.3} s",
                    last.0
                ));
            }
            last.1
        } else {
            let (a, b) = (&samples[i - 1], &samples[i]);
            let span = b.0 - a.0;
            let t = if span > 0.0 {
                ((time - a.0) / span) as Real
            } else {
                0.0
            };
            let translation = a.1.translation.vector.lerp(&b.1.translation.vector, t);
            let rotation = a.1.rotation.slerp(&b.1.rotation, t);
            Isometry3::from_parts(translation.into(), rotation)
        };
        Ok((parent.clone(), iso))
    }

    /// The chain root → … → `frame`: the pose of `frame` in the root of its tree.
    fn to_root(
        &self,
        frame: &str,
        time: f64,
        tolerance: f64,
    ) -> Result<(String, Isometry3), String> {
        let mut current = frame.to_owned();
        let mut iso = Isometry3::identity();
        for _ in 0..64 {
            if !self.edges.contains_key(&current) {
                return Ok((current, iso));
            }
            let (parent, edge) = self.edge_at(&current, time, tolerance)?;
            iso = edge * iso;
            current = parent;
        }
        Err(format!("the TF tree above {frame:?} has a cycle"))
    }

    /// The transform `target → source` at `time`: maps `source` coordinates into `target`.
    pub fn lookup(
        &self,
        target: &str,
        source: &str,
        time: f64,
        tolerance: f64,
    ) -> Result<Transform, String> {
        let target = target.trim_start_matches('/');
        let source = source.trim_start_matches('/');
        let (root_s, root_from_source) = self.to_root(source, time, tolerance)?;
        let (root_t, root_from_target) = self.to_root(target, time, tolerance)?;
        if root_s != root_t {
            return Err(format!(
                "{source:?} and {target:?} are not connected in TF (roots {root_s:?} and {root_t:?})"
            ));
        }
        Ok(Transform::new(
            target,
            source,
            root_from_target.inverse() * root_from_source,
        ))
    }
}

/// Decodes a colour image (rgb8, bgr8, rgba8, bgra8).
pub fn decode_rgb(image: &msg::Image<'_>) -> Result<RgbImage, String> {
    let (w, h, step) = (
        image.width as usize,
        image.height as usize,
        image.step as usize,
    );
    let (channels, order): (usize, [usize; 3]) = match image.encoding.as_str() {
        "rgb8" => (3, [0, 1, 2]),
        "bgr8" => (3, [2, 1, 0]),
        "rgba8" => (4, [0, 1, 2]),
        "bgra8" => (4, [2, 1, 0]),
        other => {
            return Err(format!(
                "colour encoding {other:?} is not supported (rgb8, bgr8, rgba8, bgra8)"
            ));
        }
    };
    if step < w * channels || image.data.len() < step * h {
        return Err(format!(
            "{}×{} {} image with step {step} needs {} bytes, got {}",
            w,
            h,
            image.encoding,
            step * h,
            image.data.len()
        ));
    }
    let mut px = Vec::with_capacity(w * h);
    for y in 0..h {
        let row = &image.data[y * step..y * step + w * channels];
        for p in row.chunks_exact(channels) {
            px.push([p[order[0]], p[order[1]], p[order[2]]]);
        }
    }
    Image::from_vec(image.width, image.height, px).map_err(|e| e.to_string())
}

/// Decodes a depth image: 32FC1 in metres, 16UC1 in millimetres (0 = no reading).
pub fn decode_depth(image: &msg::Image<'_>) -> Result<DepthImage, String> {
    let (w, h, step) = (
        image.width as usize,
        image.height as usize,
        image.step as usize,
    );
    let size = match image.encoding.as_str() {
        "32FC1" => 4,
        "16UC1" | "mono16" => 2,
        other => {
            return Err(format!(
                "depth encoding {other:?} is not supported (32FC1, 16UC1)"
            ));
        }
    };
    if step < w * size || image.data.len() < step * h {
        return Err(format!(
            "{}×{} {} image with step {step} needs {} bytes, got {}",
            w,
            h,
            image.encoding,
            step * h,
            image.data.len()
        ));
    }
    let big = image.is_bigendian != 0;
    let mut px = Vec::with_capacity(w * h);
    for y in 0..h {
        let row = &image.data[y * step..y * step + w * size];
        for b in row.chunks_exact(size) {
            let d = if size == 4 {
                let bytes = [b[0], b[1], b[2], b[3]];
                if big {
                    f32::from_be_bytes(bytes)
                } else {
                    f32::from_le_bytes(bytes)
                }
            } else {
                let bytes = [b[0], b[1]];
                let mm = if big {
                    u16::from_be_bytes(bytes)
                } else {
                    u16::from_le_bytes(bytes)
                };
                f32::from(mm) / 1000.0
            };
            px.push(d);
        }
    }
    Image::from_vec(image.width, image.height, px).map_err(|e| e.to_string())
}

/// Decodes an id image (`32SC1` or `32UC1`, as [`crate::record`] writes ground truth).
fn decode_ids(image: &msg::Image<'_>) -> Result<LabelImage, String> {
    if image.encoding != "32SC1" && image.encoding != "32UC1" {
        return Err(format!(
            "id image encoding {:?} is not 32SC1",
            image.encoding
        ));
    }
    let (w, h, step) = (
        image.width as usize,
        image.height as usize,
        image.step as usize,
    );
    if step < w * 4 || image.data.len() < step * h {
        return Err(format!(
            "{w}×{h} id image with step {step} needs {} bytes, got {}",
            step * h,
            image.data.len()
        ));
    }
    let big = image.is_bigendian != 0;
    let mut px = Vec::with_capacity(w * h);
    for y in 0..h {
        for b in image.data[y * step..y * step + w * 4].chunks_exact(4) {
            let bytes = [b[0], b[1], b[2], b[3]];
            px.push(if big {
                u32::from_be_bytes(bytes)
            } else {
                u32::from_le_bytes(bytes)
            });
        }
    }
    Image::from_vec(image.width, image.height, px).map_err(|e| e.to_string())
}

/// Intrinsics from a CameraInfo's `K` (the image is assumed rectified or of negligible
/// distortion: the builder back-projects with a pinhole model).
pub fn intrinsics(info: &msg::CameraInfo) -> Result<CameraIntrinsics, String> {
    let k = CameraIntrinsics {
        width: info.width,
        height: info.height,
        fx: info.k[0] as Real,
        fy: info.k[4] as Real,
        cx: info.k[2] as Real,
        cy: info.k[5] as Real,
    };
    k.validate().map_err(|e| e.to_string())?;
    Ok(k)
}

/// One message handed out by [`for_each_message`].
struct RawMessage<'a> {
    topic: &'a str,
    schema: &'a str,
    data: &'a [u8],
}

/// Streams the messages of an MCAP file in file order.
fn for_each_message(
    path: &Path,
    mut f: impl FnMut(RawMessage<'_>) -> Result<(), String>,
) -> Result<(), PerceptionError> {
    let fail = |message: String| PerceptionError::Replay {
        path: path.to_path_buf(),
        message,
    };
    let mut file = File::open(path).map_err(|e| PerceptionError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut reader = mcap::sans_io::linear_reader::LinearReader::new();
    let mut schemas: HashMap<u16, String> = HashMap::new();
    let mut channels: HashMap<u16, (String, String)> = HashMap::new();
    while let Some(event) = reader.next_event() {
        match event.map_err(|e| fail(format!("not a valid MCAP file: {e}")))? {
            mcap::sans_io::linear_reader::LinearReadEvent::ReadRequest(n) => {
                let buf = reader.insert(n);
                let read = file.read(buf).map_err(|e| fail(e.to_string()))?;
                reader.notify_read(read);
            }
            mcap::sans_io::linear_reader::LinearReadEvent::Record { data, opcode } => {
                match mcap::parse_record(opcode, data).map_err(|e| fail(e.to_string()))? {
                    mcap::records::Record::Schema { header, .. } => {
                        schemas.insert(header.id, header.name);
                    }
                    mcap::records::Record::Channel(c) => {
                        let schema = schemas.get(&c.schema_id).cloned().unwrap_or_default();
                        channels.insert(c.id, (c.topic, schema));
                    }
                    mcap::records::Record::Message { header, data } => {
                        let Some((topic, schema)) = channels.get(&header.channel_id) else {
                            return Err(fail(format!(
                                "message on unknown channel {}",
                                header.channel_id
                            )));
                        };
                        f(RawMessage {
                            topic,
                            schema,
                            data: &data,
                        })
                        .map_err(&fail)?;
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// Whether the MCAP file at `path` was recorded in simulation: it carries the
/// simulator's ground truth ([`crate::record`]) for simulated models.
pub fn recorded_in_simulation(path: &Path) -> Result<bool, PerceptionError> {
    let mut found = false;
    for_each_message(path, |m| {
        found |= m.topic == SIM_LEGEND_TOPIC;
        Ok(())
    })?;
    Ok(found)
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub rgb_images: usize,
    pub depth_images: usize,
    pub tf_messages: usize,
    /// Colour images with a depth image within the sync tolerance.
    pub pairs: usize,
    /// Pairs skipped because TF could not place the camera, with the first reason.
    pub no_pose: usize,
    pub first_pose_error: Option<String>,
    /// Pairs skipped as too close to the previous keyframe.
    pub skipped_still: usize,
    /// Frames handed on (keyframes).
    pub frames: usize,
    /// Frames that carried simulator ground truth (a bag recorded in simulation).
    pub with_ground_truth: usize,
    /// What the map builder made of each keyframe ([`replay_mcap`] only).
    pub keyframes: Vec<KeyframeReport>,
}

/// A colour or depth image waiting for its partner: header stamp and raw CDR.
struct Pending {
    stamp: f64,
    data: Vec<u8>,
}

/// Builds a map from the MCAP file at `path` into `builder` (its map frame is the TF
/// target frame).
pub fn replay_mcap(
    path: &Path,
    config: &ReplayConfig,
    builder: &mut MapBuilder,
) -> Result<ReplayReport, PerceptionError> {
    let map_frame = builder.map().frame.clone();
    let mut keyframes = Vec::new();
    let mut report = read_frames(
        path,
        config,
        std::slice::from_ref(&map_frame),
        &mut |frame| {
            keyframes.push(builder.add_keyframe(&frame)?);
            Ok(())
        },
    )?;
    report.keyframes = keyframes;
    Ok(report)
}

/// An id image waiting for its frame.
struct PendingIds {
    stamp: f64,
    ids: LabelImage,
}

/// Reads the keyframes of the MCAP file at `path`: colour and depth paired by stamp,
/// the camera placed by TF in the first of `frames` its pose resolves in (a building's
/// frame before the storey's map), a frame kept when the camera moved or turned
/// enough since the last one, each handed to `on_frame` in recording order. A bag
/// recorded in simulation ([`crate::record`]) gives each frame its ground truth back,
/// for simulated models.
pub fn read_frames(
    path: &Path,
    config: &ReplayConfig,
    frames: &[FrameId],
    on_frame: &mut dyn FnMut(RgbdFrame) -> Result<(), PerceptionError>,
) -> Result<ReplayReport, PerceptionError> {
    let fail = |message: String| PerceptionError::Replay {
        path: PathBuf::from(path),
        message,
    };
    let mut report = ReplayReport::default();
    // pass 1: transforms and camera info
    let mut tf = TfBuffer::new();
    let mut info: Option<msg::CameraInfo> = None;
    let mut legends: Vec<SimLegend> = Vec::new();
    for_each_message(path, |m| {
        if m.topic == SIM_LEGEND_TOPIC {
            let text: StringMsg =
                decode_cdr(m.data).map_err(|e| format!("{} message: {e}", m.topic))?;
            legends.push(
                serde_json::from_str(&text.data)
                    .map_err(|e| format!("{} message: {e}", m.topic))?,
            );
            return Ok(());
        }
        if config.tf_topics.iter().any(|t| t == m.topic) {
            if m.schema != TF_TYPE {
                return Err(format!(
                    "topic {} has type {:?}, expected {TF_TYPE}",
                    m.topic, m.schema
                ));
            }
            let message: msg::TfMessage =
                decode_cdr(m.data).map_err(|e| format!("{} message: {e}", m.topic))?;
            tf.add(&message, m.topic.ends_with("_static"));
            report.tf_messages += 1;
        } else if m.topic == config.camera_info_topic && info.is_none() {
            info = Some(decode_cdr(m.data).map_err(|e| format!("{} message: {e}", m.topic))?);
        }
        Ok(())
    })?;
    let info =
        info.ok_or_else(|| fail(format!("no CameraInfo on {}", config.camera_info_topic)))?;
    let k = intrinsics(&info).map_err(|e| fail(format!("{}: {e}", config.camera_info_topic)))?;
    let has_truth = !legends.is_empty();
    // pass 2: images
    let mut instance_queue: VecDeque<PendingIds> = VecDeque::new();
    let mut part_queue: VecDeque<PendingIds> = VecDeque::new();
    let mut rgb_queue: VecDeque<Pending> = VecDeque::new();
    let mut depth_queue: VecDeque<Pending> = VecDeque::new();
    let mut last_key: Option<Isometry3> = None;
    let mut error: Option<PerceptionError> = None;
    let mut done = false;
    let tolerance = config.max_sync_offset_s;
    let truth_at = |stamp: f64,
                    instances: &VecDeque<PendingIds>,
                    parts: &VecDeque<PendingIds>|
     -> Option<GroundTruth> {
        let same = |p: &&PendingIds| (p.stamp - stamp).abs() < 1e-6;
        let legend = legends.iter().find(|l| (l.stamp - stamp).abs() < 1e-6)?;
        Some(GroundTruth {
            instance_ids: instances.iter().find(same)?.ids.clone(),
            part_ids: parts.iter().find(same)?.ids.clone(),
            instances: legend.instances.clone(),
            parts: legend.parts.clone(),
        })
    };
    let process = |rgb: Pending,
                   depth_queue: &VecDeque<Pending>,
                   truth: Option<GroundTruth>,
                   report: &mut ReplayReport,
                   on_frame: &mut dyn FnMut(RgbdFrame) -> Result<(), PerceptionError>,
                   last_key: &mut Option<Isometry3>|
     -> Result<bool, PerceptionError> {
        let Some(depth) = depth_queue
            .iter()
            .filter(|d| (d.stamp - rgb.stamp).abs() <= tolerance)
            .min_by(|a, b| {
                (a.stamp - rgb.stamp)
                    .abs()
                    .total_cmp(&(b.stamp - rgb.stamp).abs())
            })
        else {
            return Ok(false);
        };
        report.pairs += 1;
        let rgb_msg: msg::Image<'_> =
            decode_cdr(&rgb.data).map_err(|e| fail(format!("{}: {e}", config.rgb_topic)))?;
        // the first of `frames` the camera's pose resolves in
        let mut found = Err(format!("no frame to look the camera up in (of {frames:?})"));
        for f in frames {
            found = tf
                .lookup(
                    f.as_str(),
                    &rgb_msg.header.frame_id,
                    rgb.stamp,
                    config.tf_tolerance_s,
                )
                .map(|p| (f, p));
            if found.is_ok() {
                break;
            }
        }
        let (root, pose) = match found {
            Ok(p) => p,
            Err(e) => {
                report.no_pose += 1;
                report.first_pose_error.get_or_insert(e);
                return Ok(false);
            }
        };
        if let Some(prev) = last_key {
            let delta = prev.inverse() * pose.iso;
            let moved = delta.translation.vector.norm();
            let turned = delta.rotation.angle().to_degrees();
            if moved < config.keyframe_min_translation && turned < config.keyframe_min_rotation_deg
            {
                report.skipped_still += 1;
                return Ok(false);
            }
        }
        let depth_msg: msg::Image<'_> =
            decode_cdr(&depth.data).map_err(|e| fail(format!("{}: {e}", config.depth_topic)))?;
        let rgb_img =
            decode_rgb(&rgb_msg).map_err(|e| fail(format!("{}: {e}", config.rgb_topic)))?;
        let depth_img =
            decode_depth(&depth_msg).map_err(|e| fail(format!("{}: {e}", config.depth_topic)))?;
        if (rgb_img.width(), rgb_img.height()) != (depth_img.width(), depth_img.height())
            || (rgb_img.width(), rgb_img.height()) != (k.width, k.height)
        {
            return Err(fail(format!(
                "colour {}×{}, depth {}×{} and camera info {}×{} differ; record depth registered to colour",
                rgb_img.width(),
                rgb_img.height(),
                depth_img.width(),
                depth_img.height(),
                k.width,
                k.height
            )));
        }
        let frame = RgbdFrame {
            rgb: rgb_img,
            depth: depth_img,
            intrinsics: k,
            camera_pose: Transform::new(
                root.clone(),
                FrameId::new(rgb_msg.header.frame_id.clone()),
                pose.iso,
            ),
            stamp: rgb.stamp,
            ground_truth: truth,
        };
        report.frames += 1;
        if frame.ground_truth.is_some() {
            report.with_ground_truth += 1;
        }
        on_frame(frame)?;
        *last_key = Some(pose.iso);
        Ok(true)
    };
    let max_keyframes = config.max_keyframes;
    let stamp_of = |data: &[u8], topic: &str| -> Result<f64, String> {
        // the header leads the message; decode just it
        let header: msg::Header = decode_cdr(data).map_err(|e| format!("{topic}: {e}"))?;
        Ok(header.stamp.seconds())
    };
    let walk = for_each_message(path, |m| {
        if done {
            return Ok(());
        }
        if m.topic == config.rgb_topic {
            report.rgb_images += 1;
            rgb_queue.push_back(Pending {
                stamp: stamp_of(m.data, m.topic)?,
                data: m.data.to_vec(),
            });
        } else if m.topic == config.depth_topic {
            report.depth_images += 1;
            depth_queue.push_back(Pending {
                stamp: stamp_of(m.data, m.topic)?,
                data: m.data.to_vec(),
            });
            if depth_queue.len() > 32 {
                depth_queue.pop_front();
            }
        } else if has_truth && (m.topic == SIM_INSTANCE_IDS_TOPIC || m.topic == SIM_PART_IDS_TOPIC)
        {
            let image: msg::Image<'_> =
                decode_cdr(m.data).map_err(|e| format!("{}: {e}", m.topic))?;
            let queue = if m.topic == SIM_INSTANCE_IDS_TOPIC {
                &mut instance_queue
            } else {
                &mut part_queue
            };
            queue.push_back(PendingIds {
                stamp: image.header.stamp.seconds(),
                ids: decode_ids(&image).map_err(|e| format!("{}: {e}", m.topic))?,
            });
            if queue.len() > 32 {
                queue.pop_front();
            }
        } else {
            return Ok(());
        }
        // a colour image is ready once a depth image at or after its stamp arrived (its
        // closest partner is then among the buffered ones) and, in a bag with ground
        // truth, its part ids (recorded last)
        let newest_depth = depth_queue.back().map_or(f64::NEG_INFINITY, |d| d.stamp);
        let newest_truth = if has_truth {
            part_queue.back().map_or(f64::NEG_INFINITY, |d| d.stamp)
        } else {
            f64::INFINITY
        };
        while rgb_queue
            .front()
            .is_some_and(|r| newest_depth >= r.stamp && newest_truth >= r.stamp - 1e-6)
        {
            let Some(rgb) = rgb_queue.pop_front() else {
                break;
            };
            let truth = truth_at(rgb.stamp, &instance_queue, &part_queue);
            match process(
                rgb,
                &depth_queue,
                truth,
                &mut report,
                on_frame,
                &mut last_key,
            ) {
                Ok(_) => {}
                Err(e) => {
                    error = Some(e);
                    done = true;
                    return Ok(());
                }
            }
            if max_keyframes > 0 && report.frames >= max_keyframes {
                done = true;
                return Ok(());
            }
        }
        if rgb_queue.len() > 32 {
            rgb_queue.pop_front();
        }
        Ok(())
    });
    walk?;
    if let Some(e) = error {
        return Err(e);
    }
    // colour images left at the end pair with what depth there is
    while !done && let Some(rgb) = rgb_queue.pop_front() {
        let truth = truth_at(rgb.stamp, &instance_queue, &part_queue);
        process(
            rgb,
            &depth_queue,
            truth,
            &mut report,
            on_frame,
            &mut last_key,
        )?;
        if max_keyframes > 0 && report.frames >= max_keyframes {
            break;
        }
    }
    Ok(report)
}

/// The ros2msg schema text rosbag2 stores for each type (the definition with its
/// dependencies, separated by `===` lines), for writers of test recordings.
pub fn ros2msg_schema(type_name: &str) -> Option<&'static str> {
    SCHEMAS.get(type_name).copied()
}

static SCHEMAS: std::sync::LazyLock<BTreeMap<&'static str, &'static str>> =
    std::sync::LazyLock::new(|| {
        BTreeMap::from([
            (IMAGE_TYPE, IMAGE_SCHEMA),
            (CAMERA_INFO_TYPE, CAMERA_INFO_SCHEMA),
            (TF_TYPE, TF_SCHEMA),
        ])
    });

static IMAGE_SCHEMA: &str = "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n\
================================================================================\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n\
================================================================================\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";

static CAMERA_INFO_SCHEMA: &str = "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\nfloat64[] d\nfloat64[9] k\nfloat64[9] r\nfloat64[12] p\nuint32 binning_x\nuint32 binning_y\nRegionOfInterest roi\n\
================================================================================\nMSG: sensor_msgs/RegionOfInterest\nuint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n\
================================================================================\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n\
================================================================================\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";

static TF_SCHEMA: &str = "geometry_msgs/TransformStamped[] transforms\n\
================================================================================\nMSG: geometry_msgs/TransformStamped\nstd_msgs/Header header\nstring child_frame_id\nTransform transform\n\
================================================================================\nMSG: geometry_msgs/Transform\nVector3 translation\nQuaternion rotation\n\
================================================================================\nMSG: geometry_msgs/Quaternion\nfloat64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n\
================================================================================\nMSG: geometry_msgs/Vector3\nfloat64 x\nfloat64 y\nfloat64 z\n\
================================================================================\nMSG: std_msgs/Header\nbuiltin_interfaces/Time stamp\nstring frame_id\n\
================================================================================\nMSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_carry_their_dependencies() {
        const SEP: &str =
            "================================================================================";
        const HEADER_DEF: &str = "builtin_interfaces/Time stamp\nstring frame_id";
        const TIME_DEF: &str = "int32 sec\nuint32 nanosec";
        for (name, text) in SCHEMAS.iter() {
            assert!(text.contains(SEP), "{name}");
            assert!(
                text.contains(HEADER_DEF) && text.contains(TIME_DEF),
                "{name}"
            );
        }
    }

    #[test]
    fn cdr_round_trip_and_header_prefix() {
        let m = msg::TfMessage {
            transforms: vec![msg::TransformStamped {
                header: msg::Header {
                    stamp: msg::Time {
                        sec: 3,
                        nanosec: 500_000_000,
                    },
                    frame_id: "map".into(),
                },
                child_frame_id: "base_link".into(),
                transform: msg::Transform {
                    translation: msg::Vector3 {
                        x: 1.0,
                        y: 2.0,
                        z: 3.0,
                    },
                    rotation: msg::Quaternion {
                        x: 0.0,
                        y: 0.0,
                        z: 0.0,
                        w: 1.0,
                    },
                },
            }],
        };
        let bytes = encode_cdr(&m).unwrap();
        assert_eq!(&bytes[..4], &[0, 1, 0, 0]);
        // sequence length 1, then sec = 3 (little endian)
        assert_eq!(&bytes[4..12], &[1, 0, 0, 0, 3, 0, 0, 0]);
        let back: msg::TfMessage = decode_cdr(&bytes).unwrap();
        assert_eq!(back, m);
        assert!(decode_cdr::<msg::TfMessage>(&bytes[..3]).is_err());
    }

    #[test]
    fn tf_chains_and_interpolates() {
        let mut tf = TfBuffer::new();
        let ts = |parent: &str, child: &str, t: f64, x: f64, yaw: f64| msg::TransformStamped {
            header: msg::Header {
                stamp: msg::Time::from_seconds(t),
                frame_id: parent.into(),
            },
            child_frame_id: child.into(),
            transform: msg::Transform {
                translation: msg::Vector3 { x, y: 0.0, z: 0.0 },
                rotation: msg::Quaternion {
                    x: 0.0,
                    y: 0.0,
                    z: (yaw / 2.0).sin(),
                    w: (yaw / 2.0).cos(),
                },
            },
        };
        tf.add(
            &msg::TfMessage {
                transforms: vec![
                    ts("map", "base_link", 0.0, 0.0, 0.0),
                    ts("map", "base_link", 2.0, 2.0, 0.0),
                ],
            },
            false,
        );
        tf.add(
            &msg::TfMessage {
                transforms: vec![ts(
                    "base_link",
                    "camera",
                    0.0,
                    0.5,
                    std::f64::consts::FRAC_PI_2,
                )],
            },
            true,
        );
        let t = tf.lookup("map", "camera", 1.0, 0.1).unwrap();
        // base at x = 1 (halfway), camera 0.5 further, yawed 90°
        let p = t.apply(&asp_core::geometry::Point3::new(1.0, 0.0, 0.0));
        assert!(
            (p - asp_core::geometry::Point3::new(1.5, 1.0, 0.0)).norm() < 1e-5,
            "{p:?}"
        );
        // outside the recorded span beyond the tolerance
        assert!(
            tf.lookup("map", "camera", 3.0, 0.1)
                .unwrap_err()
                .contains("ends")
        );
        assert!(
            tf.lookup("map", "nowhere", 1.0, 0.1)
                .unwrap_err()
                .contains("not connected")
        );
        // the inverse direction
        let back = tf.lookup("camera", "map", 1.0, 0.1).unwrap();
        let q = back.apply(&p);
        assert!((q - asp_core::geometry::Point3::new(1.0, 0.0, 0.0)).norm() < 1e-5);
    }

    #[test]
    fn images_decode_with_strides_and_encodings() {
        // 2×1 bgr8 with one byte of row padding
        let data = [3u8, 2, 1, 6, 5, 4, 0];
        let img = msg::Image {
            header: msg::Header::default(),
            height: 1,
            width: 2,
            encoding: "bgr8".into(),
            is_bigendian: 0,
            step: 7,
            data: &data,
        };
        assert_eq!(decode_rgb(&img).unwrap().pixels(), &[[1, 2, 3], [4, 5, 6]]);
        let mm: Vec<u8> = [1500u16, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let depth = msg::Image {
            encoding: "16UC1".into(),
            step: 4,
            data: &mm,
            ..img.clone()
        };
        assert_eq!(decode_depth(&depth).unwrap().pixels(), &[1.5, 0.0]);
        let bad = msg::Image {
            encoding: "yuv422".into(),
            ..img
        };
        assert!(decode_rgb(&bad).unwrap_err().contains("yuv422"));
    }
}
