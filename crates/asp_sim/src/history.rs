//! The world as it was after each motion, kept only when asked for (an evaluation's
//! judge): what the robot's own checks answered can then be compared with the truth at
//! the time of the views they judged.

use std::collections::VecDeque;

use crate::world::{ObjectIdx, World};

/// The world and the gripper's content at one simulated time.
#[derive(Debug, Clone)]
pub struct WorldMark {
    /// Simulated seconds.
    pub time: f64,
    pub world: World,
    pub held: Option<ObjectIdx>,
    pub held_part: Option<usize>,
}

/// The last `capacity` marks, oldest first.
#[derive(Debug, Clone)]
pub struct WorldHistory {
    marks: VecDeque<WorldMark>,
    capacity: usize,
}

impl WorldHistory {
    pub fn new(capacity: usize) -> Self {
        Self {
            marks: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn push(&mut self, mark: WorldMark) {
        if self.marks.len() == self.capacity {
            self.marks.pop_front();
        }
        self.marks.push_back(mark);
    }

    /// The world at `time`: the newest mark not after it. Simulated time stands still
    /// between motions, so a view captured at `time` saw this mark's world. `None` when
    /// `time` is before every kept mark.
    pub fn at(&self, time: f64) -> Option<&WorldMark> {
        self.marks.iter().rev().find(|m| m.time <= time + 1e-9)
    }

    pub fn len(&self) -> usize {
        self.marks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(time: f64, held: Option<ObjectIdx>) -> WorldMark {
        WorldMark {
            time,
            world: crate::parse_world("name: w\nobjects: []\n", "w.yaml").unwrap(),
            held,
            held_part: None,
        }
    }

    #[test]
    fn a_time_reads_the_newest_mark_not_after_it() {
        let mut h = WorldHistory::new(8);
        h.push(mark(0.0, None));
        h.push(mark(2.0, Some(1)));
        h.push(mark(2.0, Some(2)));
        h.push(mark(5.0, None));
        assert_eq!(h.at(1.9).unwrap().held, None);
        // two motions ending at the same time: the later one is what a view then saw
        assert_eq!(h.at(2.0).unwrap().held, Some(2));
        assert_eq!(h.at(4.0).unwrap().held, Some(2));
        assert_eq!(h.at(7.0).unwrap().held, None);
        assert!(h.at(-1.0).is_none());
    }

    #[test]
    fn the_oldest_marks_go_first() {
        let mut h = WorldHistory::new(2);
        for t in [0.0, 1.0, 2.0] {
            h.push(mark(t, None));
        }
        assert_eq!(h.len(), 2);
        assert!(h.at(0.5).is_none());
        assert_eq!(h.at(1.5).unwrap().time, 1.0);
    }
}
