//! Matching words by meaning: a verb no list knows is embedded in its clause ("yank the
//! charger") with the text embedder (the MiniLM sentence model we ship) and compared
//! with each prototype verb in the same clause ("unplug the charger", "grab the
//! charger", …), so that the object's words weigh the same on every side, and alone,
//! so that they do not drown the verb. The nearest class is the match; its similarity and its margin over the
//! nearest other class are the confidence. With a margin of at least `min_margin` the
//! grammar acts on it, with less the agent asks back ("did you mean …?"); under
//! `min_similarity` the word is not taken for a verb at all. Adjectives before a noun
//! are matched alone against attribute and noun prototypes. Relation words no list knows
//! ("adjacent to", "tucked under") are matched against relation prototypes, in a neutral
//! clause and alone, with their own thresholds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use asp_core::models::{ModelError, TextEmbedder};

use crate::planner::Verb;
use crate::planner::corpus::{ActionKind, RelationKind};

use super::lexicon::Sense;

/// What a verb prototype stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerbClass {
    Sense(Sense),
    /// Greetings, thanks, small talk: not a request.
    Chat,
    /// Ruling an object out ("ignore the glass one").
    Exclude,
}

/// Prototype phrases per class. Words, not goals: they say what each verb means.
const VERB_PROTOTYPES: &[(&str, VerbClass)] = &[
    ("pick up", VerbClass::Sense(Sense::Act(Verb::PickUp, None))),
    ("grab", VerbClass::Sense(Sense::Act(Verb::PickUp, None))),
    (
        "take hold of",
        VerbClass::Sense(Sense::Act(Verb::PickUp, None)),
    ),
    ("fetch", VerbClass::Sense(Sense::Act(Verb::PickUp, None))),
    ("lift", VerbClass::Sense(Sense::Act(Verb::PickUp, None))),
    ("grip", VerbClass::Sense(Sense::Act(Verb::PickUp, None))),
    ("bring", VerbClass::Sense(Sense::Carry)),
    ("carry", VerbClass::Sense(Sense::Carry)),
    ("deliver", VerbClass::Sense(Sense::Carry)),
    ("put down", VerbClass::Sense(Sense::Put)),
    ("place", VerbClass::Sense(Sense::Put)),
    ("set down", VerbClass::Sense(Sense::Put)),
    ("drop", VerbClass::Sense(Sense::Put)),
    ("store away", VerbClass::Sense(Sense::Put)),
    ("open", VerbClass::Sense(Sense::Act(Verb::Open, None))),
    ("unlock", VerbClass::Sense(Sense::Act(Verb::Open, None))),
    ("pull open", VerbClass::Sense(Sense::Act(Verb::Open, None))),
    ("close", VerbClass::Sense(Sense::Act(Verb::Close, None))),
    ("shut", VerbClass::Sense(Sense::Act(Verb::Close, None))),
    ("seal", VerbClass::Sense(Sense::Act(Verb::Close, None))),
    ("fasten", VerbClass::Sense(Sense::Act(Verb::Close, None))),
    ("latch", VerbClass::Sense(Sense::Act(Verb::Close, None))),
    ("turn on", VerbClass::Sense(Sense::Act(Verb::TurnOn, None))),
    (
        "switch on",
        VerbClass::Sense(Sense::Act(Verb::TurnOn, None)),
    ),
    ("activate", VerbClass::Sense(Sense::Act(Verb::TurnOn, None))),
    ("start", VerbClass::Sense(Sense::Act(Verb::TurnOn, None))),
    (
        "turn off",
        VerbClass::Sense(Sense::Act(Verb::TurnOff, None)),
    ),
    (
        "switch off",
        VerbClass::Sense(Sense::Act(Verb::TurnOff, None)),
    ),
    (
        "deactivate",
        VerbClass::Sense(Sense::Act(Verb::TurnOff, None)),
    ),
    ("mute", VerbClass::Sense(Sense::Act(Verb::TurnOff, None))),
    (
        "press",
        VerbClass::Sense(Sense::Act(Verb::TurnOn, Some(ActionKind::Press))),
    ),
    (
        "push the button",
        VerbClass::Sense(Sense::Act(Verb::TurnOn, Some(ActionKind::Press))),
    ),
    (
        "unplug",
        VerbClass::Sense(Sense::Act(Verb::PickUp, Some(ActionKind::Unplug))),
    ),
    ("wash", VerbClass::Sense(Sense::Unsupported)),
    ("clean", VerbClass::Sense(Sense::Unsupported)),
    ("cook", VerbClass::Sense(Sense::Unsupported)),
    ("fold", VerbClass::Sense(Sense::Unsupported)),
    ("cut", VerbClass::Sense(Sense::Unsupported)),
    ("paint", VerbClass::Sense(Sense::Unsupported)),
    ("pour", VerbClass::Sense(Sense::Unsupported)),
    ("repair", VerbClass::Sense(Sense::Unsupported)),
    ("play", VerbClass::Sense(Sense::Unsupported)),
    ("hit", VerbClass::Sense(Sense::Harm)),
    ("hurt", VerbClass::Sense(Sense::Harm)),
    ("attack", VerbClass::Sense(Sense::Harm)),
    ("break", VerbClass::Sense(Sense::Harm)),
    ("burn", VerbClass::Sense(Sense::Harm)),
    ("ignore", VerbClass::Exclude),
    ("avoid", VerbClass::Exclude),
    ("leave out", VerbClass::Exclude),
    ("pass over", VerbClass::Exclude),
    ("hello", VerbClass::Chat),
    ("thanks", VerbClass::Chat),
    ("goodbye", VerbClass::Chat),
    ("good morning", VerbClass::Chat),
    ("sorry", VerbClass::Chat),
];

/// Attribute prototypes against object-noun prototypes, for a word before the noun.
const ATTRIBUTE_PROTOTYPES: &[&str] = &[
    "red",
    "blue",
    "dark green",
    "colour",
    "wooden",
    "metal",
    "plastic",
    "material",
    "big",
    "small",
    "size",
    "empty",
    "dirty",
    "broken",
    "shiny",
    "old",
];
const NOUN_PROTOTYPES: &[&str] = &[
    "coffee",
    "kitchen",
    "table",
    "water",
    "desk",
    "phone",
    "book",
    "food",
    "tool",
    "furniture",
    "machine",
    "paper",
    "toy",
    "laundry",
    "garden",
    "bathroom",
];

/// Who can own things: a possessive word nearer these than any noun prototype or
/// [`THING_PROTOTYPES`] is an owner ("the toddler's cup" is a cup), not a thing with
/// parts. Single words are weak evidence ("fan", "safe" and "can" read as people as
/// often as things), so an owner by meaning never turns a part into a thing.
const OWNER_PROTOTYPES: &[&str] = &[
    "person",
    "woman",
    "man",
    "child",
    "baby",
    "friend",
    "mother",
    "father",
    "grandmother",
    "guest",
    "neighbour",
    "dog",
    "cat",
    "pet",
];
/// Kinds of things the noun prototypes leave far (a coat, a chest, a candle are nearer
/// a person than any noun prototype, not nearer than these).
const THING_PROTOTYPES: &[&str] = &[
    "container",
    "appliance",
    "clothes",
    "device",
    "box",
    "light",
];

/// Prototype phrases per relation kind. Only the kinds whose anchor is one object:
/// "between" and the superlatives have their own shapes.
const RELATION_PROTOTYPES: &[(&str, RelationKind)] = &[
    ("next to", RelationKind::Near),
    ("near", RelationKind::Near),
    ("close to", RelationKind::Near),
    ("beside", RelationKind::Near),
    ("to the left of", RelationKind::LeftOf),
    ("left of", RelationKind::LeftOf),
    ("to the right of", RelationKind::RightOf),
    ("right of", RelationKind::RightOf),
    ("behind", RelationKind::Behind),
    ("at the back of", RelationKind::Behind),
    ("in front of", RelationKind::InFrontOf),
    ("facing", RelationKind::InFrontOf),
    ("on top of", RelationKind::On),
    ("resting on", RelationKind::On),
    ("inside", RelationKind::In),
    ("within", RelationKind::In),
    ("under", RelationKind::Under),
    ("below", RelationKind::Under),
];

/// The neutral clause relation words are weighed in, so that a phrase is compared as a
/// relation between two things rather than as loose words.
const RELATION_CLAUSE: (&str, &str) = ("the cup", "the box");

/// A relation phrase is taken for a relation from this combined similarity, and acted
/// on from this margin over the nearest other kind (under it the agent asks back).
/// Chosen on 33 relation phrases outside the lists (not corpus goals): at 0.05 the
/// clear ones pass ("adjacent to", "in the vicinity of", "tucked under", "hidden
/// behind", "just left of") and the vague ones ask ("across from", "to the side of",
/// "in the middle of").
const RELATION_SIMILARITY: f32 = 0.7;
const RELATION_MARGIN: f32 = 0.05;

/// An unknown word before a noun is an attribute when it is this near an attribute
/// prototype and this much nearer to one than to any noun prototype.
const ATTRIBUTE_SIMILARITY: f32 = 0.5;
const ATTRIBUTE_MARGIN: f32 = 0.15;

/// How much the verb's cosine alone weighs against its cosine in the clause. Chosen
/// on a list of 46 verbs outside the lexicon: at 0.5 single-word embeddings of rare
/// verbs ("slam", "plonk") swing the match, at 0 long clauses leave no margin
/// ("snatch up the dice next to the board game").
const ALONE_WEIGHT: f32 = 0.25;

/// A class matched by meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct VerbMatch {
    pub class: VerbClass,
    /// The prototype it is nearest to.
    pub prototype: &'static str,
    /// Cosine similarity with that prototype, both in the clause.
    pub similarity: f32,
    /// How much nearer than the nearest prototype of another class (by the cosines
    /// in the clause and alone, weighed).
    pub margin: f32,
    /// The clause's shape when it chose among classes the meaning could not tell apart
    /// (or, for a resultative, among any that are no harm).
    pub frame: Option<Frame>,
}

impl VerbMatch {
    /// Sure enough to act on: a clear margin, or a frame that decided.
    pub fn sure(&self, m: &Meaning) -> bool {
        self.margin >= m.min_margin || self.frame.is_some()
    }
}

/// What a clause's shape says about its verb, whatever the verb is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// "heave the box onto the table" (`certain`: "into" or "onto", never a relation),
    /// "deposit the coins in the jar": the object and where it goes
    Destination {
        certain: bool,
    },
    /// "slam the cupboard closed", "kick the door open": the state it ends in
    EndsOpen,
    EndsClosed,
}

impl Frame {
    /// Said in a note or a question.
    pub fn describe(self) -> &'static str {
        match self {
            Frame::Destination { .. } => "said with where it goes",
            Frame::EndsOpen => "said with \"open\" after the object",
            Frame::EndsClosed => "said with \"shut\" after the object",
        }
    }

    /// The class the shape says, compared by [`group`].
    fn class(self) -> VerbClass {
        match self {
            Frame::Destination { .. } => VerbClass::Sense(Sense::Put),
            Frame::EndsOpen => VerbClass::Sense(Sense::Act(Verb::Open, None)),
            Frame::EndsClosed => VerbClass::Sense(Sense::Act(Verb::Close, None)),
        }
    }
}

/// Classes that act alike count as one when the margin is measured.
fn group(c: VerbClass) -> u8 {
    match c {
        VerbClass::Sense(Sense::Act(Verb::PickUp, None) | Sense::Carry) => 0,
        VerbClass::Sense(Sense::Put) => 1,
        VerbClass::Sense(Sense::Act(Verb::Open, _)) => 2,
        VerbClass::Sense(Sense::Act(Verb::Close, _)) => 3,
        VerbClass::Sense(Sense::Act(Verb::TurnOn, _)) => 4,
        VerbClass::Sense(Sense::Act(Verb::TurnOff, _)) => 5,
        VerbClass::Sense(Sense::Act(Verb::PickUp, Some(_))) => 6,
        VerbClass::Sense(Sense::Act(Verb::Place, _)) => 1,
        VerbClass::Sense(Sense::Unsupported) => 7,
        VerbClass::Sense(Sense::Harm) => 8,
        VerbClass::Sense(_) => 9,
        VerbClass::Chat => 10,
        VerbClass::Exclude => 11,
    }
}

/// A relation matched by meaning.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationMatch {
    pub kind: RelationKind,
    /// The prototype it is nearest to.
    pub prototype: &'static str,
    /// Half its cosine in the neutral clause, half alone.
    pub similarity: f32,
    /// How much nearer than the nearest prototype of another kind.
    pub margin: f32,
}

impl RelationMatch {
    /// Sure enough to act on.
    pub fn sure(&self) -> bool {
        self.margin >= RELATION_MARGIN
    }
}

/// The embedder with its prototypes embedded once.
pub struct Meaning {
    embedder: Arc<dyn TextEmbedder>,
    attributes: Vec<Vec<f32>>,
    nouns: Vec<Vec<f32>>,
    owners: Vec<Vec<f32>>,
    things: Vec<Vec<f32>>,
    /// Each relation prototype in the neutral clause and alone.
    relations: Vec<(Vec<f32>, Vec<f32>)>,
    /// Under this similarity a word is not taken for a verb.
    pub min_similarity: f32,
    /// Under this margin over another class the agent asks back.
    pub min_margin: f32,
    cache: Mutex<HashMap<String, Vec<f32>>>,
}

impl std::fmt::Debug for Meaning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meaning")
            .field("min_similarity", &self.min_similarity)
            .field("min_margin", &self.min_margin)
            .finish()
    }
}

fn relation_clause(words: &str) -> String {
    format!("{} {words} {}", RELATION_CLAUSE.0, RELATION_CLAUSE.1)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The highest cosine of `v` with any of `list`.
fn nearest<'a>(v: &[f32], list: impl IntoIterator<Item = &'a Vec<f32>>) -> f32 {
    list.into_iter()
        .map(|e| cosine(v, e))
        .fold(f32::MIN, f32::max)
}

impl Meaning {
    /// Embeds the attribute and noun prototypes (verb prototypes are embedded in each
    /// clause).
    pub fn new(
        embedder: Arc<dyn TextEmbedder>,
        min_similarity: f32,
        min_margin: f32,
    ) -> Result<Self, ModelError> {
        let embed_all = |list: &[&str]| {
            list.iter()
                .map(|p| embedder.embed_text(p))
                .collect::<Result<Vec<_>, ModelError>>()
        };
        let attributes = embed_all(ATTRIBUTE_PROTOTYPES)?;
        let nouns = embed_all(NOUN_PROTOTYPES)?;
        let owners = embed_all(OWNER_PROTOTYPES)?;
        let things = embed_all(THING_PROTOTYPES)?;
        let relations = RELATION_PROTOTYPES
            .iter()
            .map(|(p, _)| {
                Ok((
                    embedder.embed_text(&relation_clause(p))?,
                    embedder.embed_text(p)?,
                ))
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        Ok(Self {
            embedder,
            attributes,
            nouns,
            owners,
            things,
            relations,
            min_similarity,
            min_margin,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn embed(&self, text: &str) -> Option<Vec<f32>> {
        if let Some(v) = self.cache.lock().ok()?.get(text) {
            return Some(v.clone());
        }
        let v = self.embedder.embed_text(text).ok()?;
        if let Ok(mut c) = self.cache.lock() {
            c.insert(text.to_owned(), v.clone());
        }
        Some(v)
    }

    /// The verb class nearest to `verb` said before `rest` ("yank" before "the
    /// charger"), or `None` when it is under `min_similarity` or the embedder fails.
    ///
    /// Each prototype is scored by two cosines: in the clause, where the object's
    /// words tell senses apart ("kill the lights" is no harm), and alone (weighed
    /// [`ALONE_WEIGHT`]), where the verb's own meaning is not drowned by the object's
    /// words that both sides share: in a long clause every prototype scores about 0.9
    /// and the margin is mostly noise. `min_similarity` is checked in the clause.
    pub fn verb(&self, verb: &str, rest: &str, frame: Option<Frame>) -> Option<VerbMatch> {
        let in_clause = |v: &str| {
            if rest.is_empty() {
                v.to_owned()
            } else {
                format!("{v} {rest}")
            }
        };
        let q = self.embed(&in_clause(verb))?;
        let q_alone = self.embed(verb)?;
        let mut scored = Vec::with_capacity(VERB_PROTOTYPES.len());
        for (p, c) in VERB_PROTOTYPES {
            let clause = cosine(&q, &self.embed(&in_clause(p))?);
            let alone = cosine(&q_alone, &self.embed(p)?);
            scored.push((
                *c,
                *p,
                clause,
                (1.0 - ALONE_WEIGHT) * clause + ALONE_WEIGHT * alone,
            ));
        }
        scored.sort_by(|a, b| b.3.total_cmp(&a.3));
        let (class, prototype, similarity, score) = *scored.first()?;
        if similarity < self.min_similarity {
            return None;
        }
        let margin_over = |c: VerbClass, score: f32| {
            score
                - scored
                    .iter()
                    .find(|s| group(s.0) != group(c))
                    .map_or(0.0, |s| s.3)
        };
        let margin = margin_over(class, score);
        // the frame chooses: a resultative among every class but harm (a clear harm
        // stays harm), a destination among those the meaning cannot tell apart
        let by_frame = frame.and_then(|f| {
            let harm = group(class) == group(VerbClass::Sense(Sense::Harm));
            if harm && margin >= self.min_margin {
                return None;
            }
            // a taking verb said with "into"/"onto" puts the thing there
            let taking = group(class) == group(VerbClass::Sense(Sense::Carry));
            let within = match f {
                Frame::Destination { certain: true } if taking => f32::INFINITY,
                Frame::Destination { .. } => self.min_margin,
                Frame::EndsOpen | Frame::EndsClosed => f32::INFINITY,
            };
            scored
                .iter()
                .find(|s| group(s.0) == group(f.class()) && score - s.3 <= within)
                .map(|s| (f, *s))
        });
        Some(match by_frame {
            Some((f, (c, p, sim, sc))) => VerbMatch {
                class: c,
                prototype: p,
                similarity: sim,
                margin: margin_over(c, sc),
                frame: (group(c) != group(class) || margin < self.min_margin).then_some(f),
            },
            None => VerbMatch {
                class,
                prototype,
                similarity,
                margin,
                frame: None,
            },
        })
    }

    /// The relation kind nearest to `words` said between two objects ("adjacent to",
    /// "tucked under"), or `None` when it is under the similarity of a relation or the
    /// embedder fails.
    pub fn relation(&self, words: &str) -> Option<RelationMatch> {
        let q = self.embed(&relation_clause(words))?;
        let q_alone = self.embed(words)?;
        let mut best: Vec<(RelationKind, &'static str, f32)> = Vec::new();
        for ((p, kind), (clause, alone)) in RELATION_PROTOTYPES.iter().zip(&self.relations) {
            let score = 0.5 * cosine(&q, clause) + 0.5 * cosine(&q_alone, alone);
            match best.iter_mut().find(|b| b.0 == *kind) {
                Some(b) if b.2 < score => *b = (*kind, p, score),
                Some(_) => {}
                None => best.push((*kind, p, score)),
            }
        }
        best.sort_by(|a, b| b.2.total_cmp(&a.2));
        let (kind, prototype, similarity) = *best.first()?;
        let margin = similarity - best.get(1).map_or(0.0, |b| b.2);
        (similarity >= RELATION_SIMILARITY).then_some(RelationMatch {
            kind,
            prototype,
            similarity,
            margin,
        })
    }

    /// Whether a word reads as relation words ("adjacent", "opposite") rather than a
    /// thing ("charger"): nearer a relation prototype than a noun prototype, alone.
    pub fn is_relational(&self, word: &str) -> bool {
        let Some(v) = self.embed(word) else {
            return false;
        };
        nearest(&v, self.relations.iter().map(|(_, alone)| alone)) > nearest(&v, &self.nouns)
    }

    /// Whether a word reads as someone who owns things ("toddler", "Sarah") rather than
    /// a thing ("kettle"): nearer an owner prototype than any noun or thing prototype.
    pub fn is_owner(&self, word: &str) -> bool {
        let Some(v) = self.embed(word) else {
            return false;
        };
        nearest(&v, &self.owners) > nearest(&v, self.nouns.iter().chain(&self.things))
    }

    /// Whether a word before the noun describes it (colour, material, size, state)
    /// rather than naming a kind of it ("teal" yes, "coffee" no).
    pub fn is_attribute(&self, word: &str) -> bool {
        let Some(v) = self.embed(word) else {
            return false;
        };
        let a = nearest(&v, &self.attributes);
        a >= ATTRIBUTE_SIMILARITY && a > nearest(&v, &self.nouns) + ATTRIBUTE_MARGIN
    }
}
