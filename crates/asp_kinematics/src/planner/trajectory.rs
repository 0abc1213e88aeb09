//! Time parameterisation of a joint-space path: a trapezoidal speed profile along the
//! path that keeps every joint within its (scaled) velocity and acceleration limits.

use serde::{Deserialize, Serialize};

use crate::model::JointSpec;

/// One point of a joint trajectory (`trajectory_msgs/JointTrajectoryPoint`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryPoint {
    pub positions: Vec<f64>,
    pub velocities: Vec<f64>,
    /// Seconds from the start of the motion.
    pub time_from_start: f64,
}

/// A timed joint trajectory (`trajectory_msgs/JointTrajectory`) with its planning time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JointTrajectory {
    pub joint_names: Vec<String>,
    pub points: Vec<TrajectoryPoint>,
    /// Wall-clock seconds the planner took.
    pub planning_time_s: f64,
    /// Path parameter (seconds at full speed) of each point.
    path_parameter: Vec<f64>,
    profile: Profile,
}

/// `s(t)` along the path: accelerate at `accel` to `speed`, cruise, decelerate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Profile {
    length: f64,
    speed: f64,
    accel: f64,
    t_accel: f64,
    t_cruise: f64,
}

impl Profile {
    fn new(length: f64, max_speed: f64, accel: f64) -> Self {
        if length <= 0.0 {
            return Self {
                length: 0.0,
                speed: max_speed,
                accel,
                t_accel: 0.0,
                t_cruise: 0.0,
            };
        }
        // Triangular when the path is too short to reach the cruise speed.
        let speed = max_speed.min((length * accel).sqrt());
        let t_accel = speed / accel;
        let cruise_len = length - speed * t_accel;
        Self {
            length,
            speed,
            accel,
            t_accel,
            t_cruise: (cruise_len / speed).max(0.0),
        }
    }

    fn duration(&self) -> f64 {
        2.0 * self.t_accel + self.t_cruise
    }

    /// `(s, ds/dt)` at time `t`.
    fn at(&self, t: f64) -> (f64, f64) {
        if self.length <= 0.0 {
            return (0.0, 0.0);
        }
        let t = t.clamp(0.0, self.duration());
        let d_accel = 0.5 * self.accel * self.t_accel * self.t_accel;
        if t < self.t_accel {
            (0.5 * self.accel * t * t, self.accel * t)
        } else if t < self.t_accel + self.t_cruise {
            (d_accel + self.speed * (t - self.t_accel), self.speed)
        } else {
            let td = self.duration() - t;
            (self.length - 0.5 * self.accel * td * td, self.accel * td)
        }
    }

    /// The time at which the path parameter reaches `s`.
    fn time_of(&self, s: f64) -> f64 {
        if self.length <= 0.0 {
            return 0.0;
        }
        let s = s.clamp(0.0, self.length);
        let d_accel = 0.5 * self.accel * self.t_accel * self.t_accel;
        if s < d_accel {
            (2.0 * s / self.accel).sqrt()
        } else if s <= self.length - d_accel {
            self.t_accel + (s - d_accel) / self.speed
        } else {
            self.duration() - (2.0 * (self.length - s) / self.accel).sqrt()
        }
    }
}

impl JointTrajectory {
    /// Times a path (waypoints, first = start) for the joints `specs`.
    /// `velocity_scaling` and `acceleration_scaling` are MoveIt's factors in (0, 1];
    /// joints without an acceleration limit use `default_acceleration`.
    pub fn from_path(
        specs: &[JointSpec],
        path: &[Vec<f64>],
        velocity_scaling: f64,
        acceleration_scaling: f64,
        default_acceleration: f64,
        planning_time_s: f64,
    ) -> Self {
        // Path parameter: seconds each segment takes at full speed of its slowest joint.
        let mut s = Vec::with_capacity(path.len());
        let mut acc = 0.0;
        for (i, q) in path.iter().enumerate() {
            if i > 0 {
                acc += segment_time(specs, &path[i - 1], q);
            }
            s.push(acc);
        }
        // ds/dt ≤ velocity_scaling keeps every joint under its scaled velocity limit;
        // d²s/dt² ≤ a keeps it under its acceleration limit (|dq/ds| ≤ v_max).
        let accel = acceleration_scaling
            * specs
                .iter()
                .map(|j| j.max_acceleration.unwrap_or(default_acceleration) / j.max_velocity)
                .fold(f64::INFINITY, f64::min);
        let accel = if accel.is_finite() && accel > 0.0 {
            accel
        } else {
            1.0
        };
        let profile = Profile::new(acc, velocity_scaling, accel);
        let points = path
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let t = profile.time_of(s[i]);
                let (_, sdot) = profile.at(t);
                // dq/ds of the segment leaving this point (arriving, at the last one).
                let seg = if i + 1 < path.len() {
                    i
                } else {
                    i.saturating_sub(1)
                };
                let velocities = if path.len() > 1 && s[seg + 1] > s[seg] {
                    let ds = s[seg + 1] - s[seg];
                    path[seg + 1]
                        .iter()
                        .zip(&path[seg])
                        .map(|(b, a)| (b - a) / ds * sdot)
                        .collect()
                } else {
                    vec![0.0; q.len()]
                };
                TrajectoryPoint {
                    positions: q.clone(),
                    velocities,
                    time_from_start: t,
                }
            })
            .collect();
        Self {
            joint_names: specs.iter().map(|j| j.name.clone()).collect(),
            points,
            planning_time_s,
            path_parameter: s,
            profile,
        }
    }

    /// Seconds from start to end.
    pub fn duration(&self) -> f64 {
        self.profile.duration()
    }

    /// The joint positions at `t` seconds (clamped to the trajectory), following the
    /// speed profile along the path.
    pub fn sample(&self, t: f64) -> Vec<f64> {
        let Some(first) = self.points.first() else {
            return Vec::new();
        };
        let (s, _) = self.profile.at(t);
        let k = self.path_parameter.partition_point(|&x| x <= s);
        if k == 0 {
            return first.positions.clone();
        }
        if k >= self.points.len() {
            return self.points[self.points.len() - 1].positions.clone();
        }
        let (s0, s1) = (self.path_parameter[k - 1], self.path_parameter[k]);
        let f = if s1 > s0 { (s - s0) / (s1 - s0) } else { 1.0 };
        self.points[k - 1]
            .positions
            .iter()
            .zip(&self.points[k].positions)
            .map(|(a, b)| a + (b - a) * f)
            .collect()
    }

    /// Where the trajectory ends.
    pub fn final_positions(&self) -> &[f64] {
        self.points
            .last()
            .map(|p| p.positions.as_slice())
            .unwrap_or(&[])
    }
}

fn segment_time(specs: &[JointSpec], a: &[f64], b: &[f64]) -> f64 {
    specs
        .iter()
        .zip(a.iter().zip(b))
        .map(|(j, (x, y))| (y - x).abs() / j.max_velocity)
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, v: f64, a: Option<f64>) -> JointSpec {
        JointSpec {
            name: name.into(),
            lower: -10.0,
            upper: 10.0,
            max_velocity: v,
            max_acceleration: a,
            max_effort: 1.0,
            revolute: true,
        }
    }

    #[test]
    fn long_moves_cruise_at_the_scaled_velocity_limit() {
        let specs = [spec("a", 2.0, Some(4.0)), spec("b", 1.0, Some(4.0))];
        let path = vec![vec![0.0, 0.0], vec![4.0, 1.0]];
        let t = JointTrajectory::from_path(&specs, &path, 0.5, 1.0, 1.0, 0.0);
        // Joint a limits: 4 rad at 1 rad/s (half of 2) cruise; accel = 4/2 = 2 s⁻² on s.
        // s-length 2 s, speed 0.5, accel 2 → t_accel 0.25, cruise (2 − 0.125)/0.5 = 3.75.
        assert!((t.duration() - 4.25).abs() < 1e-9, "{}", t.duration());
        let mid = t.sample(t.duration() / 2.0);
        assert!((mid[0] - 2.0).abs() < 1e-9 && (mid[1] - 0.5).abs() < 1e-9);
        assert_eq!(t.sample(100.0), vec![4.0, 1.0]);
        assert_eq!(t.sample(-1.0), vec![0.0, 0.0]);
        // Peak joint speed is the scaled limit, never more.
        let peak = t.points[0].velocities[0]
            .abs()
            .max(t.points[1].velocities[0].abs());
        assert!(peak <= 1.0 + 1e-9);
        let dt = 1e-3;
        let mut max_speed: f64 = 0.0;
        let mut time = 0.0;
        while time < t.duration() {
            let a = t.sample(time);
            let b = t.sample(time + dt);
            max_speed = max_speed.max(((b[0] - a[0]) / dt).abs());
            time += dt;
        }
        assert!(max_speed <= 1.0 + 1e-6 && max_speed > 0.99, "{max_speed}");
    }

    #[test]
    fn short_moves_use_a_triangular_profile() {
        let specs = [spec("a", 1.0, Some(1.0))];
        let path = vec![vec![0.0], vec![0.01]];
        let t = JointTrajectory::from_path(&specs, &path, 1.0, 1.0, 1.0, 0.0);
        // s = 0.01, accel 1: t = 2·sqrt(0.01) = 0.2 s.
        assert!((t.duration() - 0.2).abs() < 1e-9);
        assert!((t.sample(0.1)[0] - 0.005).abs() < 1e-9);
    }

    #[test]
    fn waypoint_times_increase_and_end_at_the_duration() {
        let specs = [spec("a", 1.0, None)];
        let path = vec![vec![0.0], vec![0.5], vec![0.5], vec![1.5]];
        let t = JointTrajectory::from_path(&specs, &path, 1.0, 0.5, 2.0, 0.0);
        for w in t.points.windows(2) {
            assert!(w[1].time_from_start >= w[0].time_from_start);
        }
        assert!((t.points[3].time_from_start - t.duration()).abs() < 1e-9);
        assert_eq!(t.final_positions(), &[1.5]);
    }
}
