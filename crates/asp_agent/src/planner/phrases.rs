//! Object phrases for the drive: [`parse_object_phrase`] splits the phrase a subtask
//! names ("egg near the tomato", "leftmost cup", "largest red ball") into the retrieval
//! query and one spatial relation; [`head_noun`] and the part split serve the planner's
//! implied steps and the LLM planner's validation; [`key_presses`] turns typed text into
//! one press per symbol. The goal itself is read by [`super::understand`].

use super::understand::lexicon::ordinal;
use super::{Subtask, Verb};

const ARTICLES: &[&str] = &[
    "the", "a", "an", "some", "my", "your", "this", "that", "these", "those", "any", "one",
];

/// Nouns that name a part of a larger object.
const PART_NOUNS: &[&str] = &[
    "drawer", "door", "lid", "handle", "knob", "button", "buttons", "switch", "plug", "key",
    "keys", "bar", "cap", "lever", "keypad", "trigger", "plunger", "hinge", "cord", "cable",
    "latch", "tab", "pedal",
];

const MAX_TYPED_SYMBOLS: usize = 24;

/// One press per symbol of `text` on `device`: "press the h key", "press the 9 key",
/// "press the space bar". The key is named by its symbol, as keyboards label them; the
/// goal text arrives lower-cased and without quotes (see `normalise`).
pub(crate) fn key_presses(clause: &str, text: &str, device: &str) -> Result<Vec<Subtask>, String> {
    let symbols: Vec<char> = text.chars().collect();
    if symbols.len() > MAX_TYPED_SYMBOLS {
        return Err(format!(
            "{clause:?}: {} symbols to type; at most {MAX_TYPED_SYMBOLS} are typed key by key",
            symbols.len()
        ));
    }
    Ok(symbols
        .into_iter()
        .map(|ch| {
            let action = match ch {
                ' ' => "press the space bar".to_owned(),
                _ => format!("press the {ch} key"),
            };
            Subtask::new(Verb::TurnOn, device).with_action(action)
        })
        .collect())
}

/// The phrase without a leading article.
fn strip_article(phrase: &str) -> String {
    let p = phrase.trim().trim_end_matches(',');
    for a in ARTICLES {
        if let Some(rest) = p.strip_prefix(a).and_then(|r| r.strip_prefix(' ')) {
            // "one" only as an article before another word ("one apple")
            return rest.trim().to_owned();
        }
    }
    p.to_owned()
}

/// Where qualifiers begin in a noun phrase.
const QUALIFIER_MARKERS: &[&str] = &[
    " that ",
    " which ",
    " who ",
    " near ",
    " next to ",
    " close to ",
    " closest to ",
    " nearest to ",
    " beside ",
    " by ",
    " with ",
    " on ",
    " in ",
    " inside ",
    " under ",
    " behind ",
    " from ",
    " of ",
    " to the ",
    " left of ",
    " right of ",
    " far from ",
    " farthest from ",
    " furthest from ",
    " at ",
];

/// The noun a phrase is about: its last word before any qualifier ("red book near the
/// butter" → "book", "top drawer" → "drawer").
pub fn head_noun(phrase: &str) -> Option<String> {
    let p = format!(" {} ", strip_article(phrase));
    let cut = QUALIFIER_MARKERS
        .iter()
        .filter_map(|m| p.find(m))
        .min()
        .unwrap_or(p.len());
    p[..cut]
        .split_whitespace()
        .last()
        .map(|w| w.trim_end_matches("'s").to_owned())
}

fn is_part_noun(phrase: &str) -> bool {
    head_noun(phrase).is_some_and(|h| PART_NOUNS.contains(&h.as_str()))
}

/// "top drawer of the desk" → ("desk", Some("top drawer")); "mug's handle" → ("mug",
/// Some("handle")); "button on the microwave" (with `on`) → ("microwave",
/// Some("button")). Only when the first noun is a part noun.
fn split_part(phrase: &str, allow_on: bool) -> (String, Option<String>) {
    let p = strip_article(phrase);
    let mut seps: Vec<&str> = vec![" of the ", " of "];
    if allow_on {
        seps.extend([" on the ", " on ", " of the ", " in the "]);
    }
    for sep in seps {
        if let Some(i) = p.find(sep) {
            let (part, whole) = (&p[..i], &p[i + sep.len()..]);
            if is_part_noun(part) && !whole.trim().is_empty() {
                return (strip_article(whole), Some(strip_article(part)));
            }
        }
    }
    // possessive: "the mug's handle"
    if let Some(i) = p.find("'s ") {
        let (whole, part) = (&p[..i], &p[i + 3..]);
        if is_part_noun(part) {
            return (strip_article(whole), Some(strip_article(part)));
        }
    }
    (p, None)
}

/// [`split_part`] for other planner modules: the whole object (article removed) and
/// the part, when the phrase is "P of the O" or "O's P".
pub(crate) fn split_part_pub(phrase: &str) -> (String, Option<String>) {
    split_part(phrase, false)
}

/// How an object phrase singles out one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relation {
    /// Nearest to the reference object.
    Near(String),
    /// Farthest from the reference object.
    FarFrom(String),
    /// Left of the reference object (as seen from the robot).
    LeftOf(String),
    /// Right of the reference object.
    RightOf(String),
    Leftmost,
    Rightmost,
    Largest,
    Smallest,
    /// Nearest to the robot.
    Closest,
    /// Farthest from the robot.
    Farthest,
    /// Between two reference objects (the smallest sum of distances to both).
    Between(String, String),
    /// The `n`-th counted from the left (`left`) or the right; -1 is the last.
    NthFrom {
        n: i32,
        left: bool,
    },
}

impl Relation {
    /// Whether the relation picks by comparing candidates with each other ("the cup on
    /// the left", "the large ball", "the second egg"), so that one candidate alone cannot
    /// show it is the one meant; a relation to another object ("the egg near the
    /// tomato", "the thumbtack on the cork board") describes the one found as well.
    pub fn compares_candidates(&self) -> bool {
        !matches!(
            self,
            Relation::Near(_) | Relation::LeftOf(_) | Relation::RightOf(_) | Relation::Between(..)
        )
    }
}

/// An object phrase split for retrieval: the query (category and attributes) and an
/// optional spatial relation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectPhrase {
    pub query: String,
    pub relation: Option<Relation>,
}

/// "egg that is near the tomato" → query "egg", Near("tomato"); "left cup" → "cup",
/// Leftmost; "biggest red bowl" → "red bowl", Largest; "mug with a handle" → the whole
/// phrase (attributes stay in the query).
pub fn parse_object_phrase(phrase: &str) -> ObjectPhrase {
    let mut p = format!(" {} ", strip_article(phrase));
    for filler in [
        " that is ",
        " which is ",
        " that's ",
        " that are ",
        " which are ",
        " located ",
    ] {
        p = p.replace(filler, " ");
    }
    type MakeRelation = fn(String) -> Relation;
    let relations: &[(&str, MakeRelation)] = &[
        (" to the left of ", Relation::LeftOf),
        (" on the left of ", Relation::LeftOf),
        (" left of ", Relation::LeftOf),
        (" to the right of ", Relation::RightOf),
        (" on the right of ", Relation::RightOf),
        (" right of ", Relation::RightOf),
        (" farthest from ", Relation::FarFrom),
        (" furthest from ", Relation::FarFrom),
        (" far from ", Relation::FarFrom),
        (" away from ", Relation::FarFrom),
        (" closest to ", Relation::Near),
        (" nearest to ", Relation::Near),
        (" next to ", Relation::Near),
        (" close to ", Relation::Near),
        (" near ", Relation::Near),
        (" beside ", Relation::Near),
        (" by ", Relation::Near),
        (" on top of ", Relation::Near),
        (" on ", Relation::Near),
        (" inside ", Relation::Near),
        (" in ", Relation::Near),
    ];
    // "cup between the plate and the bowl"
    if let Some((q, refs)) = p.split_once(" between ")
        && let Some((a, b)) = refs.split_once(" and ")
        && !q.trim().is_empty()
    {
        return ObjectPhrase {
            query: q.trim().to_owned(),
            relation: Some(Relation::Between(strip_article(a), strip_article(b))),
        };
    }
    // "second cup from the left"
    for (suffix, left) in [(" from the left ", true), (" from the right ", false)] {
        if let Some(q) = p.strip_suffix(suffix) {
            let words: Vec<&str> = q.split_whitespace().collect();
            let n = words.first().and_then(|w| ordinal(w));
            if let (Some(n), true) = (n, words.len() >= 2) {
                return ObjectPhrase {
                    query: words[1..].join(" "),
                    relation: Some(Relation::NthFrom { n, left }),
                };
            }
        }
    }
    for suffix in [" on the left ", " on the left side ", " to the left "] {
        if let Some(q) = p.strip_suffix(suffix) {
            return ObjectPhrase {
                query: q.trim().to_owned(),
                relation: Some(Relation::Leftmost),
            };
        }
    }
    for suffix in [" on the right ", " on the right side ", " to the right "] {
        if let Some(q) = p.strip_suffix(suffix) {
            return ObjectPhrase {
                query: q.trim().to_owned(),
                relation: Some(Relation::Rightmost),
            };
        }
    }
    let first = relations
        .iter()
        .filter_map(|(m, f)| p.find(m).map(|i| (i, m.len(), f)))
        .min_by_key(|(i, len, _)| (*i, std::cmp::Reverse(*len)));
    let (mut query, mut relation) = match first {
        Some((i, len, f)) if i > 0 => {
            let reference = strip_article(p[i + len..].trim());
            (p[..i].trim().to_owned(), Some(f(reference)))
        }
        _ => (p.trim().to_owned(), None),
    };
    let adjectives: &[(&str, Relation)] = &[
        ("leftmost", Relation::Leftmost),
        ("left", Relation::Leftmost),
        ("rightmost", Relation::Rightmost),
        ("right", Relation::Rightmost),
        ("biggest", Relation::Largest),
        ("largest", Relation::Largest),
        ("bigger", Relation::Largest),
        ("larger", Relation::Largest),
        ("big", Relation::Largest),
        ("large", Relation::Largest),
        ("smallest", Relation::Smallest),
        ("smaller", Relation::Smallest),
        ("small", Relation::Smallest),
        ("little", Relation::Smallest),
        ("tiny", Relation::Smallest),
        ("closest", Relation::Closest),
        ("nearest", Relation::Closest),
        ("farthest", Relation::Farthest),
        ("furthest", Relation::Farthest),
    ];
    if relation.is_none() {
        let words: Vec<&str> = query.split_whitespace().collect();
        if words.len() >= 2
            && let Some((_, r)) = adjectives.iter().find(|(a, _)| *a == words[0])
        {
            relation = Some(r.clone());
            query = words[1..].join(" ");
        }
    }
    ObjectPhrase { query, relation }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_nouns_and_parts() {
        assert_eq!(
            head_noun("the red book near the butter").as_deref(),
            Some("book")
        );
        assert_eq!(head_noun("top drawer").as_deref(), Some("drawer"));
        assert_eq!(
            split_part("the top drawer of the desk", false),
            ("desk".to_owned(), Some("top drawer".to_owned()))
        );
        assert_eq!(
            split_part("the mug's handle", false),
            ("mug".to_owned(), Some("handle".to_owned()))
        );
        assert_eq!(
            split_part("cup of coffee", false),
            ("cup of coffee".to_owned(), None)
        );
        assert_eq!(
            split_part("space bar on the keyboard", true),
            ("keyboard".to_owned(), Some("space bar".to_owned()))
        );
    }

    #[test]
    fn object_phrases_for_retrieval() {
        let cases: &[(&str, &str, Option<Relation>)] = &[
            ("mug", "mug", None),
            ("red mug with a handle", "red mug with a handle", None),
            (
                "egg that is near the tomato",
                "egg",
                Some(Relation::Near("tomato".into())),
            ),
            (
                "red book near the butter",
                "red book",
                Some(Relation::Near("butter".into())),
            ),
            (
                "cup to the left of the plate",
                "cup",
                Some(Relation::LeftOf("plate".into())),
            ),
            (
                "cup right of the bowl",
                "cup",
                Some(Relation::RightOf("bowl".into())),
            ),
            ("left cup", "cup", Some(Relation::Leftmost)),
            ("cup on the right", "cup", Some(Relation::Rightmost)),
            ("biggest bowl", "bowl", Some(Relation::Largest)),
            ("small red block", "red block", Some(Relation::Smallest)),
            ("closest apple", "apple", Some(Relation::Closest)),
            (
                "apple in the bowl",
                "apple",
                Some(Relation::Near("bowl".into())),
            ),
            (
                "apple far from the plate",
                "apple",
                Some(Relation::FarFrom("plate".into())),
            ),
        ];
        for (phrase, query, relation) in cases {
            let p = parse_object_phrase(phrase);
            assert_eq!(p.query, *query, "{phrase}");
            assert_eq!(&p.relation, relation, "{phrase}");
        }
    }
}
