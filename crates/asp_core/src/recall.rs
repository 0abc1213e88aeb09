//! What the robot's long-term (building) memory says about a request: the answer of the
//! agent's `recall_memory` tool, read by the model and by people ("where did you see my
//! stapler?"). Recalling never moves the robot.

use serde::{Deserialize, Serialize};

/// The building memory's answer to a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recollection {
    /// What was asked, as asked.
    pub query: String,
    /// The room the request was kept to, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// The storey the request was kept to, when it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storey: Option<crate::Storey>,
    /// Whether a building memory was consulted at all (false: none is configured, its
    /// file is missing or empty; [`Self::note`] says which).
    pub consulted: bool,
    /// Objects the memory saw like the request, best first, one per place.
    pub places: Vec<RecalledObject>,
    /// With a room: what the robot can go to for "go to the kitchen", the objects the
    /// memory took the room for, furniture first, then by how much each told the room.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub room_landmarks: Vec<String>,
    /// What the places were kept to or left out ("kept to the office: …", "1 place found
    /// empty during this run left out"), or why nothing could be consulted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// One remembered object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecalledObject {
    /// The description the memory keeps ("red plastic stapler").
    pub description: String,
    /// Where it was, map frame, metres.
    pub position: [f64; 3],
    /// Cosine of the request's and the description's text embeddings.
    pub relevance: f32,
    /// From the robot's base now (in the plane), metres; `None` when the base pose is
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_m: Option<f64>,
    /// The kind of room the memory's zone around it looks like (learned from what the
    /// zone saw, zero-shot; never a label of the world).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks_like: Option<String>,
    /// What else the memory saw there (the zone's summary words), a few.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen_with: Vec<String>,
}

impl Recollection {
    /// An answer that consulted nothing, saying why.
    pub fn unavailable(query: &str, why: impl Into<String>) -> Self {
        Self {
            query: query.to_owned(),
            note: why.into(),
            ..Self::default()
        }
    }

    /// The answer in sentences, for the model and for people: each place with where it
    /// is, how far and what room it looks like.
    pub fn describe(&self) -> String {
        let within = crate::Within {
            room: self.room.clone(),
            storey: self.storey,
            counted_from: None,
        };
        let asked = format!("{:?}{within}", self.query);
        let mut out = if !self.consulted {
            format!("the building memory was not consulted for {asked}")
        } else if self.places.is_empty() {
            format!("the building memory saw nothing like {asked}")
        } else {
            let places: Vec<String> = self
                .places
                .iter()
                .enumerate()
                .map(|(i, p)| format!("{}. {}", i + 1, p.describe()))
                .collect();
            format!(
                "the building memory saw {} place(s) with something like {asked}: {}",
                self.places.len(),
                places.join("; ")
            )
        };
        if !self.note.is_empty() {
            out.push_str(&format!(" ({})", self.note.trim_end_matches('.')));
        }
        out
    }
}

impl RecalledObject {
    /// "a red plastic stapler at (3.20, 1.10, 0.74) m, 4.2 m from the robot, in what
    /// looks like an office (also seen there: wooden desk, desk lamp), relevance 0.81".
    pub fn describe(&self) -> String {
        let [x, y, z] = self.position;
        let mut out = format!("{} at ({x:.2}, {y:.2}, {z:.2}) m", self.description);
        if let Some(d) = self.distance_m {
            out.push_str(&format!(", {d:.1} m from the robot"));
        }
        if let Some(kind) = &self.looks_like {
            out.push_str(&format!(", in what looks like {}", with_article(kind)));
        }
        if !self.seen_with.is_empty() {
            out.push_str(&format!(
                " (also seen there: {})",
                self.seen_with.join(", ")
            ));
        }
        out.push_str(&format!(", relevance {:.2}", self.relevance));
        out
    }
}

/// "an office", "a kitchen".
fn with_article(noun: &str) -> String {
    let vowel = noun
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} {noun}", if vowel { "an" } else { "a" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stapler() -> RecalledObject {
        RecalledObject {
            description: "red plastic stapler".into(),
            position: [3.2, 1.1, 0.74],
            relevance: 0.81,
            distance_m: Some(4.23),
            looks_like: Some("office".into()),
            seen_with: vec!["wooden desk".into(), "desk lamp".into()],
        }
    }

    #[test]
    fn a_place_says_where_how_far_and_what_room_it_looks_like() {
        let s = stapler().describe();
        assert_eq!(
            s,
            "red plastic stapler at (3.20, 1.10, 0.74) m, 4.2 m from the robot, in what looks like an office (also seen there: wooden desk, desk lamp), relevance 0.81"
        );
        let bare = RecalledObject {
            distance_m: None,
            looks_like: Some("kitchen".into()),
            seen_with: Vec::new(),
            ..stapler()
        };
        assert_eq!(
            bare.describe(),
            "red plastic stapler at (3.20, 1.10, 0.74) m, in what looks like a kitchen, relevance 0.81"
        );
    }

    #[test]
    fn an_answer_tells_nothing_seen_from_nothing_consulted() {
        let none = Recollection::unavailable("stapler", "no building memory at var/x.redb");
        assert_eq!(
            none.describe(),
            "the building memory was not consulted for \"stapler\" (no building memory at var/x.redb)"
        );
        let empty = Recollection {
            query: "unicorn".into(),
            room: Some("office".into()),
            consulted: true,
            ..Recollection::default()
        };
        assert_eq!(
            empty.describe(),
            "the building memory saw nothing like \"unicorn\" in the office"
        );
        let upstairs = Recollection {
            storey: Some(crate::Storey::Above),
            ..empty
        };
        assert_eq!(
            upstairs.describe(),
            "the building memory saw nothing like \"unicorn\" in the office upstairs"
        );
        let one = Recollection {
            query: "stapler".into(),
            consulted: true,
            places: vec![stapler()],
            ..Recollection::default()
        };
        assert!(
            one.describe()
                .starts_with("the building memory saw 1 place(s) with something like \"stapler\": 1. red plastic stapler at"),
            "{}",
            one.describe()
        );
    }
}
