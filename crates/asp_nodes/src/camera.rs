//! The robot's cameras over ROS as a [`FrameSource`]: [`RosCameras`] subscribes to each
//! camera's colour image, registered depth and camera info (`/**.cameras`), looks up the
//! camera's pose in TF at the frame's stamp, and attaches the simulator's ground truth
//! when a simulator publishes it (`/sim/<camera>/ground_truth`, like Gazebo's
//! segmentation camera; simulated perception models need it, real cameras have none).
//!
//! With `cameras.sim_render` (simulation), every capture asks the simulator to render a
//! frame (`/sim/<camera>/render`) and waits for the messages stamped with the stamp it
//! answers: rendering noise is seeded per rendered frame, so rendering on demand keeps
//! runs deterministic. Without it, a capture takes the second frame the camera
//! publishes after the request (a real camera streams; the first may predate it).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use asp_config::sections::common::CamerasConfig;
use asp_core::models::{GroundTruth, GtInstance, GtPart};
use asp_core::robot::{FrameSource, RobotError};
use asp_core::{FrameId, Image, LabelImage, RgbdFrame};
use asp_ros::convert;
use asp_ros::msg::asp_interfaces::{RenderCamera, RenderCameraRequest, SimGroundTruth};
use asp_ros::msg::builtin_interfaces::Time;
use asp_ros::msg::sensor_msgs::{CameraInfo, Image as RosImage};
use asp_ros::msg::std_msgs::Header;
use asp_ros::robot::TfBuffer;
use asp_ros::transport::{Client, Subscription};
use asp_ros::{Node, Qos, RosError};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::names::{self, CameraTopics};

/// How many times a capture asks the simulator to render before it gives up (a frame can
/// be lost while DDS still matches a new subscription).
const RENDER_ATTEMPTS: u32 = 3;

/// The QoS the simulator publishes camera data with, and a reliable subscriber uses.
pub const CAMERA_QOS: Qos = Qos::default_reliable().with_depth(2);

/// The legend of a ground-truth message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Legend {
    pub instances: BTreeMap<u32, GtInstance>,
    pub parts: BTreeMap<u32, GtPart>,
}

/// A label image as `mono16` when every label fits, else `32SC1` (little endian).
pub fn ros_label_image(img: &LabelImage, header: Header) -> RosImage {
    let wide = img.pixels().iter().any(|&l| l > u32::from(u16::MAX));
    let (encoding, bpp) = if wide { ("32SC1", 4) } else { ("mono16", 2) };
    let mut data = Vec::with_capacity(img.pixels().len() * bpp);
    for &l in img.pixels() {
        if wide {
            data.extend_from_slice(&l.to_le_bytes());
        } else {
            data.extend_from_slice(&(l as u16).to_le_bytes());
        }
    }
    RosImage {
        header,
        height: img.height(),
        width: img.width(),
        encoding: encoding.into(),
        is_bigendian: 0,
        step: img.width() * bpp as u32,
        data,
    }
}

/// A label image back from `mono16`/`16UC1` or `32SC1`/`32SC1`; anything else is an error
/// naming the encoding.
pub fn label_image(msg: &RosImage) -> Result<LabelImage, RosError> {
    let bpp = match msg.encoding.as_str() {
        "mono16" | "16UC1" => 2,
        "32SC1" => 4,
        other => {
            return Err(RosError::Conversion(format!(
                "label image encoding {other:?} is not mono16, 16UC1 or 32SC1"
            )));
        }
    };
    let (w, h) = (msg.width as usize, msg.height as usize);
    let step = msg.step as usize;
    if step < w * bpp || msg.data.len() < step * h {
        return Err(RosError::Conversion(format!(
            "label image of {w}×{h} ({}) has step {step} and {} bytes",
            msg.encoding,
            msg.data.len()
        )));
    }
    let big = msg.is_bigendian != 0;
    let mut out = Vec::with_capacity(w * h);
    for y in 0..h {
        let row = &msg.data[y * step..y * step + w * bpp];
        for px in row.chunks_exact(bpp) {
            let v = match (bpp, big) {
                (2, false) => u32::from(u16::from_le_bytes([px[0], px[1]])),
                (2, true) => u32::from(u16::from_be_bytes([px[0], px[1]])),
                (_, false) => u32::from_le_bytes([px[0], px[1], px[2], px[3]]),
                (_, true) => u32::from_be_bytes([px[0], px[1], px[2], px[3]]),
            };
            out.push(v);
        }
    }
    Image::from_vec(msg.width, msg.height, out).map_err(|e| RosError::Conversion(e.to_string()))
}

/// The ground-truth message of a simulated frame.
pub fn ground_truth_message(gt: &GroundTruth, header: Header) -> SimGroundTruth {
    let legend = Legend {
        instances: gt.instances.clone(),
        parts: gt.parts.clone(),
    };
    SimGroundTruth {
        instance_ids: ros_label_image(&gt.instance_ids, header.clone()),
        part_ids: ros_label_image(&gt.part_ids, header.clone()),
        header,
        legend_json: serde_json::to_string(&legend).unwrap_or_default(),
    }
}

/// The ground truth of a message.
pub fn ground_truth(msg: &SimGroundTruth) -> Result<GroundTruth, RosError> {
    let legend: Legend = serde_json::from_str(&msg.legend_json)
        .map_err(|e| RosError::Conversion(format!("ground-truth legend: {e}")))?;
    Ok(GroundTruth {
        instance_ids: label_image(&msg.instance_ids)?,
        part_ids: label_image(&msg.part_ids)?,
        instances: legend.instances,
        parts: legend.parts,
    })
}

fn key(t: &Time) -> (i32, u32) {
    (t.sec, t.nanosec)
}

/// One camera's subscriptions.
struct CameraSubs {
    name: String,
    image: Subscription<RosImage>,
    depth: Subscription<RosImage>,
    info: Subscription<CameraInfo>,
    ground_truth: Subscription<SimGroundTruth>,
    render: Option<Client<RenderCamera>>,
}

/// What one capture received.
struct Received {
    image: RosImage,
    depth: RosImage,
    info: CameraInfo,
    ground_truth: Option<SimGroundTruth>,
}

fn robot_err(e: RosError, camera: &str) -> RobotError {
    match e {
        RosError::Timeout { what, timeout_s } | RosError::NotDiscovered { what, timeout_s } => {
            RobotError::Timeout {
                what: format!("camera {camera:?}: {what}"),
                timeout_s,
            }
        }
        other => RobotError::Other(format!("camera {camera:?}: {other}")),
    }
}

/// Waits for the message of `sub` stamped exactly `stamp` (older ones are skipped; a
/// newer one means it was lost).
async fn stamped<M: asp_ros::msg::RosMessage>(
    sub: &mut Subscription<M>,
    stamp: &Time,
    deadline: Instant,
    header: impl Fn(&M) -> &Header,
) -> Result<M, RosError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = sub.recv_timeout(left).await?;
        let s = header(&m).stamp;
        if key(&s) == key(stamp) {
            return Ok(m);
        }
        if key(&s) > key(stamp) {
            return Err(RosError::Conversion(format!(
                "{}: the message stamped {:.6} s was lost",
                sub.topic(),
                stamp.as_secs_f64()
            )));
        }
    }
}

impl CameraSubs {
    fn new(
        node: &Node,
        cfg: &CamerasConfig,
        name: &str,
        sim_render: bool,
    ) -> Result<Self, RosError> {
        let topics = CameraTopics::new(cfg, name);
        let qos = if cfg.reliable {
            CAMERA_QOS
        } else {
            Qos::sensor().with_depth(2)
        };
        Ok(Self {
            name: name.to_owned(),
            image: node.subscribe(&topics.image, qos)?,
            depth: node.subscribe(&topics.depth, qos)?,
            info: node.subscribe(&topics.info, qos)?,
            ground_truth: node.subscribe(&names::sim_ground_truth_topic(name), CAMERA_QOS)?,
            render: if sim_render {
                Some(node.client(&names::sim_render_service(name))?)
            } else {
                None
            },
        })
    }

    fn drain(&mut self) {
        self.image.latest();
        self.depth.latest();
        self.info.latest();
        self.ground_truth.latest();
    }

    /// Asks the simulator for a frame and collects its messages.
    async fn rendered(&mut self, timeout: Duration) -> Result<Received, RosError> {
        for s in [&self.image, &self.depth] {
            s.wait_for_publishers().await?;
        }
        self.info.wait_for_publishers().await?;
        self.ground_truth.wait_for_publishers().await?;
        let Some(render) = self.render.take() else {
            return Err(RosError::Closed("render client".into()));
        };
        let out = self.render_with(&render, timeout).await;
        self.render = Some(render);
        out
    }

    async fn render_with(
        &mut self,
        render: &Client<RenderCamera>,
        timeout: Duration,
    ) -> Result<Received, RosError> {
        let per_attempt = timeout / RENDER_ATTEMPTS;
        let mut last = None;
        for attempt in 1..=RENDER_ATTEMPTS {
            self.drain();
            let r = render
                .call_with_timeout(
                    RenderCameraRequest { ground_truth: true },
                    per_attempt.max(Duration::from_secs(1)),
                )
                .await?;
            if !r.success {
                return Err(RosError::Conversion(format!(
                    "{}: {}",
                    render.service(),
                    r.error_msg
                )));
            }
            let deadline = Instant::now() + per_attempt;
            let got = async {
                let image = stamped(&mut self.image, &r.stamp, deadline, |m| &m.header).await?;
                let depth = stamped(&mut self.depth, &r.stamp, deadline, |m| &m.header).await?;
                let info = stamped(&mut self.info, &r.stamp, deadline, |m| &m.header).await?;
                let gt = stamped(&mut self.ground_truth, &r.stamp, deadline, |m| &m.header).await?;
                Ok::<_, RosError>(Received {
                    image,
                    depth,
                    info,
                    ground_truth: Some(gt),
                })
            }
            .await;
            match got {
                Ok(r) => return Ok(r),
                Err(e) => {
                    warn!(camera = %self.name, attempt, "no complete frame: {e}; rendering again");
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| RosError::Closed("render".into())))
    }

    /// Takes the second frame the camera publishes after the request, and none stamped
    /// before `since` (the newest `/tf` stamp when the capture was asked for): the first
    /// may have been exposed before the request and still been on its way (on a busy
    /// machine, a view from before the motion the capture is meant to judge), and a
    /// reader that fell behind the stream hands out frames seconds old in order (a view
    /// of the world as it was, which a verifier must never judge an outcome on).
    async fn streamed(
        &mut self,
        timeout: Duration,
        max_offset: f64,
        since: Option<Time>,
    ) -> Result<Received, RosError> {
        self.drain();
        let deadline = Instant::now() + timeout;
        let left = || deadline.saturating_duration_since(Instant::now());
        let _in_flight = self.image.recv_timeout(left()).await?;
        let (mut image, mut stale) = (self.image.recv_timeout(left()).await?, 0_u32);
        while let Some(since) = since.filter(|s| key(&image.header.stamp) < key(s)) {
            stale += 1;
            image = self.image.recv_timeout(left()).await.map_err(|e| {
                RosError::Conversion(format!(
                    "{}: no image stamped at or after {:.6} s (the robot's newest /tf) within the frame timeout; {stale} older ones skipped, the last from {:.6} s: {e}",
                    self.image.topic(),
                    since.as_secs_f64(),
                    image.header.stamp.as_secs_f64()
                ))
            })?;
        }
        if stale > 0 {
            debug!(camera = %self.name, stale, "skipped images stamped before the capture");
        }
        let t = image.header.stamp.as_secs_f64();
        let depth = loop {
            let d = self.depth.recv_timeout(left()).await?;
            let dt = d.header.stamp.as_secs_f64() - t;
            if dt.abs() <= max_offset {
                break d;
            }
            if dt > max_offset {
                return Err(RosError::Conversion(format!(
                    "{}: no depth within {max_offset} s of the colour image at {t:.6} s",
                    self.depth.topic()
                )));
            }
        };
        let info = self.info.recv_timeout(left()).await?;
        let ground_truth = if self.ground_truth.publisher_count() > 0 {
            stamped(&mut self.ground_truth, &image.header.stamp, deadline, |m| {
                &m.header
            })
            .await
            .ok()
        } else {
            None
        };
        Ok(Received {
            image,
            depth,
            info,
            ground_truth,
        })
    }
}

/// The robot's cameras over ROS (see the module notes).
pub struct RosCameras {
    node: Node,
    cfg: CamerasConfig,
    tf: TfBuffer,
    map_frame: FrameId,
    cameras: Mutex<BTreeMap<String, Arc<Mutex<CameraSubs>>>>,
}

impl std::fmt::Debug for RosCameras {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RosCameras")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl RosCameras {
    /// Cameras on `node`, posed in `map_frame` through `tf`. Subscriptions for `cameras`
    /// start now (so that discovery is done by the first capture); others start on their
    /// first capture.
    pub fn new(
        node: &Node,
        cfg: &CamerasConfig,
        tf: TfBuffer,
        map_frame: &str,
        cameras: &[String],
    ) -> Result<Self, RosError> {
        let mut subs = BTreeMap::new();
        for c in cameras {
            subs.insert(
                c.clone(),
                Arc::new(Mutex::new(CameraSubs::new(node, cfg, c, cfg.sim_render)?)),
            );
        }
        Ok(Self {
            node: node.clone(),
            cfg: cfg.clone(),
            tf,
            map_frame: FrameId::new(map_frame),
            cameras: Mutex::new(subs),
        })
    }

    async fn camera(&self, name: &str) -> Result<Arc<Mutex<CameraSubs>>, RosError> {
        let mut cams = self.cameras.lock().await;
        if let Some(c) = cams.get(name) {
            return Ok(c.clone());
        }
        let c = Arc::new(Mutex::new(CameraSubs::new(
            &self.node,
            &self.cfg,
            name,
            self.cfg.sim_render,
        )?));
        cams.insert(name.to_owned(), c.clone());
        Ok(c)
    }

    async fn frame(&self, camera: &str) -> Result<RgbdFrame, RosError> {
        let timeout = Duration::from_secs_f64(self.cfg.frame_timeout_s);
        let subs = self.camera(camera).await?;
        let got = {
            let mut s = subs.lock().await;
            if self.cfg.sim_render {
                s.rendered(timeout).await?
            } else {
                s.streamed(timeout, self.cfg.max_sync_offset_s, self.tf.newest_stamp())
                    .await?
            }
        };
        let stamp = got.image.header.stamp;
        let optical = FrameId::new(got.image.header.frame_id.trim_start_matches('/'));
        let camera_pose = self
            .tf
            .wait_for_fresh(&self.map_frame, &optical, &stamp, Some(timeout))
            .await?;
        let ground_truth = match &got.ground_truth {
            Some(m) => Some(ground_truth(m)?),
            None => None,
        };
        let frame = RgbdFrame {
            rgb: convert::rgb_image(&got.image)?,
            depth: convert::depth_image(&got.depth)?,
            intrinsics: convert::intrinsics(&got.info)?,
            camera_pose,
            stamp: stamp.as_secs_f64(),
            ground_truth,
        };
        frame
            .validate()
            .map_err(|e| RosError::Conversion(format!("camera {camera:?}: {e}")))?;
        debug!(camera, stamp = frame.stamp, "frame captured");
        Ok(frame)
    }
}

#[async_trait]
impl FrameSource for RosCameras {
    async fn capture(&self, camera: &str) -> Result<RgbdFrame, RobotError> {
        self.frame(camera).await.map_err(|e| robot_err(e, camera))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Skill;

    #[test]
    fn label_images_round_trip_narrow_and_wide() {
        let narrow = Image::from_vec(3, 2, vec![0, 1, 2, 65535, 7, 0]).unwrap();
        let m = ros_label_image(&narrow, Header::default());
        assert_eq!((m.encoding.as_str(), m.step), ("mono16", 6));
        assert_eq!(label_image(&m).unwrap(), narrow);
        let wide = Image::from_vec(2, 1, vec![70_000, 3]).unwrap();
        let m = ros_label_image(&wide, Header::default());
        assert_eq!(m.encoding, "32SC1");
        assert_eq!(label_image(&m).unwrap(), wide);
        let mut bad = m.clone();
        bad.encoding = "rgb8".into();
        assert!(label_image(&bad).unwrap_err().to_string().contains("rgb8"));
        bad.encoding = "32SC1".into();
        bad.data.truncate(3);
        assert!(label_image(&bad).is_err());
    }

    #[test]
    fn ground_truth_round_trips_with_its_legend() {
        let gt = GroundTruth {
            instance_ids: Image::from_vec(2, 2, vec![0, 4, 4, 0]).unwrap(),
            part_ids: Image::from_vec(2, 2, vec![0, 9, 0, 0]).unwrap(),
            instances: [(
                4,
                GtInstance {
                    id: 4,
                    name: "mug".into(),
                    description: "a red mug".into(),
                    fixed: false,
                },
            )]
            .into(),
            parts: [(
                9,
                GtPart {
                    id: 9,
                    instance: 4,
                    name: "mug handle".into(),
                    skills: vec![Skill::GraspPart],
                    presses: 0,
                },
            )]
            .into(),
        };
        let m = ground_truth_message(&gt, Header::new(Time::from_secs_f64(2.5), "cam"));
        assert_eq!(m.instance_ids.header.stamp, m.header.stamp);
        assert_eq!(ground_truth(&m).unwrap(), gt);
    }

    /// A streaming camera whose reader fell behind hands out frames from before the
    /// capture was asked for: the capture skips every one stamped before the robot's
    /// newest /tf and takes the first after it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamed_capture_skips_frames_from_before_it_was_asked_for() {
        use asp_core::{CameraIntrinsics, Isometry3, Transform};
        use asp_ros::msg::tf2_msgs::TFMessage;
        let t = asp_ros::Transport::in_process();
        let node = t.node("camera_test").unwrap();
        let cfg = CamerasConfig {
            sim_render: false,
            frame_timeout_s: 5.0,
            ..CamerasConfig::default()
        };
        let topics = CameraTopics::new(&cfg, "wrist");
        let image = node
            .publisher::<RosImage>(&topics.image, CAMERA_QOS)
            .unwrap();
        let depth = node
            .publisher::<RosImage>(&topics.depth, CAMERA_QOS)
            .unwrap();
        let info = node
            .publisher::<CameraInfo>(&topics.info, CAMERA_QOS)
            .unwrap();
        let tf_pub = node
            .publisher::<TFMessage>("/tf", Qos::default_reliable())
            .unwrap();
        let tf = TfBuffer::new(&node).unwrap();
        let optical = "wrist_camera_optical_frame";
        let pose = Transform::new("map", optical, Isometry3::identity());
        let at = |s: f64| Time::from_secs_f64(s);
        // the robot's state as of 10 s
        tf_pub
            .publish(convert::tf_message(std::slice::from_ref(&pose), at(10.0)))
            .unwrap();
        tf.wait_for(&FrameId::map(), &FrameId::new(optical), None)
            .await
            .unwrap();
        let cams = RosCameras::new(&node, &cfg, tf.clone(), "map", &["wrist".to_owned()]).unwrap();
        let intrinsics = CameraIntrinsics::from_hfov(4, 3, 1.0);
        let publisher = tokio::spawn(async move {
            // frames from 5 s (a backlog), then fresh ones from 10.6 s on, with TF,
            // until the capture is done (however late it starts on a busy machine)
            for i in 0_u32.. {
                tokio::time::sleep(Duration::from_millis(40)).await;
                let s = if i < 6 {
                    5.0 + 0.1 * f64::from(i)
                } else {
                    10.0 + 0.1 * f64::from(i)
                };
                if s > 10.0 {
                    let _ = tf_pub.publish(convert::tf_message(std::slice::from_ref(&pose), at(s)));
                }
                let header = Header::new(at(s), optical);
                let _ = image.publish(convert::ros_rgb_image(
                    &Image::filled(4, 3, [9_u8, 9, 9]),
                    header.clone(),
                ));
                let _ = depth.publish(convert::ros_depth_image(
                    &Image::filled(4, 3, 1.0_f32),
                    header.clone(),
                    convert::DepthEncoding::Meters32F,
                ));
                let _ = info.publish(convert::camera_info(&intrinsics, header));
            }
        });
        let frame = cams.capture("wrist").await.unwrap();
        publisher.abort();
        assert!(frame.stamp >= 10.0, "a frame from {} s", frame.stamp);
    }
}
