//! Object phrases: "the second small red cup from the left that's next to the kettle in
//! the kitchen" → the object's own words (`cup`) apart from its attributes, ordinal,
//! relation and room, so that retrieval searches for the object and the rest becomes
//! spatial filters (SPEC §1.3).

use crate::planner::corpus::{ObjectRef, Ordinal, RelationKind, RelationSpec, Side};

use super::lexicon::*;
use super::meaning::{Meaning, RelationMatch};
use super::tokens::{Tok, singular};
use asp_core::Storey;

/// Relation words no list knows, matched by meaning ("adjacent to" → near).
#[derive(Debug, Clone, PartialEq)]
pub struct RelationGuess {
    pub words: String,
    pub matched: RelationMatch,
}

/// A parsed object phrase.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Phrase {
    pub obj: ObjectRef,
    /// The part acted on when the phrase names one of a whole ("the mug's handle").
    pub part: Option<String>,
    /// The head was "one" ("the red one"): the name comes from the object before.
    pub one: bool,
    /// "the other mug": rules out the attributes of the mug named before.
    pub other: bool,
    /// The phrase is a pronoun ("it", "them").
    pub pronoun: bool,
    /// "from the right side": the side to act from, not which one.
    pub side: Option<Side>,
    /// Words the grammar could not place.
    pub unplaced: Vec<String>,
    /// Relations read by meaning, here and in its anchors: noted when sure, asked
    /// about when not.
    pub relations_by_meaning: Vec<RelationGuess>,
}

impl Phrase {
    pub fn is_empty(&self) -> bool {
        self.obj.name.is_empty() && !self.one && !self.pronoun
    }
}

pub(crate) fn find<'a>(list: &'a [&str], w: &str) -> Option<&'a str> {
    list.iter().copied().find(|x| *x == w)
}

fn lookup<T: Copy>(list: &[(&str, T)], w: &str) -> Option<T> {
    list.iter().find(|(k, _)| *k == w).map(|(_, v)| *v)
}

/// Whether `toks[i..]` starts with the words of `phrase`.
pub fn starts(toks: &[Tok], i: usize, phrase: &str) -> bool {
    let words: Vec<&str> = phrase.split(' ').collect();
    toks.len() >= i + words.len() && words.iter().enumerate().all(|(k, w)| toks[i + k].w == *w)
}

/// The longest entry of `list` that `toks[i..]` starts with, and its word count.
pub fn longest<T: Copy>(
    list: &[(&'static str, T)],
    toks: &[Tok],
    i: usize,
) -> Option<(T, usize, &'static str)> {
    list.iter()
        .filter(|(p, _)| starts(toks, i, p))
        .max_by_key(|(p, _)| p.split(' ').count())
        .map(|(p, v)| (*v, p.split(' ').count(), *p))
}

/// The room `toks[i..]` starts with, and its word count.
pub fn room_at(toks: &[Tok], i: usize) -> Option<(String, usize)> {
    for r in ROOMS {
        if starts(toks, i, r) {
            let n = r.split(' ').count();
            // "kitchen table" names a kind of table
            let kind = toks
                .get(i + n)
                .is_some_and(|t| ROOM_KINDS.contains(&format!("{r} {}", t.w).as_str()));
            if !kind {
                return Some(((*r).to_owned(), n));
            }
        }
    }
    // "the games room"
    if toks.get(i + 1).is_some_and(|t| t.is("room")) && !DETERMINERS.contains(&toks[i].w.as_str()) {
        return Some((format!("{} room", toks[i].w), 2));
    }
    None
}

/// The storey `toks[i..]` names and its word count: "upstairs", "from downstairs", "on
/// the second floor", "on floor 2", "on the floor above", "on the ground level". A
/// named storey needs its preposition ("the ground floor" alone is a thing to look
/// at), and the phrase must end after it.
pub fn storey_at(toks: &[Tok], i: usize) -> Option<(Storey, usize)> {
    let ends = |k: usize| {
        toks.get(k)
            .is_none_or(|t| t.is_mark() || ends_core(toks, k) || find(TRAILERS, &t.w).is_some())
    };
    let mut j = i;
    let prep = matches!(
        toks.get(i)?.w.as_str(),
        "on" | "from" | "of" | "at" | "in" | "to"
    );
    if prep {
        j += 1;
    }
    match toks.get(j)?.w.as_str() {
        "upstairs" if ends(j + 1) => return Some((Storey::Above, j + 1 - i)),
        "downstairs" if ends(j + 1) => return Some((Storey::Below, j + 1 - i)),
        _ if !prep => return None,
        _ => {}
    }
    if toks.get(j).is_some_and(|t| t.is("the")) {
        j += 1;
    }
    for n in [2, 3] {
        let Some(words) = toks.get(j..j + n) else {
            continue;
        };
        // "the floor" alone is the floor; a storey is a floor with a word that says which
        if !words
            .iter()
            .any(|t| matches!(t.w.as_str(), "floor" | "storey" | "story" | "level"))
        {
            continue;
        }
        let said: Vec<&str> = words.iter().map(|t| t.w.as_str()).collect();
        if let Ok(storey) = said.join(" ").parse::<Storey>()
            && ends(j + n)
        {
            return Some((storey, j + n - i));
        }
    }
    None
}

fn number(w: &str) -> Option<u32> {
    lookup(NUMBERS, w).or_else(|| w.parse().ok().filter(|n| *n > 0 && *n < 100))
}

fn is_attribute_word(w: &str) -> bool {
    COLOURS.contains(&w) || STATES.contains(&w) || lookup(SIZES, w).is_some()
}

/// The plain forms a comparative or superlative may come from ("heavier" → "heavy",
/// "bigger" → "big", "wider" → "wide", "coldest" → "cold"), most likely first. Bases
/// in "y" only come from "-ier" ("dryer" is a machine, "drier" the comparative).
pub(crate) fn comparative_bases(w: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (end, y) in [("iest", true), ("ier", true), ("est", false), ("er", false)] {
        let Some(stem) = w.strip_suffix(end) else {
            continue;
        };
        if stem.len() < 2 {
            continue;
        }
        if y {
            out.push(format!("{stem}y"));
            break;
        }
        if stem.ends_with('y') {
            break;
        }
        out.push(stem.to_owned());
        out.push(format!("{stem}e"));
        let b = stem.as_bytes();
        if b.len() >= 3 && b[b.len() - 1] == b[b.len() - 2] {
            out.push(stem[..stem.len() - 1].to_owned());
        }
        break;
    }
    out
}

fn canonical_attribute(w: &str) -> String {
    lookup(SIZES, w).unwrap_or(w).to_owned()
}

/// A word that ends the object's own words and starts what follows them.
fn ends_core(toks: &[Tok], i: usize) -> bool {
    let w = toks[i].w.as_str();
    starts(toks, i, "other than")
        || starts(toks, i, "apart from")
        || starts(toks, i, "aside from")
        || matches!(
            w,
            "that"
                | "which"
                | "who"
                | "'s"
                | "of"
                | "from"
                | "for"
                | "with"
                | "except"
                | "excluding"
                | "but"
                | "not"
                | "and"
                | "or"
                | "by"
                | "to"
                | "at"
                | "in"
                | "on"
                | "off"
                | "out"
                | "inside"
                | "within"
                | "under"
                | "below"
                | "beneath"
                | "underneath"
                | "behind"
                | "between"
                | "near"
                | "beside"
                | "besides"
                | "next"
                | "close"
                | "closest"
                | "nearest"
                | "furthest"
                | "farthest"
                | "above"
                | "over"
                | "into"
                | "onto"
                | "is"
                | "are"
                | "should"
                | "sitting"
                | "lying"
                | "standing"
                | "hanging"
                | "resting"
                | "located"
                | "kept"
                | "stored"
                | "placed"
                | "somewhere"
                | "upstairs"
                | "downstairs"
                | "outside"
                | "indoors"
                | "outdoors"
                | "alongside"
                | "atop"
                | "upon"
                | "if"
                | "when"
                | "so"
                | "because"
                | "as"
                | "please"
                | "you"
                | "i"
                | "again"
                | "here"
                | "there"
                | "right"
                | "left"
                | "then"
                | "now"
                | "since"
                | "while"
                | "without"
                | "instead"
                | "too"
                | "though"
                | "a"
                | "an"
                | "the"
                | "my"
                | "your"
        )
        || PARTICLES.contains(&w) && toks.get(i + 1).is_none_or(|t| !is_noun_start(&t.w))
}

/// Words that begin a noun phrase.
fn is_noun_start(w: &str) -> bool {
    DETERMINERS.contains(&w) || PRONOUNS.contains(&w) || number(w).is_some()
}

/// The words of a noun phrase from `from`: past its determiners, up to what ends the
/// object's own words ("the top drawer" in "the desk's top drawer, …").
fn noun_words(toks: &[Tok], from: usize) -> std::ops::Range<usize> {
    let mut start = from;
    while toks
        .get(start)
        .is_some_and(|t| DETERMINERS.contains(&t.w.as_str()))
    {
        start += 1;
    }
    let mut end = start;
    while end < toks.len() && !(end > start && ends_core(toks, end)) {
        end += 1;
    }
    start..end
}

/// Nouns that name a region of a thing rather than a thing ("the far side of", "in the
/// vicinity of"): a relation may run through them to its anchor.
const REGION_NOUNS: &[&str] = &[
    "side",
    "vicinity",
    "front",
    "back",
    "rear",
    "middle",
    "centre",
    "center",
    "edge",
    "corner",
    "end",
    "top",
    "bottom",
    "foot",
    "area",
    "proximity",
    "direction",
];

/// Where the anchor starts when `toks[e..]` names a region of it ("the far side of
/// the bowl" → at "the bowl").
fn region_of(toks: &[Tok], e: usize) -> Option<usize> {
    let mut k = e + 1;
    while toks
        .get(k)
        .is_some_and(|t| matches!(t.w.as_str(), "far" | "near" | "other" | "same" | "very"))
    {
        k += 1;
    }
    (toks
        .get(k)
        .is_some_and(|t| REGION_NOUNS.contains(&t.w.as_str()))
        && toks.get(k + 1).is_some_and(|t| t.is("of"))
        && toks
            .get(k + 2)
            .is_some_and(|t| ANCHOR_STARTS.contains(&t.w.as_str())))
    .then_some(k + 2)
}

/// Determiners that start a relation's anchor.
const ANCHOR_STARTS: &[&str] = &[
    "the", "a", "an", "my", "your", "our", "his", "her", "their", "this", "that", "these", "those",
];

/// Words that start ruling something out ("apart from the yellow one").
const EXCLUDERS: &[&str] = &[
    "not",
    "except",
    "but",
    "excluding",
    "apart",
    "aside",
    "neither",
];

/// Quantities and kinds said before what they are of: "a piece of fruit" is fruit.
const PARTITIVES: &[&str] = &[
    "a piece of",
    "a bit of",
    "a kind of",
    "some kind of",
    "any kind of",
    "a sort of",
    "some sort of",
    "any sort of",
    "a type of",
    "some type of",
    "any type of",
];

/// Heads that say nothing of what a thing is, so a purpose after them names it:
/// "something to drink from", "a thing to write with".
pub(crate) const INDEFINITE_HEADS: &[&str] = &[
    "something",
    "anything",
    "thing",
    "things",
    "object",
    "objects",
    "item",
    "items",
    "stuff",
];

/// Prepositions a purpose ends with ("to drink from", "to write with").
const PURPOSE_ENDS: &[&str] = &["from", "with", "in", "into", "on", "for", "out"];

/// Where a purpose clause after an indefinite head ends: `toks[at..]` is "to", a verb,
/// and perhaps one preposition that no place follows ("to drink from" before "in the
/// tray"). `None` when `core` does not end with such a head or "to" starts a place ("to
/// the kitchen").
pub(crate) fn purpose_clause_end(toks: &[Tok], at: usize, core: &[Tok]) -> Option<usize> {
    let head = core.last()?;
    if !INDEFINITE_HEADS.contains(&head.w.as_str()) || !toks.get(at)?.is("to") {
        return None;
    }
    let verb = toks.get(at + 1)?;
    if verb.is_mark()
        || ANCHOR_STARTS.contains(&verb.w.as_str())
        || PURPOSE_ENDS.contains(&verb.w.as_str())
        || matches!(
            verb.w.as_str(),
            "me" | "us" | "him" | "her" | "them" | "and"
        )
    {
        return None;
    }
    let mut end = at + 2;
    // the preposition belongs to the purpose when no anchor follows it at once
    if let Some(p) = toks.get(end)
        && PURPOSE_ENDS.contains(&p.w.as_str())
        && toks
            .get(end + 1)
            .is_none_or(|n| !ANCHOR_STARTS.contains(&n.w.as_str()))
    {
        end += 1;
    }
    Some(end)
}

/// Prepositions that end relation words before their anchor ("adjacent to").
const RELATION_ENDS: &[&str] = &["to", "from", "of", "with", "against"];

/// A word that cannot be part of relation words: it names a thing or a quality, or it
/// joins clauses.
fn not_relational(toks: &[Tok], i: usize) -> bool {
    let w = toks[i].w.as_str();
    if REGION_NOUNS.contains(&w) {
        return false;
    }
    toks[i].is_mark()
        || matches!(
            w,
            "and" | "or" | "but" | "not" | "then" | "please" | "than" | "'s"
        )
        || room_at(toks, i).is_some()
        || PART_NOUNS.contains(&w)
        || CONTAINERS.contains(&w)
        || is_attribute_word(w)
        || MATERIALS.contains(&w)
        || number(w).is_some()
}

/// Reads object phrases with an optional meaning model for words no list knows.
#[derive(Debug)]
pub struct PhraseReader<'m> {
    pub meaning: Option<&'m Meaning>,
}

impl PhraseReader<'_> {
    /// Parses `toks` as one object phrase; everything it cannot place is in `unplaced`.
    pub fn parse(&self, toks: &[Tok]) -> Phrase {
        let mut p = Phrase::default();
        let mut i = 0;
        // determiners, counts, "other", "one of the"
        while let Some(t) = toks.get(i) {
            let w = t.w.as_str();
            if starts(toks, i, "one of the") || starts(toks, i, "one of my") {
                i += 3;
            } else if starts(toks, i, "a couple of") || starts(toks, i, "a few of") {
                p.obj.count = Some(2);
                i += 3;
            } else if starts(toks, i, "a pair of") {
                i += 3;
            } else if let Some(n) = PARTITIVES.iter().find_map(|q| {
                starts(toks, i, q)
                    .then(|| q.split(' ').count())
                    .filter(|n| toks.len() > i + n)
            }) {
                // "a piece of green fruit", "some kind of container": what it is of
                i += n;
            } else if w == "other" || w == "another" {
                p.other = true;
                i += 1;
            } else if DETERMINERS.contains(&w) && !(w == "that" && toks.len() == i + 1)
                || matches!(w, "me" | "us" | "all" | "just" | "only" | "also")
            {
                if (w == "this" || w == "that" || w == "these" || w == "those")
                    && (toks.len() == i + 1
                        || ends_core(toks, i + 1)
                        || find(TRAILERS, &toks[i + 1].w).is_some())
                {
                    break;
                }
                i += 1;
            } else if let Some(n) = number(w).filter(|_| {
                toks.get(i + 1)
                    .is_some_and(|n| !n.is("of") && !ends_core(toks, i + 1))
                    || w != "one"
            }) {
                if w == "one" {
                    // "one apple"
                    i += 1;
                    continue;
                }
                if n > 1 {
                    p.obj.count = Some(n);
                }
                i += 1;
                if toks.get(i).is_some_and(|t| t.is("of")) {
                    i += 1;
                }
            } else {
                break;
            }
        }
        // a pronoun alone
        if let Some(t) = toks.get(i)
            && PRONOUNS.contains(&t.w.as_str())
            && t.w != "one"
            && toks
                .get(i + 1)
                .is_none_or(|n| ends_core(toks, i + 1) || n.is_mark())
        {
            p.pronoun = true;
            i += 1;
            self.post(toks, i, &mut p);
            return p;
        }
        // the object's own words, up to what follows them
        let start = i;
        while i < toks.len() {
            let w = toks[i].w.as_str();
            // superlatives and position words before any noun stay in the core
            if i > start && ends_core(toks, i) {
                break;
            }
            if i == start && matches!(w, "of" | "and" | "that" | "which" | "from" | "with" | "for")
            {
                break;
            }
            i += 1;
        }
        // "the cup adjacent to the sink": the core's last word starts relation words
        // no list knows (a word nearer a relation than a thing, read by meaning)
        if i >= start + 2
            && toks.get(i).is_some_and(|t| {
                ANCHOR_STARTS.contains(&t.w.as_str())
                    || RELATION_ENDS.contains(&t.w.as_str()) && !t.is("of")
            })
            && !EXCLUDERS.contains(&toks[i - 1].w.as_str())
            && self
                .meaning
                .is_some_and(|m| m.is_relational(&toks[i - 1].w))
            && let Some(found) = self.relation_by_meaning(toks, i - 1, 1, false)
            && (found.1.sure() || RELATION_ENDS.contains(&toks[found.2 - 1].w.as_str()))
        {
            self.core(&toks[start..i - 1], &mut p);
            self.relate_by_meaning(toks, found, &mut p);
            return p;
        }
        let mut core: Vec<Tok> = toks[start..i].to_vec();
        // "something to drink from": what it is for is the name
        if let Some(end) = purpose_clause_end(toks, i, &core) {
            core.extend_from_slice(&toks[i..end]);
            i = end;
        }
        // "the keys tucked under the pillow": a participle before a relation says how
        // the thing lies, not what it is
        // ("-ing" and "-en" only when the word reads nearer a relation than a thing:
        // "leaning", "hidden", not "string", "kitchen")
        if core.len() >= 2
            && core.last().is_some_and(|t| {
                t.w.len() >= 6
                    && (t.w.ends_with("ed")
                        || (t.w.ends_with("ing") || t.w.ends_with("en"))
                            && self.meaning.is_some_and(|m| m.is_relational(&t.w)))
            })
            && longest(RELATIONS, toks, i).is_some()
        {
            core.pop();
        }
        // "the desk's top drawer", "the kettle's spout": the owner before 's, the part
        // after it, whether or not a list knows the part. Not a part: after another
        // capitalised word the whole names the thing ("the Rubik's cube", "Campbell's
        // soup": product names, kept whole for grounding); after someone who owns things
        // it is the thing ("grandma's teapot"), and so is a part that is also a thing of
        // its own after a person the lists know ("my sister's keys")
        let possessive = toks.get(i).is_some_and(|t| t.is("'s"));
        let named_part = || {
            let words = noun_words(toks, i + 1);
            toks[words]
                .last()
                .map(|t| singular(&t.w))
                .filter(|w| PART_NOUNS.contains(&w.as_str()))
        };
        let capitalised = core
            .last()
            .is_some_and(|t| t.raw.starts_with(|c: char| c.is_uppercase()));
        let named_thing = possessive
            && !noun_words(toks, i + 1).is_empty()
            && core.last().is_some_and(|owner| match named_part() {
                None => {
                    capitalised
                        || OWNER_NOUNS.contains(&singular(&owner.w).as_str())
                        || self.meaning.is_some_and(|m| m.is_owner(&owner.w))
                }
                Some(part) => {
                    !capitalised
                        && OWNER_NOUNS.contains(&singular(&owner.w).as_str())
                        && KIND_PARTS.contains(&part.as_str())
                }
            });
        if named_thing {
            let named = noun_words(toks, i + 1);
            if capitalised {
                if let Some(owner) = core.last_mut() {
                    owner.w.push_str("'s");
                    owner.raw.push_str("'s");
                }
            } else {
                core.clear();
            }
            core.extend_from_slice(&toks[named.clone()]);
            i = named.end;
        } else if possessive {
            self.core(&core, &mut p);
            let part = noun_words(toks, i + 1);
            let part_words: Vec<String> = toks[part.clone()].iter().map(|t| t.w.clone()).collect();
            p.part = (!part_words.is_empty()).then(|| part_words.join(" "));
            self.post(toks, part.end, &mut p);
            return p;
        }
        // "the handle of the mug", "the bigger of the two bowls"
        if toks.get(i).is_some_and(|t| t.is("of")) && !core.is_empty() {
            let head = core.last().map(|t| t.w.clone()).unwrap_or_default();
            let only_size = core.iter().all(|t| lookup(SIZES, &t.w).is_some());
            if PART_NOUNS.contains(&singular(&head).as_str()) || only_size {
                let owner = self.parse(&toks[i + 1..]);
                let words: Vec<String> = core.iter().map(|t| t.w.clone()).collect();
                let mut out = owner;
                if only_size {
                    for w in &words {
                        out.obj.attributes.push(canonical_attribute(w));
                    }
                    out.obj.count = None;
                } else {
                    out.part = Some(words.join(" "));
                }
                return out;
            }
            // "a bag of chips": the whole is the name
            let whole = noun_words(toks, i + 1);
            if !whole.is_empty() {
                core.push(Tok {
                    w: "of".into(),
                    raw: "of".into(),
                });
                core.extend_from_slice(&toks[whole.clone()]);
            }
            i = whole.end;
        }
        self.core(&core, &mut p);
        // a part named with its owner after it: "the power button on the kettle"
        let head_is_part = p.part.is_none()
            && PART_NOUNS.contains(&p.obj.name.rsplit(' ').next().unwrap_or_default());
        if head_is_part
            && let Some(t) = toks.get(i)
            && matches!(t.w.as_str(), "on" | "of")
            // "the shelf on the ground floor": a storey, not an owner
            && storey_at(toks, i).is_none()
            && toks
                .get(i + 1)
                .is_some_and(|n| DETERMINERS.contains(&n.w.as_str()))
        {
            let owner = self.parse(&toks[i + 1..]);
            if owner.part.is_none() && !owner.obj.name.is_empty() && !owner.pronoun {
                let words: Vec<String> = core.iter().map(|t| t.w.clone()).collect();
                let mut out = owner;
                out.part = Some(words.join(" "));
                return out;
            }
        }
        self.post(toks, i, &mut p);
        p
    }

    /// Relation words from `toks[s]` to the anchor that follows them, matched by
    /// meaning: the words, the match and where the anchor starts. The words run to the
    /// first determiner (at most five words, at least `min_len`), and on through a
    /// region of the anchor ("to the side of"); with `region_only` only words that
    /// run through a region are taken ("on the far side of").
    fn relation_by_meaning(
        &self,
        toks: &[Tok],
        s: usize,
        min_len: usize,
        region_only: bool,
    ) -> Option<(String, RelationMatch, usize)> {
        let m = self.meaning?;
        let mut e = (s + 1..toks.len().min(s + 6))
            .find(|&e| ANCHOR_STARTS.contains(&toks[e].w.as_str()) && e + 1 < toks.len())?;
        // "to the side of the notebook": the words run on through a region of the anchor
        let through = region_of(toks, e);
        if let Some(after) = through {
            e = after;
        }
        if e - s < min_len
            || region_only && through.is_none()
            || (s..e).any(|k| not_relational(toks, k))
        {
            return None;
        }
        let words: Vec<&str> = toks[s..e].iter().map(|t| t.w.as_str()).collect();
        let words = words.join(" ");
        let matched = m.relation(&words)?;
        Some((words, matched, e))
    }

    /// Sets the relation read by meaning, with the anchor from `toks[e..]`.
    fn relate_by_meaning(
        &self,
        toks: &[Tok],
        (words, matched, e): (String, RelationMatch, usize),
        p: &mut Phrase,
    ) {
        let a = self.parse(&toks[e..]);
        p.obj.relation = Some(Box::new(RelationSpec {
            kind: matched.kind,
            anchor: Some(if a.pronoun {
                ObjectRef::named("it")
            } else {
                a.obj
            }),
            anchor2: None,
        }));
        p.unplaced.extend(a.unplaced);
        p.relations_by_meaning
            .push(RelationGuess { words, matched });
        p.relations_by_meaning.extend(a.relations_by_meaning);
    }

    /// Splits the object's own words into ordinal, position, attributes, room, part and
    /// name.
    /// "heavier", "dirtiest", "colder": a degree of an attribute. A base in "y" may be
    /// matched by meaning ("heavy"); others only when a list knows them, as many
    /// nouns end in "-er" ("water", "charger").
    fn is_comparative(&self, w: &str) -> bool {
        comparative_bases(w).iter().any(|b| {
            is_attribute_word(b)
                || MATERIALS.contains(&b.as_str())
                || b.ends_with('y') && self.meaning.is_some_and(|m| m.is_attribute(b))
        })
    }

    /// The attributes a ruling-out names when it is only that: "red", "red or blue",
    /// "neither red nor blue", "locked" (a bare state), "the red one", "the red one nor
    /// the green one"; `None` when it names something else.
    fn ruled_out(&self, rest: &[Tok]) -> Option<Vec<String>> {
        let joiner = |t: &Tok| matches!(t.w.as_str(), "or" | "nor" | "neither" | "either");
        let words: Vec<&Tok> = rest.iter().filter(|t| !joiner(t)).collect();
        if words.is_empty() {
            return None;
        }
        let attribute = |w: &str| is_attribute_word(w) || MATERIALS.contains(&w);
        if words.iter().all(|t| attribute(&t.w)) {
            return Some(words.iter().map(|t| canonical_attribute(&t.w)).collect());
        }
        // "not locked", "not ripened": a bare word after the negation that reads as a
        // state
        if let [t] = words.as_slice()
            && (t.w.len() > 4 && (t.w.ends_with("ed") || t.w.ends_with("en"))
                || self.meaning.is_some_and(|m| m.is_attribute(&t.w)))
        {
            return Some(vec![canonical_attribute(&t.w)]);
        }
        // "the red one", "the red one nor the green one": each alternative a described "one"
        let mut out = Vec::new();
        for alt in rest.split(|t| joiner(t)).filter(|a| !a.is_empty()) {
            let ex = self.parse(alt);
            if !ex.one || ex.obj.attributes.is_empty() {
                return None;
            }
            out.extend(ex.obj.attributes);
        }
        (!out.is_empty()).then_some(out)
    }

    fn core(&self, core: &[Tok], p: &mut Phrase) {
        let mut names: Vec<String> = Vec::new();
        let mut k = 0;
        let n = core.len();
        while k < n {
            let w = core[k].w.as_str();
            let last = k + 1 == n;
            if let Some((room, len)) = room_at(core, k)
                && (k + len < n || names.is_empty() && p.obj.room.is_none())
            {
                if k + len == n {
                    // "the kitchen" alone is a room named as the object
                    names.push(room.clone());
                } else {
                    p.obj.room = Some(room);
                }
                k += len;
                continue;
            }
            if w == "one" || w == "ones" {
                if last {
                    p.one = true;
                } else {
                    names.push(w.to_owned());
                }
            } else if w == "non" && !last {
                p.obj.excluded.push(canonical_attribute(&core[k + 1].w));
                k += 1;
            } else if let Some(o) = ordinal(w).filter(|_| !last) {
                p.obj.ordinal = Some(Ordinal {
                    n: o,
                    from: p.obj.ordinal.and_then(|o| o.from),
                });
            } else if let Some(side) = lookup(POSITIONS, w).filter(|_| !last && names.is_empty()) {
                let n = p.obj.ordinal.map_or(1, |o| o.n);
                p.obj.ordinal = Some(Ordinal {
                    n,
                    from: Some(side),
                });
            } else if matches!(w, "closest" | "nearest") && !last {
                p.obj.relation = Some(Box::new(RelationSpec {
                    kind: RelationKind::Nearest,
                    anchor: None,
                    anchor2: None,
                }));
            } else if matches!(w, "furthest" | "farthest") && !last {
                p.obj.relation = Some(Box::new(RelationSpec {
                    kind: RelationKind::Furthest,
                    anchor: None,
                    anchor2: None,
                }));
            } else if (is_attribute_word(w) || MATERIALS.contains(&w)) && !last && names.is_empty()
            {
                p.obj.attributes.push(canonical_attribute(w));
            } else if !last
                && names.is_empty()
                && !KIND_MODIFIERS.contains(&w)
                && (self.meaning.is_some_and(|m| m.is_attribute(w)) || self.is_comparative(w))
            {
                p.obj.attributes.push(w.to_owned());
            } else {
                names.push(w.to_owned());
            }
            k += 1;
        }
        // "the damp one": the words before "one" describe it, known to a list or not
        if p.one {
            for n in names.drain(..) {
                let a = canonical_attribute(&n);
                if !p.obj.attributes.contains(&a) {
                    p.obj.attributes.push(a);
                }
            }
        }
        if let Some(head) = names.pop() {
            // "two glasses" are drinking glasses, "my glasses" a pair
            let one = match (head.as_str(), p.obj.count) {
                ("glasses", Some(n)) if n > 1 => "glass".to_owned(),
                _ => singular(&head),
            };
            names.push(one);
        }
        // "the fridge door": the part of an owner named before it
        if names.len() >= 2 {
            let head = names.last().cloned().unwrap_or_default();
            let before = names[names.len() - 2].clone();
            if PART_NOUNS.contains(&head.as_str())
                && !KIND_PARTS.contains(&head.as_str())
                && !NOT_OWNERS.contains(&before.as_str())
                && !ROOM_KINDS.contains(&format!("{before} {head}").as_str())
                && p.part.is_none()
            {
                names.pop();
                p.part = Some(head);
            }
        }
        p.obj.name = names.join(" ");
    }

    /// What follows the object's own words: relations, ordinals said after the noun,
    /// rooms, relative clauses, exclusions.
    fn post(&self, toks: &[Tok], mut i: usize, p: &mut Phrase) {
        while i < toks.len() {
            let w = toks[i].w.as_str();
            // relative clause words: "that's sitting on", "which is not"
            // ("right"/"left" start a relation when "of", "by" or "next to" follow)
            let starts_relation = ["right of", "right by", "right next to", "left of"]
                .iter()
                .any(|r| starts(toks, i, r));
            if matches!(w, "that" | "which" | "who")
                || find(RELATIVE, w).is_some() && !starts_relation
            {
                i += 1;
                continue;
            }
            if matches!(
                w,
                "should"
                    | "must"
                    | "might"
                    | "may"
                    | "be"
                    | "probably"
                    | "maybe"
                    | "usually"
                    | "always"
            ) {
                i += 1;
                continue;
            }
            // "not red", "not the red one", "except the blue one", "but the broken one",
            // "other than the wet one"
            let other_than = starts(toks, i, "other than");
            if other_than || EXCLUDERS.contains(&w) && !starts(toks, i, "but not") {
                let mut j = i + if other_than { 2 } else { 1 };
                while toks
                    .get(j)
                    .is_some_and(|t| matches!(t.w.as_str(), "from" | "for" | "not"))
                {
                    j += 1;
                }
                let end = toks[j..]
                    .iter()
                    .position(|t| t.is_mark() || t.is("and"))
                    .map_or(toks.len(), |k| j + k);
                let rest = &toks[j..end];
                // "not empty on the coaster", "neither red nor blue from the shelf": a
                // ruling-out complete before a preposition leaves the rest to the object
                let cut = rest
                    .iter()
                    .position(|t| PLACE_PREPOSITIONS.contains(&t.w.as_str()))
                    .filter(|&q| q > 0);
                if let Some(x) = self.ruled_out(rest) {
                    p.obj.excluded.extend(x);
                    i = end;
                } else if let Some((q, x)) =
                    cut.and_then(|q| self.ruled_out(&rest[..q]).map(|x| (q, x)))
                {
                    p.obj.excluded.extend(x);
                    i = j + q;
                } else {
                    let ex = self.parse(rest);
                    if ex.one || ex.obj.name == p.obj.name || ex.obj.name.is_empty() {
                        p.obj.excluded.extend(ex.obj.attributes);
                    }
                    i = end;
                }
                continue;
            }
            // "by its handle", "by the rim"
            if w == "by" {
                let mut j = i + 1;
                let its = toks
                    .get(j)
                    .is_some_and(|t| matches!(t.w.as_str(), "its" | "the" | "their"));
                if its {
                    j += 1;
                }
                let k0 = j;
                while j < toks.len() && !ends_core(toks, j) {
                    j += 1;
                }
                let words: Vec<String> = toks[k0..j].iter().map(|t| t.w.clone()).collect();
                let head = words.last().map(String::as_str).unwrap_or_default();
                let own = toks
                    .get(i + 1)
                    .is_some_and(|t| t.is("its") || t.is("their"));
                if its
                    && (own || PART_NOUNS.contains(&head) && words.len() == 1)
                    && !words.is_empty()
                {
                    p.part = Some(words.join(" "));
                    i = j;
                    continue;
                }
            }
            // "from the right side", "from its left": where to act from
            if w == "from"
                && toks.get(i + 1).is_some_and(|t| t.is("the") || t.is("its"))
                && let Some(side) = toks.get(i + 2).and_then(|t| lookup(SIDES, &t.w))
                && p.obj.ordinal.is_none()
                // "from the top shelf": a shelf, not a side
                && toks.get(i + 3).is_none_or(|t| t.is("side") || t.is_mark() || ends_core(toks, i + 3))
            {
                p.side = Some(side);
                i += if toks[i + 1].is("its") { 3 } else { 4 };
                continue;
            }
            // "from the left", "on the right", "at the back"
            if matches!(w, "from" | "on" | "at" | "in" | "to")
                && toks.get(i + 1).is_some_and(|t| t.is("the"))
                && let Some(side) = toks.get(i + 2).and_then(|t| lookup(SIDES, &t.w))
                && !toks.get(i + 3).is_some_and(|t| {
                    t.is("of") || t.is("side") && toks.get(i + 4).is_some_and(|t| t.is("of"))
                })
                && toks.get(i + 3).is_none_or(|t| {
                    t.is_mark()
                        || matches!(t.w.as_str(), "side" | "end" | "one")
                        || ends_core(toks, i + 3)
                })
                && !(w == "in" && side == Side::Front)
            {
                let n = p.obj.ordinal.map_or(1, |o| o.n);
                if w == "from" || p.obj.ordinal.is_none() {
                    p.obj.ordinal = Some(Ordinal {
                        n,
                        from: Some(side),
                    });
                }
                i += 3;
                if toks
                    .get(i)
                    .is_some_and(|t| matches!(t.w.as_str(), "side" | "end" | "one"))
                {
                    i += 1;
                }
                continue;
            }
            // a storey: "upstairs", "from downstairs", "on the second floor"
            if let Some((storey, len)) = storey_at(toks, i) {
                p.obj.storey = Some(storey);
                i += len;
                continue;
            }
            // a room: "in the kitchen", "from the bathroom", "somewhere in the office"
            if matches!(w, "in" | "from" | "inside" | "of" | "at" | "on") {
                let mut j = i + 1;
                while toks
                    .get(j)
                    .is_some_and(|t| DETERMINERS.contains(&t.w.as_str()))
                {
                    j += 1;
                }
                if let Some((room, len)) = room_at(toks, j) {
                    let after = j + len;
                    let ends = toks
                        .get(after)
                        .is_none_or(|t| ends_core(toks, after) || t.is_mark());
                    if ends && w != "on" {
                        p.obj.room = Some(room);
                        i = after;
                        continue;
                    }
                }
            }
            // "between the plate and the bowl"
            if w == "between" || starts(toks, i, "in between") {
                let j = if w == "between" { i + 1 } else { i + 2 };
                let and = toks[j..].iter().position(|t| t.is("and")).map(|k| j + k);
                if let Some(and) = and {
                    let a = self.parse(&toks[j..and]);
                    let b = self.parse(&toks[and + 1..]);
                    p.obj.relation = Some(Box::new(RelationSpec {
                        kind: RelationKind::Between,
                        anchor: Some(a.obj),
                        anchor2: Some(b.obj),
                    }));
                    return;
                }
            }
            // "from the fridge": in a container, on anything else
            if w == "from"
                && toks
                    .get(i + 1)
                    .is_some_and(|t| is_noun_start(&t.w) || !ends_core(toks, i + 1))
            {
                let a = self.parse(&toks[i + 1..]);
                if a.obj.name.is_empty() || matches!(a.obj.name.as_str(), "there" | "here") {
                    return;
                }
                let head = a.obj.name.rsplit(' ').next().unwrap_or_default().to_owned();
                let kind = if CONTAINERS.contains(&head.as_str())
                    || super::super::is_openable(&head)
                    || a.part.as_deref().is_some_and(super::super::is_openable)
                {
                    RelationKind::In
                } else {
                    RelationKind::On
                };
                p.obj.relation = Some(Box::new(RelationSpec {
                    kind,
                    anchor: Some(a.obj),
                    anchor2: None,
                }));
                p.unplaced.extend(a.unplaced);
                return;
            }
            let known = longest(RELATIONS, toks, i);
            // "on the far side of the bowl", "in the vicinity of the tv": a known
            // relation word that runs through a region noun, read by meaning whole
            if let Some((_, len, _)) = known
                && let Some(found) = self.relation_by_meaning(toks, i, len + 1, true)
            {
                self.relate_by_meaning(toks, found, p);
                return;
            }
            if let Some((kind, len, _)) = known {
                let j = i + len;
                let superlative = matches!(kind, RelationKind::Nearest | RelationKind::Furthest);
                let anchor_follows = toks
                    .get(j)
                    .is_some_and(|t| is_noun_start(&t.w) || !ends_core(toks, j) && !t.is_mark());
                if superlative && !anchor_follows {
                    p.obj.relation = Some(Box::new(RelationSpec {
                        kind,
                        anchor: None,
                        anchor2: None,
                    }));
                    i = j;
                    continue;
                }
                if superlative && toks.get(j).is_some_and(|t| t.is("to") || t.is("from")) {
                    let a = self.parse(&toks[j + 1..]);
                    p.obj.relation = Some(Box::new(RelationSpec {
                        kind,
                        anchor: Some(a.obj),
                        anchor2: None,
                    }));
                    return;
                }
                if anchor_follows {
                    let a = self.parse(&toks[j..]);
                    if a.pronoun || !a.obj.name.is_empty() {
                        let kind = match (kind, w) {
                            // "the plug out of the socket", "the towel off the rail"
                            (RelationKind::In, _) => RelationKind::In,
                            (k, _) => k,
                        };
                        let anchor = if a.pronoun {
                            ObjectRef::named("it")
                        } else {
                            a.obj
                        };
                        p.obj.relation = Some(Box::new(RelationSpec {
                            kind,
                            anchor: Some(anchor),
                            anchor2: None,
                        }));
                        p.unplaced.extend(a.unplaced);
                        return;
                    }
                }
            }
            // "up against the lamp": relation words no list knows
            if let Some(found) = self.relation_by_meaning(toks, i, 1, false) {
                self.relate_by_meaning(toks, found, p);
                return;
            }
            if !toks[i].is_mark() && find(TRAILERS, w).is_none() {
                p.unplaced.push(toks[i].w.clone());
            }
            i += 1;
        }
    }
}
