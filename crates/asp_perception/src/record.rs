//! Recording what the cameras saw to a rosbag2 MCAP file, as `ros2 bag record` would:
//! colour and registered depth `sensor_msgs/msg/Image`, the colour camera's
//! `sensor_msgs/msg/CameraInfo`, and the camera pose on `/tf`, on the topics
//! [`ReplayConfig`] names, so [`crate::replay`] (and `asp map --bag`, `asp memory build
//! --bag`) reads the file back exactly as it reads a real robot's bag.
//!
//! A simulated frame's ground truth goes on three extra topics under `/asp/sim/`
//! (instance and part id images, `32SC1`, and the legend as JSON in a
//! `std_msgs/msg/String`). Only simulated models read them back, as they read ground
//! truth live; a real robot's bag has none and the real models are used.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use asp_config::sections::perception::ReplayConfig;
use asp_core::RgbdFrame;
use asp_core::models::{GroundTruth, GtInstance, GtPart};
use serde::{Deserialize, Serialize};

use crate::PerceptionError;
use crate::replay::{CAMERA_INFO_TYPE, IMAGE_TYPE, TF_TYPE, encode_cdr, msg, ros2msg_schema};

/// Simulator ground truth: instance ids per pixel (`32SC1`).
pub const SIM_INSTANCE_IDS_TOPIC: &str = "/asp/sim/instance_ids";
/// Simulator ground truth: part ids per pixel (`32SC1`).
pub const SIM_PART_IDS_TOPIC: &str = "/asp/sim/part_ids";
/// Simulator ground truth: the legend of the id images ([`SimLegend`] as JSON).
pub const SIM_LEGEND_TOPIC: &str = "/asp/sim/legend";
pub const STRING_TYPE: &str = "std_msgs/msg/String";

/// The legend of one frame's id images, stamped with the colour image's stamp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimLegend {
    pub stamp: f64,
    pub instances: BTreeMap<u32, GtInstance>,
    pub parts: BTreeMap<u32, GtPart>,
}

/// std_msgs/msg/String
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StringMsg {
    pub data: String,
}

struct Channels {
    rgb: u16,
    depth: u16,
    info: u16,
    tf: u16,
    instance_ids: u16,
    part_ids: u16,
    legend: u16,
}

/// Writes frames to an MCAP file as they are captured; [`TourRecorder::finish`] closes it.
pub struct TourRecorder {
    writer: mcap::Writer<BufWriter<File>>,
    channels: Channels,
    path: PathBuf,
    sequence: u32,
    frames: usize,
}

impl std::fmt::Debug for TourRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TourRecorder")
            .field("path", &self.path)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl TourRecorder {
    /// Creates (or truncates) `path` and declares the channels of `topics`.
    pub fn create(path: &Path, topics: &ReplayConfig) -> Result<Self, PerceptionError> {
        let fail = |message: String| PerceptionError::Io {
            path: path.to_path_buf(),
            message,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
        }
        let file = File::create(path).map_err(|e| fail(e.to_string()))?;
        let mut writer = mcap::WriteOptions::new()
            .profile("ros2")
            .create(BufWriter::new(file))
            .map_err(|e| fail(e.to_string()))?;
        let mut channel = |topic: &str, ty: &str| -> Result<u16, PerceptionError> {
            let schema_text = ros2msg_schema(ty).unwrap_or("string data\n");
            let schema = writer
                .add_schema(ty, "ros2msg", schema_text.as_bytes())
                .map_err(|e| fail(e.to_string()))?;
            let meta = BTreeMap::from([("offered_qos_profiles".to_string(), String::new())]);
            writer
                .add_channel(schema, topic, "cdr", &meta)
                .map_err(|e| fail(e.to_string()))
        };
        let tf_topic = topics
            .tf_topics
            .iter()
            .find(|t| !t.ends_with("_static"))
            .cloned()
            .unwrap_or_else(|| "/tf".to_owned());
        let channels = Channels {
            rgb: channel(&topics.rgb_topic, IMAGE_TYPE)?,
            depth: channel(&topics.depth_topic, IMAGE_TYPE)?,
            info: channel(&topics.camera_info_topic, CAMERA_INFO_TYPE)?,
            tf: channel(&tf_topic, TF_TYPE)?,
            instance_ids: channel(SIM_INSTANCE_IDS_TOPIC, IMAGE_TYPE)?,
            part_ids: channel(SIM_PART_IDS_TOPIC, IMAGE_TYPE)?,
            legend: channel(SIM_LEGEND_TOPIC, STRING_TYPE)?,
        };
        Ok(TourRecorder {
            writer,
            channels,
            path: path.to_path_buf(),
            sequence: 0,
            frames: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    fn put(&mut self, channel: u16, stamp: f64, data: &[u8]) -> Result<(), PerceptionError> {
        self.sequence += 1;
        let ns = (stamp.max(0.0) * 1e9) as u64;
        self.writer
            .write_to_known_channel(
                &mcap::records::MessageHeader {
                    channel_id: channel,
                    sequence: self.sequence,
                    log_time: ns,
                    publish_time: ns,
                },
                data,
            )
            .map_err(|e| PerceptionError::Io {
                path: self.path.clone(),
                message: e.to_string(),
            })
    }

    fn encode<T: Serialize>(&self, what: &str, value: &T) -> Result<Vec<u8>, PerceptionError> {
        encode_cdr(value).map_err(|e| PerceptionError::Io {
            path: self.path.clone(),
            message: format!("encoding {what}: {e}"),
        })
    }

    /// Records one frame: the camera pose on `/tf`, camera info, colour, depth, and the
    /// ground truth of a simulated frame.
    pub fn record(&mut self, frame: &RgbdFrame) -> Result<(), PerceptionError> {
        let stamp = frame.stamp;
        let camera = frame.camera_pose.child.as_str().to_owned();
        let header = msg::Header {
            stamp: msg::Time::from_seconds(stamp),
            frame_id: camera.clone(),
        };
        let iso = frame.camera_pose.iso;
        let (t, q) = (iso.translation.vector, iso.rotation.quaternion());
        let tf = msg::TfMessage {
            transforms: vec![msg::TransformStamped {
                header: msg::Header {
                    stamp: header.stamp,
                    frame_id: frame.camera_pose.parent.as_str().to_owned(),
                },
                child_frame_id: camera.clone(),
                transform: msg::Transform {
                    translation: msg::Vector3 {
                        x: f64::from(t.x),
                        y: f64::from(t.y),
                        z: f64::from(t.z),
                    },
                    rotation: msg::Quaternion {
                        x: f64::from(q.i),
                        y: f64::from(q.j),
                        z: f64::from(q.k),
                        w: f64::from(q.w),
                    },
                },
            }],
        };
        let data = self.encode("/tf", &tf)?;
        self.put(self.channels.tf, stamp, &data)?;
        let k = &frame.intrinsics;
        let (fx, fy, cx, cy) = (
            f64::from(k.fx),
            f64::from(k.fy),
            f64::from(k.cx),
            f64::from(k.cy),
        );
        let info = msg::CameraInfo {
            header: header.clone(),
            height: k.height,
            width: k.width,
            distortion_model: "plumb_bob".into(),
            d: vec![0.0; 5],
            k: [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0],
            r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
            p: [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0],
            binning_x: 0,
            binning_y: 0,
            roi: msg::RegionOfInterest::default(),
        };
        let data = self.encode("camera info", &info)?;
        self.put(self.channels.info, stamp, &data)?;
        let rgb: Vec<u8> = frame.rgb.pixels().iter().flatten().copied().collect();
        let data = self.encode("colour", &image(&header, &frame.rgb, "rgb8", 3, &rgb))?;
        self.put(self.channels.rgb, stamp, &data)?;
        let depth: Vec<u8> = frame
            .depth
            .pixels()
            .iter()
            .flat_map(|d| d.to_le_bytes())
            .collect();
        let data = self.encode("depth", &image(&header, &frame.depth, "32FC1", 4, &depth))?;
        self.put(self.channels.depth, stamp, &data)?;
        if let Some(gt) = &frame.ground_truth {
            self.record_truth(&header, stamp, gt)?;
        }
        self.frames += 1;
        Ok(())
    }

    fn record_truth(
        &mut self,
        header: &msg::Header,
        stamp: f64,
        gt: &GroundTruth,
    ) -> Result<(), PerceptionError> {
        for (channel, ids) in [
            (self.channels.instance_ids, &gt.instance_ids),
            (self.channels.part_ids, &gt.part_ids),
        ] {
            let bytes: Vec<u8> = ids.pixels().iter().flat_map(|v| v.to_le_bytes()).collect();
            let data = self.encode("ground truth", &image(header, ids, "32SC1", 4, &bytes))?;
            self.put(channel, stamp, &data)?;
        }
        let legend = SimLegend {
            stamp,
            instances: gt.instances.clone(),
            parts: gt.parts.clone(),
        };
        let text = serde_json::to_string(&legend).map_err(|e| PerceptionError::Io {
            path: self.path.clone(),
            message: format!("encoding the ground truth legend: {e}"),
        })?;
        let data = self.encode("ground truth legend", &StringMsg { data: text })?;
        self.put(self.channels.legend, stamp, &data)
    }

    /// Writes the summary and index and closes the file; returns the frames recorded.
    pub fn finish(mut self) -> Result<usize, PerceptionError> {
        self.writer.finish().map_err(|e| PerceptionError::Io {
            path: self.path.clone(),
            message: e.to_string(),
        })?;
        Ok(self.frames)
    }
}

fn image<'a, T>(
    header: &msg::Header,
    of: &asp_core::Image<T>,
    encoding: &str,
    bytes_per_pixel: u32,
    data: &'a [u8],
) -> msg::Image<'a> {
    msg::Image {
        header: header.clone(),
        height: of.height(),
        width: of.width(),
        encoding: encoding.to_owned(),
        is_bigendian: 0,
        step: of.width() * bytes_per_pixel,
        data,
    }
}
