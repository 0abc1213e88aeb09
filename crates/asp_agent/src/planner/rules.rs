//! The rule-based goal parser: the planner's fallback and the offline agent's planner.
//!
//! It reads imperative goals literally: clauses joined by "and", "then", commas or
//! sentence ends; one verb per clause from a lexicon that maps everyday verbs onto the
//! closed set (grab → pick up, put X in Y → place, ring/press/type/dial → turn on with an
//! `action`, unplug/remove → pick up with an `action`, …); pronouns ("it", "them")
//! resolved to the last object; "P of the O" split into whole object and part; implied
//! steps added. [`parse_object_phrase`] splits an object phrase into a retrieval query
//! and a spatial relation for the offline agent.

use super::{
    Plan, PlanError, PlanErrorKind, PlanSource, Preposition, Subtask, Verb, add_implied_steps,
};

/// How a clause without a known verb is reported (and told apart by [`parse_goal`]).
const NO_VERB: &str = "no known verb in ";

const ARTICLES: &[&str] = &[
    "the", "a", "an", "some", "my", "your", "this", "that", "these", "those", "any", "one",
];

/// Nouns that name a part of a larger object.
const PART_NOUNS: &[&str] = &[
    "drawer", "door", "lid", "handle", "knob", "button", "buttons", "switch", "plug", "key",
    "keys", "bar", "cap", "lever", "keypad", "trigger", "plunger", "hinge", "cord", "cable",
    "latch", "tab", "pedal",
];

/// Things one presses (for "push X": anything else would be pushing an object around).
const PRESSABLE: &[&str] = &[
    "button",
    "buttons",
    "key",
    "keys",
    "switch",
    "bell",
    "doorbell",
    "buzzer",
    "bar",
    "keyboard",
    "keypad",
    "pedal",
    "trigger",
    "plunger",
    "remote",
    "lamp",
    "light",
    "phone",
    "stapler",
    "toaster",
    "kettle",
    "dispenser",
];

/// Words that start a clause (used to split "… and put it …" but not "salt and pepper").
const VERB_WORDS: &[&str] = &[
    "pick",
    "grab",
    "take",
    "get",
    "lift",
    "grasp",
    "hold",
    "fetch",
    "collect",
    "put",
    "place",
    "set",
    "drop",
    "move",
    "stack",
    "hang",
    "throw",
    "toss",
    "insert",
    "bring",
    "carry",
    "transfer",
    "return",
    "load",
    "open",
    "close",
    "shut",
    "turn",
    "switch",
    "power",
    "activate",
    "deactivate",
    "start",
    "stop",
    "ring",
    "press",
    "push",
    "hit",
    "tap",
    "click",
    "type",
    "dial",
    "call",
    "unplug",
    "remove",
    "pull",
    "extract",
    "pluck",
    "toggle",
    "flip",
    "slide",
];

/// Parses `goal` into a plan with implied steps added.
pub fn parse_goal(goal: &str) -> Result<Plan, PlanError> {
    let err = |message: String| PlanError {
        goal: goal.to_owned(),
        kind: if message.starts_with(NO_VERB) {
            PlanErrorKind::NoVerb
        } else {
            PlanErrorKind::Other
        },
        message,
    };
    let text = normalise(goal);
    if text.is_empty() {
        return Err(err("the goal is empty".into()));
    }
    let mut ctx = Ctx::default();
    let mut subtasks = Vec::new();
    for clause in split_clauses(&text) {
        let steps = parse_clause(&clause, &mut ctx).map_err(&err)?;
        subtasks.extend(steps);
    }
    if subtasks.is_empty() {
        return Err(err("no subtask found".into()));
    }
    Ok(Plan {
        goal: goal.to_owned(),
        subtasks: add_implied_steps(subtasks),
        source: PlanSource::Rules,
    })
}

#[derive(Debug, Default)]
struct Ctx {
    /// The last object mentioned, for "it"/"them".
    last_object: Option<String>,
}

impl Ctx {
    fn resolve(&self, phrase: &str) -> Result<String, String> {
        match phrase {
            "it" | "them" | "this one" | "that one" | "this" | "that" | "the same" => self
                .last_object
                .clone()
                .ok_or_else(|| format!("{phrase:?} does not refer to an object named before")),
            _ => Ok(phrase.to_owned()),
        }
    }
}

/// Lower case, one space between words, punctuation other than clause separators and
/// apostrophes removed, politeness stripped.
fn normalise(goal: &str) -> String {
    let mut s = String::with_capacity(goal.len());
    for c in goal.chars() {
        let c = match c {
            '’' | '‘' => '\'',
            c => c.to_ascii_lowercase(),
        };
        if c.is_alphanumeric() || matches!(c, ' ' | '\'' | ',' | ';' | '.' | '-' | '#' | '*') {
            s.push(c);
        } else if c.is_whitespace() || matches!(c, '!' | '?' | ':' | '"' | '(' | ')') {
            s.push(' ');
        }
    }
    let mut s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    s = s.trim_end_matches(['.', ',', ';', ' ']).to_owned();
    loop {
        let before = s.clone();
        for p in [
            "please ",
            "can you ",
            "could you ",
            "would you ",
            "will you ",
            "hey robot ",
            "robot, ",
            "robot ",
            "i want you to ",
            "i would like you to ",
            "i'd like you to ",
            "go ahead and ",
            "now ",
            "first ",
            "first, ",
            "kindly ",
        ] {
            if let Some(rest) = s.strip_prefix(p) {
                s = rest.to_owned();
            }
        }
        for p in [" please", " for me", " now", ", please"] {
            if let Some(rest) = s.strip_suffix(p) {
                s = rest.to_owned();
            }
        }
        if s == before {
            break;
        }
    }
    s
}

fn starts_with_verb(words: &[&str]) -> bool {
    let mut w = words;
    while let Some((first, rest)) = w.split_first() {
        let first = first.trim_end_matches(',');
        if matches!(first, "then" | "also" | "please" | "finally" | "next") {
            w = rest;
        } else if first == "after"
            && rest
                .first()
                .is_some_and(|n| n.trim_end_matches(',') == "that")
        {
            w = &rest[1..];
        } else {
            return VERB_WORDS.contains(&first);
        }
    }
    false
}

/// Splits at sentence ends, ";", "then", "after that", and at "and"/"," when a verb
/// follows.
fn split_clauses(text: &str) -> Vec<String> {
    let mut clauses = Vec::new();
    for sentence in text.split(['.', ';']) {
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let mut current: Vec<&str> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            let (bare, comma) = match w.strip_suffix(',') {
                Some(b) => (b, true),
                None => (w, false),
            };
            let rest = &words[i + 1..];
            let split_before_this = match bare {
                "then" | "finally" | "next" if !current.is_empty() => true,
                "and" if !current.is_empty() && starts_with_verb(rest) => true,
                "after"
                    if rest
                        .first()
                        .is_some_and(|n| n.trim_end_matches(',') == "that") =>
                {
                    i += 1; // skip "that"
                    true
                }
                _ => false,
            };
            if split_before_this {
                if !current.is_empty() {
                    clauses.push(current.join(" "));
                    current.clear();
                }
                i += 1;
                continue;
            }
            if !bare.is_empty() {
                current.push(bare);
            }
            if comma && starts_with_verb(rest) {
                clauses.push(current.join(" "));
                current.clear();
            }
            i += 1;
        }
        if !current.is_empty() {
            clauses.push(current.join(" "));
        }
    }
    clauses
        .into_iter()
        .map(|c| {
            c.trim_start_matches("and ")
                .trim_start_matches("then ")
                .trim_start_matches("also ")
                .trim()
                .to_owned()
        })
        .filter(|c| !c.is_empty())
        .collect()
}

/// The longest text typed key by key; longer text is refused rather than turned into
/// dozens of presses the tool-call cap would cut off halfway.
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

/// `s` without the first matching word-prefix, and which one matched.
fn strip_verb<'a>(s: &'a str, verbs: &[&'static str]) -> Option<(&'static str, &'a str)> {
    for v in verbs {
        if s == *v {
            return Some((v, ""));
        }
        if let Some(rest) = s.strip_prefix(v).and_then(|r| r.strip_prefix(' ')) {
            return Some((v, rest.trim()));
        }
    }
    None
}

/// Moves a verb particle that ends the clause next to its verb: "pick the cup up" →
/// "pick up the cup", "turn the lamp off" → "turn off the lamp".
fn move_particles(clause: &str) -> String {
    let words: Vec<&str> = clause.split_whitespace().collect();
    let pairs: &[(&str, &[&str])] = &[
        ("pick", &["up"]),
        ("turn", &["on", "off"]),
        ("switch", &["on", "off"]),
        ("power", &["on", "off"]),
        ("put", &["down"]),
        ("pull", &["out", "open"]),
        ("take", &["out"]),
        ("slide", &["open", "shut", "closed"]),
        ("push", &["closed", "shut", "in"]),
    ];
    if words.len() >= 3 {
        for (verb, particles) in pairs {
            if words[0] == *verb && !particles.contains(&words[1]) {
                // the particle at the end, or right before a prepositional phrase
                // ("take the apple out of the bowl")
                let idx = if particles.contains(&words[words.len() - 1]) {
                    Some(words.len() - 1)
                } else {
                    words
                        .iter()
                        .position(|w| particles.contains(w))
                        .filter(|&i| i >= 2 && matches!(words.get(i + 1), Some(&"of" | &"from")))
                };
                if let Some(i) = idx {
                    let mut out = vec![words[0], words[i]];
                    out.extend(words[1..i].iter().copied());
                    out.extend(words[i + 1..].iter().copied());
                    return out.join(" ");
                }
            }
        }
    }
    clause.to_owned()
}

/// The singular of a plural noun phrase's last word ("green apples" → "green apple").
fn singular(phrase: &str) -> String {
    let (head, last) = match phrase.rsplit_once(' ') {
        Some((h, l)) => (format!("{h} "), l),
        None => (String::new(), phrase),
    };
    let one = if let Some(stem) = last.strip_suffix("ies") {
        format!("{stem}y")
    } else if ["ches", "shes", "xes", "sses", "oes"]
        .iter()
        .any(|e| last.ends_with(e))
    {
        last[..last.len() - 2].to_owned()
    } else if let Some(stem) = last.strip_suffix('s')
        && !last.ends_with("ss")
    {
        stem.to_owned()
    } else {
        last.to_owned()
    };
    format!("{head}{one}")
}

/// The object phrases of a coordination: "the apple and the banana" → two.
fn split_objects(phrase: &str) -> Vec<String> {
    // "both green apples", "the two cups": one, then the other
    let bare = strip_article(phrase);
    for pair in ["both of the ", "both the ", "both ", "two "] {
        if let Some(rest) = bare.strip_prefix(pair) {
            let one = singular(rest);
            return vec![one.clone(), format!("other {one}")];
        }
    }
    let normalised = phrase.replace(", and ", ", ").replace(" and ", ", ");
    let parts: Vec<String> = normalised
        .split(", ")
        .map(strip_article)
        .filter(|p| !p.is_empty())
        .collect();
    // "salt and pepper shaker": only split when every piece names a thing on its own
    if parts.len() > 1
        && parts
            .iter()
            .all(|p| !p.contains(' ') || phrase.contains(" and the ") || phrase.contains(" and a "))
    {
        parts
    } else {
        vec![strip_article(phrase)]
    }
}

fn pickup(object: String, ctx: &mut Ctx) -> Vec<Subtask> {
    // "by the handle" → a grasp of the part
    for marker in [" by its ", " by the ", " by "] {
        if let Some(i) = object.find(marker) {
            let part = strip_article(&object[i + marker.len()..]);
            if is_part_noun(&part) {
                let whole = object[..i].trim().to_owned();
                ctx.last_object = Some(whole.clone());
                return vec![
                    Subtask::new(Verb::PickUp, whole.clone())
                        .with_part(Some(part.clone()))
                        .with_action(format!("grasp the {whole} by its {part}")),
                ];
            }
        }
    }
    let (whole, part) = split_part(&object, false);
    ctx.last_object = Some(whole.clone());
    let st = Subtask::new(Verb::PickUp, whole.clone());
    match part {
        Some(p) => {
            let action = format!("grasp the {whole} by its {p}");
            vec![st.with_part(Some(p)).with_action(action)]
        }
        None => vec![st],
    }
}

/// Location prepositions, most specific first.
const PLACE_PREPS: &[(&str, Preposition)] = &[
    (" into ", Preposition::In),
    (" onto ", Preposition::On),
    (" inside of ", Preposition::In),
    (" inside ", Preposition::In),
    (" on top of ", Preposition::On),
    (" in to ", Preposition::In),
    (" back in ", Preposition::In),
    (" back on ", Preposition::On),
];

/// Placements we cannot do with place/drop.
const UNSUPPORTED_PLACES: &[&str] = &[
    " next to ",
    " beside ",
    " near ",
    " behind ",
    " in front of ",
    " under ",
    " below ",
    " underneath ",
    " above ",
    " left of ",
    " right of ",
    " between ",
    " around ",
];

fn is_direction(phrase: &str) -> bool {
    matches!(
        strip_article(phrase).as_str(),
        "left"
            | "right"
            | "left side"
            | "right side"
            | "top"
            | "bottom"
            | "middle"
            | "center"
            | "centre"
    )
}

fn unsupported_place(what: &str) -> String {
    format!("placing {what} something is not supported: only on or in an object")
}

/// Splits "X in Y" for a placement.
fn split_place(rest: &str) -> Result<(String, Preposition, String), String> {
    let padded = format!(" {rest} ");
    for (prep, kind) in PLACE_PREPS {
        if let Some(i) = padded.find(prep) {
            let x = padded[..i].trim();
            let y = padded[i + prep.len()..].trim();
            if !x.is_empty() && !y.is_empty() {
                return Ok((x.to_owned(), *kind, y.to_owned()));
            }
        }
    }
    // the last " in " / " on " / " to " whose object is not just a direction
    let mut candidates: Vec<(usize, usize, Preposition)> = Vec::new();
    for (prep, kind) in [
        (" in ", Preposition::In),
        (" on ", Preposition::On),
        (" to ", Preposition::On),
    ] {
        let mut from = 0;
        while let Some(j) = padded[from..].find(prep) {
            candidates.push((from + j, prep.len(), kind));
            from += j + 1;
        }
    }
    candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
    for (i, len, kind) in candidates {
        let x = padded[..i].trim();
        let y = strip_article(padded[i + len..].trim());
        if x.is_empty() || y.is_empty() || is_direction(&y) {
            continue;
        }
        // "next to the plate", "in front of the bowl", "to the left of the cup"
        let what = if len == 4 && (x.ends_with(" next") || x.ends_with(" close")) {
            Some("next to")
        } else if y.starts_with("front of ") {
            Some("in front of")
        } else if y.starts_with("left of ") {
            Some("left of")
        } else if y.starts_with("right of ") {
            Some("right of")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(unsupported_place(what));
        }
        return Ok((x.to_owned(), kind, y));
    }
    if let Some(bad) = UNSUPPORTED_PLACES.iter().find(|u| padded.contains(*u)) {
        return Err(unsupported_place(bad.trim()));
    }
    Err(format!(
        "{rest:?} says what to move but not where: say on or in what"
    ))
}

fn place(rest: &str, ctx: &mut Ctx, force_in: bool) -> Result<Vec<Subtask>, String> {
    let (objects, prep, location) = split_place(rest)?;
    let prep = if force_in { Preposition::In } else { prep };
    let location = ctx.resolve(&strip_article(&location))?;
    let (loc, loc_part) = split_part(&location, false);
    let mut out = Vec::new();
    for obj in split_objects(&objects) {
        let obj = ctx.resolve(&obj)?;
        let (whole, _) = split_part(&obj, false);
        ctx.last_object = Some(whole.clone());
        let mut st = Subtask::place(whole, prep, loc.clone());
        st.location_part = loc_part.clone();
        out.push(st);
    }
    Ok(out)
}

/// Sides a goal may say to act from ("open the cabinet from the right side").
const SIDES: &[&str] = &["left", "right", "front", "back", "top", "bottom"];

/// The clause without a trailing "from the right side" / "from its left" / "from the
/// front", and that phrase: it says how to act, not which object.
fn split_side(clause: &str) -> (String, Option<String>) {
    for owner in ["the", "its", "their"] {
        for side in SIDES {
            for tail in [" side", ""] {
                let phrase = format!("from {owner} {side}{tail}");
                if let Some(rest) = clause.strip_suffix(&format!(" {phrase}")) {
                    return (rest.to_owned(), Some(phrase));
                }
            }
        }
    }
    (clause.to_owned(), None)
}

fn parse_clause(clause: &str, ctx: &mut Ctx) -> Result<Vec<Subtask>, String> {
    let (clause, side) = split_side(clause);
    let mut steps = parse_action_clause(&clause, ctx)?;
    // the side goes with the action (what go_to and the affordance detector read)
    if let Some(side) = side {
        for st in steps.iter_mut().filter(|s| s.verb != Verb::Place) {
            let action = match st.action.take() {
                Some(a) => format!("{a} {side}"),
                None => {
                    let what = st.part.as_deref().unwrap_or(&st.object);
                    format!("{} the {what} {side}", st.verb.phrase())
                }
            };
            st.action = Some(action);
        }
    }
    Ok(steps)
}

fn parse_action_clause(clause: &str, ctx: &mut Ctx) -> Result<Vec<Subtask>, String> {
    let mut clause = move_particles(clause);
    // "bring me the cup", "get me the apple": the recipient is not an object
    for verb in ["bring", "get", "fetch", "hand", "give", "pass"] {
        if let Some(rest) = clause.strip_prefix(&format!("{verb} me ")) {
            clause = format!("{verb} {rest}");
        }
    }
    let c = clause.as_str();
    let obj = |s: &str, ctx: &Ctx| -> Result<String, String> {
        let o = strip_article(s);
        if o.is_empty() {
            return Err(format!("{c:?} names no object"));
        }
        ctx.resolve(&o)
    };

    // turn on / off before "turn"-less verbs; "shut off" before "shut"
    if let Some((_, rest)) = strip_verb(
        c,
        &[
            "turn on",
            "switch on",
            "power on",
            "activate",
            "start",
            "light",
        ],
    ) {
        let (whole, part) = split_part(&obj(rest, ctx)?, true);
        ctx.last_object = Some(whole.clone());
        return Ok(vec![Subtask::new(Verb::TurnOn, whole).with_part(part)]);
    }
    if let Some((_, rest)) = strip_verb(
        c,
        &[
            "turn off",
            "switch off",
            "power off",
            "shut off",
            "shut down",
            "deactivate",
            "stop",
        ],
    ) {
        let (whole, part) = split_part(&obj(rest, ctx)?, true);
        ctx.last_object = Some(whole.clone());
        return Ok(vec![Subtask::new(Verb::TurnOff, whole).with_part(part)]);
    }
    if let Some((_, rest)) = strip_verb(c, &["pull open", "slide open", "open up", "open"]) {
        let (whole, part) = split_part(&obj(rest, ctx)?, false);
        ctx.last_object = Some(whole.clone());
        return Ok(vec![Subtask::new(Verb::Open, whole).with_part(part)]);
    }
    if let Some((_, rest)) = strip_verb(
        c,
        &[
            "slide shut",
            "slide closed",
            "push shut",
            "push closed",
            "push in",
            "close",
            "shut",
        ],
    ) {
        let (whole, part) = split_part(&obj(rest, ctx)?, false);
        ctx.last_object = Some(whole.clone());
        return Ok(vec![Subtask::new(Verb::Close, whole).with_part(part)]);
    }
    if let Some((_, rest)) = strip_verb(c, &["ring"]) {
        let (whole, part) = split_part(&obj(rest, ctx)?, true);
        let head = head_noun(&whole).unwrap_or_else(|| whole.clone());
        let action = match &part {
            Some(p) => format!("press the {p}"),
            None => format!("press the {head} button"),
        };
        ctx.last_object = Some(whole.clone());
        return Ok(vec![
            Subtask::new(Verb::TurnOn, whole)
                .with_part(part)
                .with_action(action),
        ]);
    }
    if let Some((_, rest)) = strip_verb(c, &["type"]) {
        let (text, device) = match rest.rfind(" on ").or_else(|| rest.rfind(" using ")) {
            Some(i) => {
                let sep = if rest[i..].starts_with(" on ") { 4 } else { 7 };
                (rest[..i].trim(), strip_article(&rest[i + sep..]))
            }
            None if rest.starts_with("on ") => ("", strip_article(&rest[3..])),
            None => (rest, "keyboard".to_owned()),
        };
        ctx.last_object = Some(device.clone());
        if text.is_empty() {
            let action = format!("press the keys of the {device}");
            return Ok(vec![Subtask::new(Verb::TurnOn, device).with_action(action)]);
        }
        return key_presses(c, text, &device);
    }
    if let Some((_, rest)) = strip_verb(c, &["dial", "call"]) {
        let (number, device) = match rest.rfind(" on ") {
            Some(i) => (rest[..i].trim(), strip_article(&rest[i + 4..])),
            None => (rest, "phone".to_owned()),
        };
        ctx.last_object = Some(device.clone());
        // a number's symbols are keyed in one by one (dashes and spaces only group
        // them); "call mom" or "dial a number" is one action on the keys
        let number = strip_article(number);
        let keyed: String = number.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
        let is_number = !keyed.is_empty()
            && keyed
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '*' | '#'));
        if is_number {
            return key_presses(c, &keyed, &device);
        }
        let whom = if number.is_empty() || number == "number" {
            "a number"
        } else {
            &number
        };
        let action = format!("press the number keys to dial {whom}");
        return Ok(vec![Subtask::new(Verb::TurnOn, device).with_action(action)]);
    }
    if let Some((verb, rest)) = strip_verb(c, &["press", "push", "hit", "tap", "click"]) {
        let target = obj(rest, ctx)?;
        let (whole, part) = split_part(&target, true);
        let action = match &part {
            Some(p) => format!("press the {p}"),
            None => format!("press the {whole}"),
        };
        let head = head_noun(part.as_deref().unwrap_or(&whole)).unwrap_or_default();
        if verb == "push" && !PRESSABLE.contains(&head.as_str()) {
            return Err(format!(
                "{c:?}: pushing an object around is not a supported subtask (only pick up, place, open, close, turn on/off)"
            ));
        }
        ctx.last_object = Some(whole.clone());
        return Ok(vec![
            Subtask::new(Verb::TurnOn, whole)
                .with_part(part)
                .with_action(action),
        ]);
    }
    if let Some((_, rest)) = strip_verb(c, &["unplug"]) {
        let target = obj(rest.split(" from ").next().unwrap_or(rest), ctx)?;
        let (whole, _) = split_part(&target, false);
        ctx.last_object = Some(whole.clone());
        let action = format!("pull the {whole} out of the socket");
        return Ok(vec![Subtask::new(Verb::PickUp, whole).with_action(action)]);
    }
    if let Some((_, rest)) = strip_verb(c, &["pull out", "take out", "remove", "extract", "pluck"])
    {
        let (thing, from) = match rest
            .find(" from ")
            .map(|i| (i, 6))
            .or_else(|| rest.find(" out of ").map(|i| (i, 8)))
        {
            Some((i, n)) => (&rest[..i], Some(strip_article(&rest[i + n..]))),
            None => (rest, None),
        };
        let target = obj(thing, ctx)?;
        let (whole, _) = split_part(&target, false);
        let action = match &from {
            Some(f) => format!("pull the {whole} out of the {f}"),
            None => format!("pull the {whole} out"),
        };
        let object = match from {
            Some(f) => format!("{whole} in the {f}"),
            None => whole.clone(),
        };
        ctx.last_object = Some(object.clone());
        return Ok(vec![Subtask::new(Verb::PickUp, object).with_action(action)]);
    }
    if let Some((_, rest)) = strip_verb(c, &["pull"]) {
        let target = obj(rest, ctx)?;
        let (whole, part) = split_part(&target, false);
        ctx.last_object = Some(whole.clone());
        if super::is_openable(part.as_deref().unwrap_or(&whole)) || part.is_some() {
            let action = format!("pull the {} open", part.as_deref().unwrap_or(&whole));
            return Ok(vec![
                Subtask::new(Verb::Open, whole)
                    .with_part(part)
                    .with_action(action),
            ]);
        }
        let action = format!("pull the {whole} out");
        return Ok(vec![Subtask::new(Verb::PickUp, whole).with_action(action)]);
    }
    if let Some((_, rest)) = strip_verb(c, &["toggle", "flip"]) {
        let (whole, part) = split_part(&obj(rest, ctx)?, true);
        let action = format!("flip the {}", part.as_deref().unwrap_or(&whole));
        ctx.last_object = Some(whole.clone());
        return Ok(vec![
            Subtask::new(Verb::TurnOn, whole)
                .with_part(part)
                .with_action(action),
        ]);
    }
    // "take/bring/carry X to Y" places; "take X" picks up
    if let Some((_, rest)) = strip_verb(c, &["bring", "carry", "take", "move", "transfer"]) {
        if (format!(" {rest} ").contains(" to ")
            || PLACE_PREPS
                .iter()
                .any(|(p, _)| format!(" {rest} ").contains(p))
            || format!(" {rest} ").contains(" in ")
            || format!(" {rest} ").contains(" on "))
            && let Ok(steps) = place(rest, ctx, false)
        {
            return Ok(steps);
        }
        if c.starts_with("take ") || c.starts_with("bring ") {
            return Ok(pickup(obj(rest, ctx)?, ctx));
        }
        return place(rest, ctx, false);
    }
    if let Some((verb, rest)) = strip_verb(
        c,
        &[
            "put down", "put back", "set down", "put", "place", "set", "drop", "stack", "hang",
            "throw", "toss", "insert", "return", "load",
        ],
    ) {
        let force_in = matches!(verb, "drop" | "throw" | "toss" | "insert" | "load")
            && !format!(" {rest} ").contains(" on ");
        return place(rest, ctx, force_in);
    }
    if let Some((_, rest)) = strip_verb(
        c,
        &[
            "pick up", "lift up", "grab", "get", "lift", "grasp", "hold", "fetch", "collect",
            "pick",
        ],
    ) {
        let rest = rest
            .replace(" out of the ", " in the ")
            .replace(" off the ", " on the ")
            .replace(" from the ", " on the ");
        return Ok(pickup(obj(&rest, ctx)?, ctx));
    }
    Err(format!(
        "{NO_VERB}{:?}; the planner understands: pick up/grab/take, put/place/drop X on|in Y, open, close, turn on/off, press/push (buttons), ring, type, dial, unplug, remove/pull out",
        clip(c, 60)
    ))
}

/// At most `max` characters of `s`, with "…" when cut (messages quote the input, they do
/// not repeat it).
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
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
    fn clauses_split_on_verbs_only() {
        assert_eq!(
            split_clauses("pick up the mug and put it in the bowl"),
            vec!["pick up the mug", "put it in the bowl"]
        );
        assert_eq!(
            split_clauses("put the salt and pepper shaker on the tray"),
            vec!["put the salt and pepper shaker on the tray"]
        );
        assert_eq!(
            split_clauses("open the drawer, then put the apple in it. close the drawer"),
            vec!["open the drawer", "put the apple in it", "close the drawer"]
        );
        assert_eq!(
            split_clauses("grab the cup, put it on the plate and after that press the button"),
            vec!["grab the cup", "put it on the plate", "press the button"]
        );
    }

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
    fn particles_move_to_their_verb() {
        assert_eq!(move_particles("pick the red cup up"), "pick up the red cup");
        assert_eq!(move_particles("turn the lamp off"), "turn off the lamp");
        assert_eq!(
            move_particles("take the apple out of the bowl"),
            "take out the apple of the bowl"
        );
        assert_eq!(move_particles("turn on the light"), "turn on the light");
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
