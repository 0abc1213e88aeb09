//! The object map as RViz draws it: a `visualization_msgs/MarkerArray` with each
//! object's box and label, and a `sensor_msgs/PointCloud2` of every object's points
//! coloured by instance (the same colour as its box).

use std::collections::BTreeMap;

use asp_core::{ObjectId, ObjectKey, ObjectMap, PointCloud, Rgb8};

use crate::msg::builtin_interfaces::Time;
use crate::msg::geometry_msgs::{Point, Pose, Quaternion, Vector3};
use crate::msg::sensor_msgs::PointCloud2;
use crate::msg::std_msgs::{ColorRGBA, Header};
use crate::msg::visualization_msgs::{Marker, MarkerArray};

/// Marker namespaces: one box and one label per object, ids the objects' ids.
pub const OBJECTS_NS: &str = "objects";
pub const LABELS_NS: &str = "labels";

/// A distinct colour per instance: hues a golden angle apart, full saturation.
pub fn instance_color(id: ObjectId) -> Rgb8 {
    let hue = (f64::from(id.0) * 0.618_033_988_75).fract() * 6.0;
    let x = 1.0 - (hue % 2.0 - 1.0).abs();
    let (r, g, b) = match hue as u32 {
        0 => (1.0, x, 0.0),
        1 => (x, 1.0, 0.0),
        2 => (0.0, 1.0, x),
        3 => (0.0, x, 1.0),
        4 => (x, 0.0, 1.0),
        _ => (1.0, 0.0, x),
    };
    let byte = |v: f64| (v * 255.0).round() as u8;
    [byte(r), byte(g), byte(b)]
}

fn rgba(c: Rgb8, a: f32) -> ColorRGBA {
    ColorRGBA {
        r: f32::from(c[0]) / 255.0,
        g: f32::from(c[1]) / 255.0,
        b: f32::from(c[2]) / 255.0,
        a,
    }
}

/// The markers of `map`: first a DELETEALL (objects merged or forgotten since the last
/// array vanish), then per object with points a translucent box over its axis-aligned
/// bounds (namespace [`OBJECTS_NS`]) and its key (or `#id` when it has none) above it
/// ([`LABELS_NS`]), both with the object's id.
pub fn map_markers(
    map: &ObjectMap,
    keys: &BTreeMap<ObjectKey, ObjectId>,
    stamp: Time,
) -> MarkerArray {
    let header = Header::new(stamp, map.frame.as_str());
    let names: BTreeMap<ObjectId, &str> = keys.iter().map(|(k, id)| (*id, k.as_str())).collect();
    let mut markers = vec![Marker {
        header: header.clone(),
        action: Marker::DELETEALL,
        ..Marker::default()
    }];
    for o in &map.objects {
        let Some((lo, hi)) = o.point_cloud.aabb() else {
            continue;
        };
        let id = i32::try_from(o.id.0).unwrap_or(i32::MAX);
        let color = instance_color(o.id);
        let centre = |a: f32, b: f32| f64::from(a + b) / 2.0;
        let size = |a: f32, b: f32| f64::from(b - a).max(0.01);
        markers.push(Marker {
            header: header.clone(),
            ns: OBJECTS_NS.into(),
            id,
            r#type: Marker::CUBE,
            action: Marker::ADD,
            pose: Pose {
                position: Point {
                    x: centre(lo.x, hi.x),
                    y: centre(lo.y, hi.y),
                    z: centre(lo.z, hi.z),
                },
                orientation: Quaternion::default(),
            },
            scale: Vector3 {
                x: size(lo.x, hi.x),
                y: size(lo.y, hi.y),
                z: size(lo.z, hi.z),
            },
            color: rgba(color, 0.35),
            ..Marker::default()
        });
        let text = names
            .get(&o.id)
            .map_or_else(|| format!("#{}", o.id.0), |k| (*k).to_owned());
        markers.push(Marker {
            header: header.clone(),
            ns: LABELS_NS.into(),
            id,
            r#type: Marker::TEXT_VIEW_FACING,
            action: Marker::ADD,
            pose: Pose {
                position: Point {
                    x: centre(lo.x, hi.x),
                    y: centre(lo.y, hi.y),
                    z: f64::from(hi.z) + 0.06,
                },
                orientation: Quaternion::default(),
            },
            // a text marker's height is scale.z
            scale: Vector3 {
                x: 0.0,
                y: 0.0,
                z: 0.05,
            },
            color: rgba([255, 255, 255], 1.0),
            text,
            ..Marker::default()
        });
    }
    MarkerArray { markers }
}

/// Every object's points in one cloud, each coloured as its instance.
pub fn map_cloud(map: &ObjectMap, stamp: Time) -> PointCloud2 {
    let mut points = Vec::new();
    let mut colors = Vec::new();
    for o in &map.objects {
        let c = instance_color(o.id);
        points.extend_from_slice(o.point_cloud.points());
        colors.extend(std::iter::repeat_n(c, o.point_cloud.len()));
    }
    let cloud = PointCloud::new(map.frame.clone(), points)
        .with_colors(colors)
        .unwrap_or_else(|_| PointCloud::empty(map.frame.clone()));
    super::ros_cloud(&cloud, stamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::{Object, Point3};

    fn object(id: u32, points: Vec<Point3>) -> Object {
        Object {
            id: ObjectId(id),
            point_cloud: PointCloud::new("map", points),
            crops: Vec::new(),
            features: Vec::new(),
            observations: 1,
            affordances: Vec::new(),
        }
    }

    #[test]
    fn one_box_and_one_label_per_object_with_points() {
        let mut map = ObjectMap::new("map");
        map.objects.push(object(
            3,
            vec![Point3::new(1.0, 2.0, 0.7), Point3::new(1.2, 2.1, 0.9)],
        ));
        map.objects
            .push(object(5, vec![Point3::new(-1.0, 0.0, 0.0)]));
        map.objects.push(object(7, Vec::new()));
        let keys = BTreeMap::from([(ObjectKey::new("red_mug_0").unwrap(), ObjectId(3))]);
        let stamp = Time { sec: 1, nanosec: 0 };
        let m = map_markers(&map, &keys, stamp).markers;
        assert_eq!(m[0].action, Marker::DELETEALL);
        let boxes: Vec<&Marker> = m.iter().filter(|m| m.ns == OBJECTS_NS).collect();
        let labels: Vec<&Marker> = m.iter().filter(|m| m.ns == LABELS_NS).collect();
        assert_eq!(boxes.iter().map(|b| b.id).collect::<Vec<_>>(), [3, 5]);
        assert_eq!(
            labels.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["red_mug_0", "#5"]
        );
        let b = boxes[0];
        assert_eq!(b.r#type, Marker::CUBE);
        assert_eq!(b.header.frame_id, "map");
        assert!((b.pose.position.x - 1.1).abs() < 1e-6 && (b.pose.position.z - 0.8).abs() < 1e-6);
        assert!((b.scale.x - 0.2).abs() < 1e-6 && (b.scale.y - 0.1).abs() < 1e-6);
        // a single point still draws a box that can be seen
        assert!(boxes[1].scale.x >= 0.01);
        assert!(labels[0].pose.position.z > 0.9);
        assert_ne!(b.color, boxes[1].color, "instances are told apart");

        let cloud = map_cloud(&map, stamp);
        assert_eq!(cloud.width, 3);
        let back = crate::convert::cloud(&cloud).unwrap();
        let colors = back.colors().unwrap();
        assert_eq!(colors[0], instance_color(ObjectId(3)));
        assert_eq!(colors[2], instance_color(ObjectId(5)));
    }

    #[test]
    fn instance_colours_differ_for_neighbouring_ids() {
        let c: Vec<Rgb8> = (0..12).map(|i| instance_color(ObjectId(i))).collect();
        for i in 0..c.len() {
            for j in i + 1..c.len() {
                assert_ne!(c[i], c[j], "{i} and {j}");
            }
        }
    }
}
