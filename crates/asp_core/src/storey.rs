//! Which storey of a building a request keeps to ("the phone upstairs", "the mug on the
//! second floor"), as a typed value: the agent's tools carry it as a string, parsed here
//! into [`Storey`] before anything looks or moves, and the object map resolves it
//! against the storeys it knows (the elevator's) and the one the base stands on.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A storey as a request names it: relative to the robot's ("upstairs") or by name
/// ("the ground floor", "floor 2").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Storey {
    /// "upstairs": any storey above the robot's.
    Above,
    /// "downstairs": any storey below the robot's.
    Below,
    /// "on this floor": the robot's own storey.
    Same,
    /// "the ground floor": the elevator's first storey.
    Ground,
    /// "the top floor": the elevator's last storey.
    Top,
    /// "floor 2", "the second floor", "level 2", numbered as the site numbers its floors
    /// ([`FloorNumbering`]).
    Numbered(u32),
}

/// How a site numbers its floors: the number its ground floor goes by (1 in the United
/// States, where the ground floor is the first; 0 in Britain and much of Europe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorNumbering {
    pub ground: u32,
}

impl Default for FloorNumbering {
    fn default() -> Self {
        Self { ground: 1 }
    }
}

/// What the strings [`Storey`] parses look like, for error messages and tool schemas.
pub const STOREY_FORMS: &str =
    "\"upstairs\", \"downstairs\", \"this floor\", \"ground floor\", \"top floor\" or \"floor N\"";

const ORDINALS: &[(&str, u32)] = &[
    ("zeroth", 0),
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("fourth", 4),
    ("fifth", 5),
    ("sixth", 6),
    ("seventh", 7),
    ("eighth", 8),
    ("ninth", 9),
    ("tenth", 10),
];

/// The number an ordinal counts: "second" → 2, "2nd" → 2 (up to 199). The one list of
/// ordinal words, for storeys here and for "the second mug" in the goal grammar.
pub fn ordinal(w: &str) -> Option<u32> {
    let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    if !digits.is_empty() && digits.len() < w.len() {
        let suffix = &w[digits.len()..];
        return digits
            .parse()
            .ok()
            .filter(|n| *n < 200 && ["st", "nd", "rd", "th"].contains(&suffix));
    }
    ORDINALS.iter().find(|(k, _)| *k == w).map(|(_, n)| *n)
}

/// "2", "2nd", "second", "two".
fn floor_number(w: &str) -> Option<u32> {
    const WORDS: &[(&str, u32)] = &[
        ("zero", 0),
        ("one", 1),
        ("two", 2),
        ("three", 3),
        ("four", 4),
        ("five", 5),
        ("six", 6),
        ("seven", 7),
        ("eight", 8),
        ("nine", 9),
        ("ten", 10),
    ];
    if let Some(n) = ordinal(w) {
        return Some(n);
    }
    if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) {
        return w.parse().ok().filter(|n| *n < 200);
    }
    WORDS.iter().find(|(k, _)| *k == w).map(|(_, n)| *n)
}

impl Storey {
    /// The storey indices (0: the ground floor, of `count` storeys) this names, for a
    /// robot on storey `here`; `Err` says why none (no storey above the top one, a floor
    /// the building does not have).
    pub fn resolve(
        self,
        count: usize,
        here: usize,
        numbering: FloorNumbering,
    ) -> Result<Vec<usize>, String> {
        if count == 0 {
            return Err("the building's storeys are not known".into());
        }
        let here = here.min(count - 1);
        let out: Vec<usize> = match self {
            Storey::Above => (here + 1..count).collect(),
            Storey::Below => (0..here).collect(),
            Storey::Same => vec![here],
            Storey::Ground => vec![0],
            Storey::Top => vec![count - 1],
            Storey::Numbered(n) => {
                let index = n.checked_sub(numbering.ground).map(|i| i as usize);
                match index.filter(|&i| i < count) {
                    Some(i) => vec![i],
                    None => {
                        let first = numbering.ground;
                        let last = first as usize + count - 1;
                        return Err(format!(
                            "there is no floor {n}: the building's floors are numbered {first} to {last}"
                        ));
                    }
                }
            }
        };
        if out.is_empty() {
            let which = if self == Storey::Above {
                "above"
            } else {
                "below"
            };
            return Err(format!(
                "there is no storey {which} the robot's (it is on floor {} of {count}, numbered from {})",
                here as u32 + numbering.ground,
                numbering.ground
            ));
        }
        Ok(out)
    }

    /// Whether this names the robot's storey whatever storey that is.
    pub fn is_relative(self) -> bool {
        matches!(self, Storey::Above | Storey::Below | Storey::Same)
    }
}

impl fmt::Display for Storey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Storey::Above => f.write_str("upstairs"),
            Storey::Below => f.write_str("downstairs"),
            Storey::Same => f.write_str("this floor"),
            Storey::Ground => f.write_str("ground floor"),
            Storey::Top => f.write_str("top floor"),
            Storey::Numbered(n) => write!(f, "floor {n}"),
        }
    }
}

/// Why a string is not a storey.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a storey: expected {STOREY_FORMS}")]
pub struct NotAStorey(pub String);

impl FromStr for Storey {
    type Err = NotAStorey;

    /// The forms [`fmt::Display`] writes, and the usual ways of saying them ("up", "the
    /// floor above", "the second floor", "2nd floor", "level 2", "main floor").
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
            .filter(|w| !w.is_empty() && !matches!(*w, "the" | "on" | "of" | "to"))
            .collect();
        let is_floor = |w: &str| matches!(w, "floor" | "storey" | "story" | "level");
        let storey = match words.as_slice() {
            ["upstairs" | "up" | "above"]
            | ["floor" | "storey" | "story" | "level", "above" | "up"] => Storey::Above,
            [w, f] if is_floor(f) && matches!(*w, "upper" | "higher") => Storey::Above,
            ["downstairs" | "down" | "below"]
            | ["floor" | "storey" | "story" | "level", "below" | "down"] => Storey::Below,
            [w, f] if is_floor(f) && matches!(*w, "lower" | "downstairs") => Storey::Below,
            [w, f] if is_floor(f) && matches!(*w, "this" | "same" | "current") => Storey::Same,
            ["here"] => Storey::Same,
            [w, f]
                if is_floor(f)
                    && matches!(*w, "ground" | "main" | "street" | "bottom" | "lowest") =>
            {
                Storey::Ground
            }
            ["ground"] => Storey::Ground,
            [w, f] if is_floor(f) && matches!(*w, "top" | "highest") => Storey::Top,
            [f, n] if is_floor(f) => {
                Storey::Numbered(floor_number(n).ok_or_else(|| NotAStorey(s.to_owned()))?)
            }
            [n, f] if is_floor(f) => {
                Storey::Numbered(floor_number(n).ok_or_else(|| NotAStorey(s.to_owned()))?)
            }
            _ => return Err(NotAStorey(s.to_owned())),
        };
        Ok(storey)
    }
}

impl From<Storey> for String {
    fn from(s: Storey) -> Self {
        s.to_string()
    }
}

impl TryFrom<String> for Storey {
    type Error = NotAStorey;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// Where a request keeps to: a room, a storey, both, or anywhere (both `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Within {
    /// A room as the request named it ("office"), told by the map's building memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storey: Option<Storey>,
    /// The storey (0: the ground floor) a relative `storey` ("upstairs", "this floor")
    /// counts from; `None`: the one the base stands on. A goal keeps the storey its
    /// first relative request was counted from, so "the phone upstairs" tried again
    /// from upstairs is still the same storey.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_from: Option<u32>,
}

impl Within {
    /// No constraint.
    pub fn anywhere() -> Self {
        Self::default()
    }

    pub fn room(room: impl Into<String>) -> Self {
        Self {
            room: Some(room.into()),
            ..Self::default()
        }
    }

    pub fn storey(storey: Storey) -> Self {
        Self {
            storey: Some(storey),
            ..Self::default()
        }
    }

    pub fn is_anywhere(&self) -> bool {
        self.room.is_none() && self.storey.is_none()
    }
}

/// " in the office", " upstairs", " in the office on floor 2", or nothing: what follows
/// the object in a sentence.
impl fmt::Display for Within {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(room) = &self.room {
            write!(f, " in the {room}")?;
        }
        match self.storey {
            Some(s @ (Storey::Above | Storey::Below)) => write!(f, " {s}"),
            Some(s @ (Storey::Numbered(_) | Storey::Same)) => write!(f, " on {s}"),
            Some(s) => write!(f, " on the {s}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_are_read_as_words_and_as_numbers_with_their_suffix() {
        for (w, n) in [
            ("first", 1),
            ("tenth", 10),
            ("2nd", 2),
            ("11th", 11),
            ("zeroth", 0),
        ] {
            assert_eq!(ordinal(w), Some(n), "{w}");
        }
        for w in ["2", "second-hand", "2x", "last", "", "300th"] {
            assert_eq!(ordinal(w), None, "{w}");
        }
    }

    #[test]
    fn the_usual_ways_of_naming_a_storey_parse() {
        let cases = [
            ("upstairs", Storey::Above),
            ("the floor above", Storey::Above),
            ("Upper floor", Storey::Above),
            ("downstairs", Storey::Below),
            ("lower-level", Storey::Below),
            ("this floor", Storey::Same),
            ("the ground floor", Storey::Ground),
            ("main floor", Storey::Ground),
            ("top floor", Storey::Top),
            ("floor 2", Storey::Numbered(2)),
            ("the second floor", Storey::Numbered(2)),
            ("3rd floor", Storey::Numbered(3)),
            ("level two", Storey::Numbered(2)),
        ];
        for (said, storey) in cases {
            assert_eq!(said.parse::<Storey>(), Ok(storey), "{said}");
            // what it writes parses back to itself
            assert_eq!(storey.to_string().parse::<Storey>(), Ok(storey));
        }
        for bad in [
            "",
            "kitchen",
            "floor",
            "floor x",
            "the 2x floor",
            "up the stairs now",
        ] {
            let e = bad.parse::<Storey>().unwrap_err();
            assert!(e.to_string().contains("is not a storey"), "{e}");
        }
    }

    #[test]
    fn storeys_resolve_against_the_robots_own() {
        let us = FloorNumbering::default();
        let uk = FloorNumbering { ground: 0 };
        assert_eq!(Storey::Above.resolve(3, 0, us), Ok(vec![1, 2]));
        assert_eq!(Storey::Below.resolve(3, 2, us), Ok(vec![0, 1]));
        assert_eq!(Storey::Same.resolve(3, 1, us), Ok(vec![1]));
        assert_eq!(Storey::Top.resolve(3, 0, us), Ok(vec![2]));
        assert_eq!(Storey::Ground.resolve(3, 2, us), Ok(vec![0]));
        // "the second floor": one up in the United States, two up in Britain
        assert_eq!(Storey::Numbered(2).resolve(3, 0, us), Ok(vec![1]));
        assert_eq!(Storey::Numbered(2).resolve(3, 0, uk), Ok(vec![2]));
        let none_above = Storey::Above.resolve(2, 1, us).unwrap_err();
        assert!(none_above.contains("no storey above"), "{none_above}");
        let none_below = Storey::Below.resolve(2, 0, uk).unwrap_err();
        assert!(none_below.contains("no storey below"), "{none_below}");
        let missing = Storey::Numbered(5).resolve(2, 0, us).unwrap_err();
        assert!(
            missing.contains("no floor 5") && missing.contains("1 to 2"),
            "{missing}"
        );
        assert!(Storey::Numbered(0).resolve(2, 0, us).is_err());
        assert!(Storey::Same.resolve(0, 0, us).is_err());
    }

    #[test]
    fn storeys_travel_as_their_names() {
        let json = serde_json::to_string(&Storey::Numbered(2)).unwrap();
        assert_eq!(json, "\"floor 2\"");
        assert_eq!(
            serde_json::from_str::<Storey>("\"upstairs\"").unwrap(),
            Storey::Above
        );
        assert!(serde_json::from_str::<Storey>("\"attic\"").is_err());
        let within = Within {
            room: Some("office".into()),
            storey: Some(Storey::Numbered(2)),
            counted_from: None,
        };
        assert_eq!(within.to_string(), " in the office on floor 2");
        assert_eq!(Within::storey(Storey::Above).to_string(), " upstairs");
        assert_eq!(Within::anywhere().to_string(), "");
    }
}
