//! `builtin_interfaces`: time stamps and durations.

use std::time::{Duration as StdDuration, SystemTime, UNIX_EPOCH};

crate::ros_message! {
    /// A point in time: seconds and nanoseconds since the epoch (ROS or simulation time).
    #[derive(Copy, Eq, Hash)]
    pub struct Time in builtin_interfaces / msg {
        pub sec: i32,
        pub nanosec: u32,
    }

    /// A signed span of time; `nanosec` is always the positive part.
    #[derive(Copy, Eq, Hash)]
    pub struct Duration in builtin_interfaces / msg {
        pub sec: i32,
        pub nanosec: u32,
    }
}

crate::msg::register!(Time, Duration);

impl Time {
    /// The wall-clock time now.
    pub fn now() -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(StdDuration::ZERO);
        Self::from_secs_f64(since.as_secs_f64())
    }

    /// Time from seconds (negative values clamp to zero, large ones to `i32::MAX`).
    pub fn from_secs_f64(t: f64) -> Self {
        if !t.is_finite() || t <= 0.0 {
            return Self::default();
        }
        let sec = t.floor().min(f64::from(i32::MAX));
        let nanosec = ((t - sec) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
        Self {
            sec: sec as i32,
            nanosec,
        }
    }

    pub fn as_secs_f64(&self) -> f64 {
        f64::from(self.sec) + f64::from(self.nanosec) * 1e-9
    }

    pub fn is_zero(&self) -> bool {
        self.sec == 0 && self.nanosec == 0
    }
}

impl Duration {
    pub fn from_secs_f64(t: f64) -> Self {
        if !t.is_finite() {
            return Self::default();
        }
        let sec = t.floor().clamp(f64::from(i32::MIN), f64::from(i32::MAX));
        let nanosec = ((t - sec) * 1e9).round().clamp(0.0, 999_999_999.0) as u32;
        Self {
            sec: sec as i32,
            nanosec,
        }
    }

    pub fn as_secs_f64(&self) -> f64 {
        f64::from(self.sec) + f64::from(self.nanosec) * 1e-9
    }
}

impl From<StdDuration> for Duration {
    fn from(d: StdDuration) -> Self {
        Self::from_secs_f64(d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_split_into_sec_and_nanosec() {
        let t = Time::from_secs_f64(12.25);
        assert_eq!((t.sec, t.nanosec), (12, 250_000_000));
        assert!((t.as_secs_f64() - 12.25).abs() < 1e-9);
        assert_eq!(Time::from_secs_f64(-3.0), Time::default());
        let d = Duration::from_secs_f64(-1.5);
        assert_eq!((d.sec, d.nanosec), (-2, 500_000_000));
        assert!((d.as_secs_f64() + 1.5).abs() < 1e-9);
        assert!(Time::now().sec > 1_600_000_000);
    }
}
