//! Offline mapping from a rosbag2 MCAP recording: the test WRITES a recording as rosbag2
//! does (ros2msg schemas, CDR messages: bgr8 colour, 16UC1 depth, CameraInfo, /tf and
//! /tf_static), replays it through the ONNX backends (generated SAM-style and CLIP-style
//! stand-ins: real images carry no ground truth) and checks the map.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use asp_config::ObjectMapConfig;
use asp_core::RgbdFrame;
use asp_core::geometry::{Isometry3, Transform, Vector3};
use asp_perception::MapBuilder;
use asp_perception::onnx::{MaskGeneratorOptions, OnnxImageEmbedder, OnnxMaskGenerator, SamModel};
use asp_perception::replay::{self, msg, replay_mcap};
use support::{onnx_gen, scene};

fn cubes() -> Vec<scene::SceneBox> {
    let c = |id, name, x: f32, y: f32, color| scene::SceneBox {
        id,
        name,
        description: name,
        min: [x - 0.15, y - 0.15, 0.0],
        max: [x + 0.15, y + 0.15, 0.3],
        color,
    };
    vec![
        c(1, "red cube", 1.6, -0.45, [200, 30, 30]),
        c(2, "green cube", 1.8, 0.1, [40, 190, 40]),
        c(3, "blue cube", 1.5, 0.6, [30, 40, 200]),
    ]
}

fn header(t: f64, frame: &str) -> msg::Header {
    msg::Header {
        stamp: msg::Time::from_seconds(t),
        frame_id: frame.into(),
    }
}

fn tf(parent: &str, child: &str, t: f64, iso: &Isometry3) -> msg::TransformStamped {
    let q = iso.rotation.quaternion();
    let v = iso.translation.vector;
    msg::TransformStamped {
        header: header(t, parent),
        child_frame_id: child.into(),
        transform: msg::Transform {
            translation: msg::Vector3 {
                x: v.x.into(),
                y: v.y.into(),
                z: v.z.into(),
            },
            rotation: msg::Quaternion {
                x: q.i.into(),
                y: q.j.into(),
                z: q.k.into(),
                w: q.w.into(),
            },
        },
    }
}

/// Writes the recording; returns the rendered frames (with ground truth) for checking.
fn write_bag(path: &std::path::Path) -> Vec<RgbdFrame> {
    let k = scene::intrinsics(160, 120);
    // camera 1.2 m above the base, looking ahead and down
    let base_cam = scene::look_at([0.0, 0.0, 1.2], [1.0, 0.0, 0.3]);
    let mut w = mcap::Writer::new(std::io::BufWriter::new(
        std::fs::File::create(path).unwrap(),
    ))
    .unwrap();
    let channel = |w: &mut mcap::Writer<_>, topic: &str, ty: &str| {
        let schema = w
            .add_schema(
                ty,
                "ros2msg",
                replay::ros2msg_schema(ty).unwrap().as_bytes(),
            )
            .unwrap();
        let meta = BTreeMap::from([("offered_qos_profiles".to_string(), String::new())]);
        w.add_channel(schema, topic, "cdr", &meta).unwrap()
    };
    let rgb_ch = channel(&mut w, "/camera/color/image_raw", replay::IMAGE_TYPE);
    let depth_ch = channel(
        &mut w,
        "/camera/aligned_depth_to_color/image_raw",
        replay::IMAGE_TYPE,
    );
    let info_ch = channel(
        &mut w,
        "/camera/color/camera_info",
        replay::CAMERA_INFO_TYPE,
    );
    let tf_ch = channel(&mut w, "/tf", replay::TF_TYPE);
    let static_ch = channel(&mut w, "/tf_static", replay::TF_TYPE);
    let mut seq = 0u32;
    let mut put = |w: &mut mcap::Writer<_>, ch: u16, t: f64, data: Vec<u8>| {
        seq += 1;
        let ns = (t * 1e9) as u64;
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id: ch,
                sequence: seq,
                log_time: ns,
                publish_time: ns,
            },
            &data,
        )
        .unwrap();
    };
    let statics = msg::TfMessage {
        transforms: vec![
            tf("map", "odom", 0.0, &Isometry3::identity()),
            tf(
                "base_link",
                "camera_color_optical_frame",
                0.0,
                &base_cam.iso,
            ),
        ],
    };
    put(
        &mut w,
        static_ch,
        0.0,
        replay::encode_cdr(&statics).unwrap(),
    );
    let info = msg::CameraInfo {
        header: header(0.0, "camera_color_optical_frame"),
        height: 120,
        width: 160,
        distortion_model: "plumb_bob".into(),
        d: vec![0.0; 5],
        k: [
            k.fx.into(),
            0.0,
            k.cx.into(),
            0.0,
            k.fy.into(),
            k.cy.into(),
            0.0,
            0.0,
            1.0,
        ],
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: [
            k.fx.into(),
            0.0,
            k.cx.into(),
            0.0,
            0.0,
            k.fy.into(),
            k.cy.into(),
            0.0,
            0.0,
            0.0,
            1.0,
            0.0,
        ],
        ..Default::default()
    };
    put(&mut w, info_ch, 0.0, replay::encode_cdr(&info).unwrap());
    // the base drives 0.25 m/s along +y while turning slightly
    let base_at = |t: f64| {
        Isometry3::new(
            Vector3::new(0.0, -0.3 + 0.25 * t as f32, 0.0),
            Vector3::z() * (0.05 * t as f32),
        )
    };
    let mut frames = Vec::new();
    for step in 0..=8 {
        let t = f64::from(step) * 0.25;
        put(
            &mut w,
            tf_ch,
            t,
            replay::encode_cdr(&msg::TfMessage {
                transforms: vec![tf("odom", "base_link", t, &base_at(t))],
            })
            .unwrap(),
        );
        if step % 4 != 0 && step != 2 && step != 6 {
            continue;
        }
        // images at 0, 0.5, 1.0, 1.5, 2.0 s; depth 5 ms later
        let pose = Transform::new(
            "map",
            "camera_color_optical_frame",
            base_at(t) * base_cam.iso,
        );
        let frame = scene::render(&cubes(), &pose, k, 0.0, step as u64);
        let bgr: Vec<u8> = frame
            .rgb
            .pixels()
            .iter()
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect();
        let image = msg::Image {
            header: header(t, "camera_color_optical_frame"),
            height: 120,
            width: 160,
            encoding: "bgr8".into(),
            is_bigendian: 0,
            step: 160 * 3,
            data: &bgr,
        };
        put(&mut w, rgb_ch, t, replay::encode_cdr(&image).unwrap());
        let mm: Vec<u8> = frame
            .depth
            .pixels()
            .iter()
            .flat_map(|d| ((d * 1000.0).round().clamp(0.0, 65535.0) as u16).to_le_bytes())
            .collect();
        let depth = msg::Image {
            header: header(t + 0.005, "camera_color_optical_frame"),
            height: 120,
            width: 160,
            encoding: "16UC1".into(),
            is_bigendian: 0,
            step: 160 * 2,
            data: &mm,
        };
        put(
            &mut w,
            depth_ch,
            t + 0.005,
            replay::encode_cdr(&depth).unwrap(),
        );
        frames.push(frame);
    }
    w.finish().unwrap();
    frames
}

#[test]
fn a_recording_replays_into_a_map() {
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("recording.mcap");
    let frames = write_bag(&bag);
    // ONNX stand-ins: SAM at full resolution, CLIP tower on colour
    onnx_gen::sam_encoder(&dir.path().join("encoder.onnx"), 160);
    onnx_gen::sam_decoder(&dir.path().join("decoder.onnx"), 160);
    let w = [1.0, 0.0, 0.5, -1.0, 0.0, 1.0, 0.5, 2.0, 0.0, 0.0, -1.0, 0.5];
    onnx_gen::clip_visual(&dir.path().join("visual.onnx"), Some(32), &w, 4);
    let onnx = support::onnx_options();
    let sam = SamModel::load(
        &dir.path().join("encoder.onnx"),
        &dir.path().join("decoder.onnx"),
        &onnx,
    )
    .unwrap();
    let mut config = ObjectMapConfig::default();
    config.sam.max_area_fraction = 0.5; // the floor is not an object
    let segmenter = OnnxMaskGenerator::new(
        Arc::new(sam),
        MaskGeneratorOptions {
            points_per_side: 12,
            ..(&config.sam).into()
        },
    );
    let embedder = OnnxImageEmbedder::load(
        &dir.path().join("visual.onnx"),
        (&config.clip).into(),
        &onnx,
    )
    .unwrap();
    let mut builder =
        MapBuilder::new(&config, "map", Arc::new(segmenter), Arc::new(embedder)).unwrap();
    let report = replay_mcap(&bag, &config.replay, &mut builder).unwrap();
    eprintln!("{report:?}");
    assert_eq!(
        (report.rgb_images, report.depth_images, report.pairs),
        (5, 5, 5)
    );
    assert_eq!(report.no_pose, 0, "{:?}", report.first_pose_error);
    // 0.125 m between images: every other one is far enough for a keyframe
    assert_eq!(report.keyframes.len(), 3, "{report:?}");
    assert_eq!(report.skipped_still, 2);
    let map = builder.map();
    assert_eq!(
        map.len(),
        3,
        "{:#?}",
        map.objects
            .iter()
            .map(|o| o.point_cloud.centroid())
            .collect::<Vec<_>>()
    );
    // each object sits on a cube (the decoded poses put the points in the right place)
    for cube in cubes() {
        let centre = scene::point(
            (cube.min[0] + cube.max[0]) / 2.0,
            (cube.min[1] + cube.max[1]) / 2.0,
            0.2,
        );
        let nearest = map
            .objects
            .iter()
            .map(|o| (o.point_cloud.centroid().unwrap() - centre).norm())
            .fold(f32::MAX, f32::min);
        // the visible faces lie within the cube's half-diagonal of its centre
        assert!(
            nearest < 0.2,
            "{}: nearest object {nearest} m away",
            cube.name
        );
    }
    assert!(map.objects.iter().all(|o| o.observations >= 2));
    // the ground truth confirms it
    let gt = asp_perception::eval::ground_truth_objects(&frames, 0.1, 6.0, 64, 0.02).unwrap();
    let score = asp_perception::eval::score_map(map, &gt, 0.02, 0.3).unwrap();
    eprintln!("{score:?}");
    assert_eq!((score.precision, score.recall), (1.0, 1.0), "{score:?}");
}

#[test]
fn a_missing_file_and_a_missing_topic_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = ObjectMapConfig::default();
    let text = Arc::new(asp_perception::HashingTextEmbedder::new(16));
    let mut builder = MapBuilder::new(
        &config,
        "map",
        Arc::new(asp_perception::SimulatedSegmenter::new(
            config.simulation.clone(),
        )),
        Arc::new(asp_perception::SimulatedImageEmbedder::new(
            text,
            config.simulation.clone(),
        )),
    )
    .unwrap();
    let err = replay_mcap(&dir.path().join("nope.mcap"), &config.replay, &mut builder).unwrap_err();
    assert!(err.to_string().contains("nope.mcap"), "{err}");
    let bag = dir.path().join("recording.mcap");
    write_bag(&bag);
    let mut other = config.replay.clone();
    other.camera_info_topic = "/front/camera_info".into();
    let err = replay_mcap(&bag, &other, &mut builder).unwrap_err();
    assert!(err.to_string().contains("/front/camera_info"), "{err}");
}

/// A tour recorded with [`TourRecorder`] reads back frame for frame: images, camera
/// intrinsics and pose, and the simulator's ground truth (for simulated models); a
/// frame without ground truth reads back without.
#[test]
fn a_recorded_tour_reads_back_frame_for_frame() {
    use asp_perception::record::TourRecorder;
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("tour.mcap");
    let config = ObjectMapConfig::default();
    let k = scene::intrinsics(160, 120);
    let mut recorded = Vec::new();
    let mut recorder = TourRecorder::create(&bag, &config.replay).unwrap();
    for (i, view) in scene::tabletop_views().iter().enumerate() {
        let mut frame = scene::render(&scene::tabletop(), view, k, 0.0, i as u64);
        frame.stamp = 10.0 + i as f64 * 2.5;
        if i == 2 {
            frame.ground_truth = None;
        }
        recorder.record(&frame).unwrap();
        recorded.push(frame);
    }
    assert_eq!(recorder.finish().unwrap(), 4);
    let mut read = Vec::new();
    let report = replay::read_frames(
        &bag,
        &config.replay,
        &[
            asp_core::FrameId::new("building"),
            asp_core::FrameId::new("map"),
        ],
        &mut |f| {
            read.push(f);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(
        (report.frames, report.with_ground_truth),
        (4, 3),
        "{report:?}"
    );
    for (a, b) in recorded.iter().zip(&read) {
        assert_eq!(a.rgb, b.rgb);
        assert_eq!(a.depth, b.depth);
        assert_eq!(a.intrinsics, b.intrinsics);
        assert!((a.stamp - b.stamp).abs() < 1e-6);
        assert_eq!(a.camera_pose.child, b.camera_pose.child);
        // no building frame in this recording: the map's
        assert_eq!(b.camera_pose.parent.as_str(), "map");
        let d = a.camera_pose.iso.inverse() * b.camera_pose.iso;
        assert!(d.translation.vector.norm() < 1e-4 && d.rotation.angle() < 1e-4);
        assert_eq!(a.ground_truth, b.ground_truth);
    }
}

/// A recording whose TF reaches a building's frame (a storey's map under `building`)
/// places the views in it, the frames preferred in the order given: what a tour saw on
/// different storeys stays apart.
#[test]
fn views_are_placed_in_the_first_frame_the_recording_reaches() {
    use asp_perception::record::TourRecorder;
    let dir = tempfile::tempdir().unwrap();
    let bag = dir.path().join("tour.mcap");
    let config = ObjectMapConfig::default();
    let k = scene::intrinsics(160, 120);
    let mut recorder = TourRecorder::create(&bag, &config.replay).unwrap();
    let mut recorded = Vec::new();
    for (i, view) in scene::tabletop_views().iter().enumerate() {
        let mut frame = scene::render(&scene::tabletop(), view, k, 0.0, i as u64);
        frame.stamp = 10.0 + i as f64 * 2.5;
        // on the first storey, 3.5 m up
        frame.camera_pose.parent = asp_core::FrameId::new("building");
        frame.camera_pose.iso.translation.vector.z += 3.5;
        recorder.record(&frame).unwrap();
        recorded.push(frame);
    }
    recorder.finish().unwrap();
    let frames = [
        asp_core::FrameId::new("building"),
        asp_core::FrameId::new("map"),
    ];
    let mut read = Vec::new();
    replay::read_frames(&bag, &config.replay, &frames, &mut |f| {
        read.push(f);
        Ok(())
    })
    .unwrap();
    assert_eq!(read.len(), recorded.len());
    for (a, b) in recorded.iter().zip(&read) {
        assert_eq!(b.camera_pose.parent.as_str(), "building");
        let d = a.camera_pose.iso.translation.vector - b.camera_pose.iso.translation.vector;
        assert!(d.norm() < 1e-4, "{d:?}");
    }
    // asked for the map only, nothing resolves: said, not guessed
    let report = replay::read_frames(
        &bag,
        &config.replay,
        &[asp_core::FrameId::new("map")],
        &mut |_| Ok(()),
    )
    .unwrap();
    assert_eq!(report.frames, 0);
    assert!(report.first_pose_error.is_some(), "{report:?}");
}
