//! The offline goal grammar (issue 15): a goal as people say it becomes a structured
//! plan — each step's verb from the closed set, its object's own words apart from
//! attributes, relation, ordinal, room and count, the part, where it goes — or a refusal
//! with its class and the words it could not place, or a question back when a verb was
//! matched by meaning with too little confidence.
//!
//! It reads clauses, not sentences: clause marks, "then", "after that" and "and" before
//! a verb separate them; polite wrappers ("could you", "would you mind", "I'd really
//! appreciate it if you could") are skipped by finding the verb where a request puts it;
//! "I need X" asks for X; "not the red one" rules out; a verbless clause after a request
//! repeats its verb ("turn on the printer, then the monitor") and one before a request
//! names what its "it" stands for ("the remote by the lamp, could you grab it"). Verbs
//! and attribute words no list knows are matched by meaning ([`meaning::Meaning`]).
//! Implied steps follow the corpus rules (pick up before placing, open before placing
//! in or taking out of a closed receptacle). Safety refusals (harm, fire, the living put
//! in appliances, metal in sockets) are decided here so that the plan never holds them;
//! the tool guards still check every call.

pub mod lexicon;
pub mod meaning;
pub mod phrase;
pub mod subtasks;
pub mod tokens;

use std::sync::Arc;

use asp_core::models::{ModelError, TextEmbedder};

use super::corpus::{ActionKind, Expected, ObjectRef, RefusalClass, RelationKind, StepSpec};
use super::{Preposition, Verb, is_openable};
use lexicon::*;
use meaning::{Frame, Meaning, VerbClass, VerbMatch};
use phrase::{Phrase, PhraseReader, RelationGuess, find, longest, starts};
use tokens::{Tok, gerund_bases, participle_bases, tokenize};

/// What the grammar makes of a goal.
#[derive(Debug, Clone, PartialEq)]
pub enum Understanding {
    /// The steps, implied ones included, and notes on what was matched by meaning or
    /// left unplaced.
    Plan {
        steps: Vec<StepSpec>,
        notes: Vec<String>,
    },
    /// The goal is refused; `reason` says why and names the words it could not place.
    Refused { class: RefusalClass, reason: String },
    /// A verb was matched by meaning below the confidence to act on: ask first.
    AskBack {
        question: String,
        /// The plan the guess would give.
        guess: Vec<StepSpec>,
        confidence: f32,
    },
}

impl Understanding {
    /// As the corpus scores it.
    pub fn expected(&self) -> Expected {
        match self {
            Understanding::Plan { steps, .. } => Expected::Plan(steps.clone()),
            Understanding::Refused { class, .. } => Expected::Refuse(*class),
            Understanding::AskBack { .. } => Expected::Refuse(RefusalClass::AskedBack),
        }
    }
}

/// The grammar, with an optional meaning model for words its lists do not know.
#[derive(Debug, Default)]
pub struct GoalGrammar {
    meaning: Option<Meaning>,
}

/// Words that make a clause subordinate ("when you get a chance", "if you don't mind").
const SUBORDINATORS: &[&str] = &[
    "when", "whenever", "once", "if", "after", "before", "while", "because", "since", "unless",
    "as", "though", "although", "sorry", "excuse",
];

/// Small talk: a clause of these words only asks for nothing.
const CHAT: &[&str] = &[
    "hello",
    "hi",
    "hey",
    "thanks",
    "thank",
    "you",
    "sorry",
    "excuse",
    "me",
    "good",
    "morning",
    "afternoon",
    "evening",
    "night",
    "bye",
    "goodbye",
    "cheers",
    "yes",
    "no",
    "yeah",
    "ok",
    "okay",
    "great",
    "nice",
    "cool",
    "awesome",
    "perfect",
    "fine",
    "that",
    "is",
    "all",
    "for",
    "now",
    "there",
    "robot",
    "buddy",
    "how",
    "are",
    "doing",
    "today",
    "much",
    "very",
    "so",
    "it",
    "was",
    "well",
    "done",
    "job",
    "again",
];

const MODALS: &[&str] = &["could", "can", "would", "will", "should", "must", "might"];

/// A clause, classified.
#[derive(Debug, Clone)]
enum Clause {
    /// A request: the verb's sense, its words, what follows it.
    Act {
        sense: Sense,
        verb: String,
        rest: Vec<Tok>,
        by_meaning: Option<VerbMatch>,
    },
    /// "I need X", "I'd like X"; true where a wish says where X is to be ("I'd like the
    /// remote on the reading table": the state wished for, as "I want the door open").
    Want(Vec<Tok>, bool),
    /// "not the red one", "don't grab the glass one", "leave the white plate"; with
    /// what follows "but" ("not the red one but the black one").
    Exclude(Vec<Tok>, Option<Vec<Tok>>, Option<(Sense, String)>),
    /// A noun phrase without a verb.
    Mention(Vec<Tok>),
    /// "go to the sofa", "drive over to the desk in the office", "head upstairs": where
    /// the base is to go (the words after "to").
    GoTo(Vec<Tok>),
    /// A verb no list knows and the meaning model could not place.
    UnknownVerb(String),
    /// A statement, a question, small talk, a subordinate clause.
    Ignore,
}

/// Where a "go to …" said to go.
#[derive(Debug, Clone)]
enum Destination {
    Thing(ObjectRef),
    /// A room with nothing named in it ("go to the office upstairs").
    Room {
        room: String,
        storey: Option<asp_core::Storey>,
    },
    Storey(asp_core::Storey),
    Person,
}

impl GoalGrammar {
    /// The grammar with its lists only.
    pub fn lexical() -> Self {
        Self { meaning: None }
    }

    /// The grammar with verbs and attributes also matched by meaning (see
    /// [`Meaning`] for the two thresholds).
    pub fn with_embedder(
        embedder: Arc<dyn TextEmbedder>,
        min_similarity: f32,
        min_margin: f32,
    ) -> Result<Self, ModelError> {
        Ok(Self {
            meaning: Some(Meaning::new(embedder, min_similarity, min_margin)?),
        })
    }

    /// The grammar as configured: matching by meaning with `embedder` when the
    /// configuration asks for it and an embedder is given.
    pub fn from_config(
        cfg: &asp_config::sections::agent::PlannerConfig,
        embedder: Option<Arc<dyn TextEmbedder>>,
    ) -> Result<Self, ModelError> {
        match embedder.filter(|_| cfg.match_by_meaning) {
            Some(e) => Self::with_embedder(
                e,
                cfg.meaning_min_similarity as f32,
                cfg.meaning_min_margin as f32,
            ),
            None => Ok(Self::lexical()),
        }
    }

    /// Whether verbs are matched by meaning.
    pub fn has_meaning(&self) -> bool {
        self.meaning.is_some()
    }

    fn reader(&self) -> PhraseReader<'_> {
        PhraseReader {
            meaning: self.meaning.as_ref(),
        }
    }

    /// Reads a goal.
    pub fn understand(&self, goal: &str) -> Understanding {
        let toks = tokenize(goal);
        if toks.iter().all(Tok::is_mark) {
            return refuse(RefusalClass::NoVerb, "the goal is empty");
        }
        let mut d = Discourse::default();
        let mut clauses: Vec<Clause> = segments(&in_time_order(parentheses_last(toks.clone())))
            .iter()
            .map(|seg| self.classify(seg))
            .collect();
        // "I'd like the notebook on my desk, could you get it?": a request after the wish
        // says what is to be done with it, so the place only tells which one
        for i in 0..clauses.len() {
            if matches!(clauses[i], Clause::Want(_, true))
                && clauses[i + 1..]
                    .iter()
                    .any(|c| matches!(c, Clause::Act { .. }))
                && let Clause::Want(_, placed) = &mut clauses[i]
            {
                *placed = false;
            }
        }
        for clause in clauses {
            if let Err(refusal) = self.apply(&mut d, clause) {
                return refusal;
            }
        }
        d.finish(&toks)
    }

    fn classify(&self, seg: &[Tok]) -> Clause {
        let lead = seg
            .iter()
            .position(|t| find(FILLERS, &t.w).is_none() || t.is("do") && seg.len() > 1)
            .unwrap_or(seg.len());
        let body = &seg[lead..];
        if body.is_empty() {
            return Clause::Ignore;
        }
        // "go to the sofa": the base goes somewhere (a motion verb may be among the
        // fillers: "go" is one)
        if let Some(to) = (0..=lead.min(seg.len() - 1)).find_map(|i| motion_at(seg, i)) {
            return Clause::GoTo(seg[to..].to_vec());
        }
        // ruling out: "not the red one", "don't grab the glass one", "leave the plate"
        for ex in [
            "i do not want",
            "i do not need",
            "i would not want",
            "i would rather not have",
            "do not",
            "not",
            "never",
            "except",
            "but not",
            "neither",
            "no",
            "avoid",
            "stay away from",
            "keep away from",
            "ignore",
        ] {
            if starts(body, 0, ex) {
                let n = ex.split(' ').count();
                let mut rest = &body[n..];
                let mut verb = None;
                if let Some((sense, len, words)) = verb_at(rest, 0) {
                    verb = Some((sense, words.to_owned()));
                    rest = &rest[len..];
                    while rest
                        .first()
                        .is_some_and(|t| PARTICLES.contains(&t.w.as_str()))
                    {
                        rest = &rest[1..];
                    }
                } else if rest.len() > 2
                    && find(DETERMINERS, &rest[0].w).is_none()
                    && find(DETERMINERS, &rest[1].w).is_some()
                {
                    // "don't touch the blue box": a verb no list knows, before the
                    // object it rules out; what it does is not needed to rule it out
                    rest = &rest[1..];
                }
                return split_but(rest, verb);
            }
        }
        if body[0].is("leave")
            && !body
                .iter()
                .any(|t| matches!(t.w.as_str(), "on" | "in" | "inside" | "into"))
        {
            return split_but(&body[1..], None);
        }
        // "… goes in the sink", "the towel on the floor needs to go in the hamper": a
        // place said of the object; alone in its clause the object is "it"
        let goes = body
            .iter()
            .position(|t| matches!(t.w.as_str(), "goes" | "go" | "belongs" | "belong"));
        if let Some(k) = goes
            && body.get(k + 1).is_some_and(|t| {
                matches!(
                    t.w.as_str(),
                    "in" | "on" | "into" | "onto" | "inside" | "back"
                )
            })
            && (k == 0 || find(DETERMINERS, &body[0].w).is_some())
        {
            let mut subject: Vec<Tok> = body[..k].to_vec();
            // "needs to", "should", "has to", "must", "can": not the object's words
            while subject.last().is_some_and(|t| {
                matches!(
                    t.w.as_str(),
                    "to" | "needs" | "need" | "should" | "has" | "have" | "must" | "can" | "will"
                )
            }) {
                subject.pop();
            }
            if subject.is_empty() {
                subject.push(Tok {
                    w: "it".into(),
                    raw: "it".into(),
                });
            }
            // the place is what follows "go", whatever the subject says of itself
            subject.push(Tok {
                w: PLACE_MARK.into(),
                raw: String::new(),
            });
            subject.extend_from_slice(&body[k + 1..]);
            return Clause::Act {
                sense: Sense::Put,
                verb: body[k].w.clone(),
                rest: subject,
                by_meaning: None,
            };
        }
        // a request: the verb where a request puts it
        if let Some((i, sense, len)) = find_act(seg) {
            let verb = seg[i..i + len]
                .iter()
                .map(|t| t.w.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            return Clause::Act {
                sense,
                verb,
                rest: seg[i + len..].to_vec(),
                by_meaning: None,
            };
        }
        if find(SUBORDINATORS, &body[0].w).is_some() {
            return Clause::Ignore;
        }
        // a want may begin among the fillers ("please, can I get …": "can" is one)
        for k in 0..=lead {
            for w in WANTS {
                if starts(seg, k, w) {
                    let rest = seg[k + w.split(' ').count()..].to_vec();
                    let placed = PLACING_WANTS.contains(w)
                        && rest.windows(2).any(|p| {
                            matches!(p[0].w.as_str(), "on" | "onto" | "in" | "into" | "inside")
                                && find(DETERMINERS, &p[1].w).is_some()
                        });
                    return Clause::Want(rest, placed);
                }
            }
        }
        if body
            .iter()
            .all(|t| find(CHAT, &t.w).is_some() || find(FILLERS, &t.w).is_some())
        {
            return Clause::Ignore;
        }
        // "the plant needs water", "the floor needs sweeping"
        if let Some(k) = body.iter().position(|t| t.is("needs") || t.is("need")) {
            let next = body.get(k + 1).map(|t| t.w.clone()).unwrap_or_default();
            let needed = verb_word(&next)
                .or_else(|| gerund_bases(&next).into_iter().find_map(|b| verb_word(&b)));
            if let Some(s @ (Sense::Unsupported | Sense::Harm)) = needed {
                return Clause::Act {
                    sense: s,
                    verb: next,
                    rest: Vec::new(),
                    by_meaning: None,
                };
            }
        }
        if starts(body, 0, "there is") || starts(body, 0, "there are") {
            return Clause::Mention(body[2..].to_vec());
        }
        if find(SUBJECTS, &body[0].w).is_some() {
            return Clause::Ignore;
        }
        let w0 = body[0].w.as_str();
        let noun_start = find(DETERMINERS, w0).is_some()
            || find(PRONOUNS, w0).is_some()
            || w0.chars().all(|c| c.is_ascii_digit());
        let object_follows = body.get(1).is_some_and(|t| {
            find(DETERMINERS, &t.w).is_some()
                || find(PRONOUNS, &t.w).is_some()
                || t.is("me")
                || PARTICLES.contains(&t.w.as_str())
        });
        if !noun_start && object_follows {
            // a verb no list knows: by meaning
            let with_particle = body
                .get(1)
                .filter(|t| PARTICLES.contains(&t.w.as_str()))
                .map_or_else(|| w0.to_owned(), |p| format!("{w0} {}", p.w));
            let skip = with_particle.split(' ').count();
            let rest: Vec<&str> = body[skip..]
                .iter()
                .take_while(|t| !t.is_mark())
                .map(|t| t.w.as_str())
                .collect();
            let frame = clause_frame(&body[skip..]);
            let by_meaning = self.meaning.as_ref().and_then(|m| {
                // "unlatch", "unfasten": the opposite of a closing verb opens
                let undone = with_particle
                    .strip_prefix("un")
                    .filter(|stem| stem.len() >= 3 && !stem.contains(' '))
                    .and_then(|stem| m.verb(stem, &rest.join(" "), None))
                    .filter(|v| {
                        v.sure(m) && v.class == VerbClass::Sense(Sense::Act(Verb::Close, None))
                    })
                    .map(|v| VerbMatch {
                        class: VerbClass::Sense(Sense::Act(Verb::Open, None)),
                        prototype: "open",
                        ..v
                    });
                undone.or_else(|| m.verb(&with_particle, &rest.join(" "), frame))
            });
            if let Some(m) = by_meaning {
                let mut rest = body[skip..].to_vec();
                // "slam the cupboard closed": the state word is the verb's, not the object's
                if matches!(m.frame, Some(Frame::EndsOpen | Frame::EndsClosed)) {
                    rest.pop();
                }
                return match m.class {
                    VerbClass::Chat => Clause::Ignore,
                    // ruling out narrows what a later verb acts on; it moves nothing
                    VerbClass::Exclude => split_but(&body[skip..], None),
                    VerbClass::Sense(sense) => Clause::Act {
                        sense,
                        verb: with_particle,
                        rest,
                        by_meaning: Some(m),
                    },
                };
            }
            return Clause::UnknownVerb(w0.to_owned());
        }
        Clause::Mention(body.to_vec())
    }

    fn apply(&self, d: &mut Discourse, clause: Clause) -> Result<(), Understanding> {
        match clause {
            Clause::Ignore => Ok(()),
            Clause::UnknownVerb(w) => {
                d.unknown_verbs.push(w);
                Ok(())
            }
            Clause::Want(rest, true) => self.act(d, Sense::Put, "put", &rest),
            Clause::Want(rest, false) => {
                let p = self.reader().parse(&rest);
                let obj = d
                    .resolve(&p, None)
                    .map_err(|e| refuse(RefusalClass::NoObject, e))?;
                d.push_want(obj, p.part);
                Ok(())
            }
            Clause::Exclude(rest, but, verb) => {
                if verb.is_some() {
                    d.last_act = verb;
                }
                // "neither the red one nor the green one": each ruled out
                for alt in rest.split(|t| t.is("nor")).filter(|a| !a.is_empty()) {
                    d.exclude(self.reader().parse(alt));
                }
                if let Some(but) = but {
                    let p = self.reader().parse(&but);
                    d.refine(&p);
                }
                Ok(())
            }
            Clause::GoTo(rest) => self.go_to(d, &rest),
            Clause::Mention(rest) => {
                let p = self.reader().parse(&rest);
                if p.is_empty() && p.obj.room.is_none() {
                    return Ok(());
                }
                // "go to the kitchen": the room of what follows
                if p.obj.relation.is_none() && ROOMS.contains(&p.obj.name.as_str()) {
                    d.room = Some(p.obj.name.clone());
                    return Ok(());
                }
                if p.one && !d.objects.is_empty()
                    || p.obj.name.is_empty() && !p.obj.excluded.is_empty()
                {
                    d.refine(&p);
                    return Ok(());
                }
                if let Some((sense, verb)) = d.last_act.clone() {
                    // "then the monitor": the verb before, again
                    return self.act(d, sense, &verb, &rest);
                }
                d.mention(p);
                Ok(())
            }
            Clause::Act {
                sense,
                verb,
                rest,
                by_meaning,
            } => {
                if let Some(m) = &by_meaning {
                    if self.meaning.as_ref().is_some_and(|mm| m.sure(mm)) {
                        d.notes.push(format!(
                            "{verb:?} read as {:?} (similarity {:.2}, margin {:.2}{})",
                            m.prototype,
                            m.similarity,
                            m.margin,
                            m.frame
                                .map(|f| format!("; {}", f.describe()))
                                .unwrap_or_default()
                        ));
                    } else {
                        d.ask = Some((verb.clone(), m.clone()));
                    }
                }
                self.act(d, sense, &verb, &rest)
            }
        }
    }

    /// "go to the sofa": a step of its own after other steps ("pick up the cup and go
    /// to the table"); before them only where they happen ("go to the kitchen and get
    /// the mug": the room of what follows, "go to the fridge and open it": what "it"
    /// stands for); alone, the goal's one step (see [`Discourse::finish`]).
    fn go_to(&self, d: &mut Discourse, rest: &[Tok]) -> Result<(), Understanding> {
        // "come here and grab the mug": where the person is only says who wants it
        if rest
            .first()
            .is_some_and(|t| matches!(t.w.as_str(), "me" | "us" | "you" | "him" | "her" | "here"))
        {
            d.destination = Some(Destination::Person);
            return Ok(());
        }
        // "go downstairs to the sofa": the sofa downstairs
        let rest: Vec<Tok> = match rest {
            [storey, to, tail @ ..]
                if matches!(storey.w.as_str(), "upstairs" | "downstairs")
                    && MOTION_ENDS.contains(&to.w.as_str())
                    && !tail.is_empty() =>
            {
                tail.iter().chain([storey]).cloned().collect()
            }
            _ => rest.to_vec(),
        };
        let rest = where_pointed(rest.as_slice());
        // "go upstairs", "head downstairs"
        let said: Vec<&str> = rest.iter().map(|t| t.w.as_str()).collect();
        if let Ok(storey) = said.join(" ").parse::<asp_core::Storey>() {
            d.destination = Some(Destination::Storey(storey));
            return Ok(());
        }
        let p = self.reader().parse(rest);
        d.absorb(&p);
        if p.obj.relation.is_none() && ROOMS.contains(&p.obj.name.as_str()) {
            let room = p.obj.name.clone();
            d.room = Some(room.clone());
            if d.steps.is_empty() {
                d.destination = Some(Destination::Room {
                    room,
                    storey: p.obj.storey,
                });
            } else {
                // "pick up the cup and go to the kitchen": a drive of its own (not an
                // object "it" could stand for later)
                d.steps
                    .push(step(Verb::GoTo, ObjectRef::room_itself(room, p.obj.storey)));
            }
            return Ok(());
        }
        if p.obj.name.is_empty() && !p.pronoun {
            if let Some(storey) = p.obj.storey {
                d.destination = Some(Destination::Storey(storey));
            }
            return Ok(());
        }
        let obj = d
            .resolve(&p, None)
            .map_err(|e| refuse(RefusalClass::NoObject, e))?;
        if d.steps.is_empty() {
            d.objects.push(obj.clone());
            d.pending = Some(obj.clone());
            d.destination = Some(Destination::Thing(obj));
        } else {
            d.push(step(Verb::GoTo, obj));
        }
        Ok(())
    }

    /// One request clause: its steps.
    fn act(
        &self,
        d: &mut Discourse,
        sense: Sense,
        verb: &str,
        rest: &[Tok],
    ) -> Result<(), Understanding> {
        d.last_act = Some((sense, verb.to_owned()));
        // particles said apart from the verb ("switch the TV off"), and the rest without
        // typed text keeps every word ("type on the keyboard" has no particle)
        let (particles, rest) = match sense {
            Sense::Act(_, Some(ActionKind::Type | ActionKind::Dial)) => (Vec::new(), rest.to_vec()),
            _ => particles(rest, sense),
        };
        let sense = refine_sense(sense, verb, &particles, &rest);
        match sense {
            // "pour boiling water on the cat": harm outranks a missing skill
            Sense::Unsupported
                if rest
                    .iter()
                    .any(|t| LIVING.contains(&t.w.as_str()) && !t.is("me")) =>
            {
                Err(refuse(
                    RefusalClass::Unsafe,
                    format!("{verb:?} would harm the living"),
                ))
            }
            Sense::Unsupported => Err(refuse(
                RefusalClass::Unsupported,
                format!(
                    "{verb:?} is not one of the robot's skills (pick up, place, open, close, turn on, turn off)"
                ),
            )),
            Sense::Harm => Err(refuse(
                RefusalClass::Unsafe,
                format!("{verb:?} would harm someone or something"),
            )),
            Sense::Leave => {
                d.exclude(self.reader().parse(&rest));
                Ok(())
            }
            Sense::Act(v, Some(kind @ (ActionKind::Type | ActionKind::Dial))) => {
                let on = rest.iter().position(|t| {
                    matches!(
                        t.w.as_str(),
                        "on" | "into" | "in" | "using" | "with" | "from"
                    )
                });
                let (text, device) = match on {
                    Some(k) => (&rest[..k], &rest[k + 1..]),
                    None => (rest.as_slice(), &[][..]),
                };
                let text: Vec<&str> = text.iter().map(|t| t.raw.as_str()).collect();
                let p = self.reader().parse(device);
                let obj = d
                    .resolve(&p, None)
                    .map_err(|e| refuse(RefusalClass::NoObject, e))?;
                d.push(StepSpec {
                    action: Some(kind),
                    text: Some(text.join(" ")),
                    part: p.part,
                    ..step(v, obj)
                });
                Ok(())
            }
            Sense::Act(v, action) => {
                for conj in conjuncts(&rest) {
                    let p = self.reader().parse(conj);
                    d.absorb(&p);
                    let obj = d
                        .resolve(&p, None)
                        .map_err(|e| refuse(RefusalClass::NoObject, e))?;
                    d.push(StepSpec {
                        action,
                        part: p.part,
                        side: p.side,
                        ..step(v, obj)
                    });
                }
                Ok(())
            }
            Sense::Put | Sense::Carry => {
                let conj = conjuncts(&rest);
                // "put the apple and the banana in the basket": a conjunct without a
                // place takes the next one's
                let mut parsed: Vec<(Phrase, Option<Place>)> = Vec::new();
                for c in &conj {
                    let (object, place) = split_place(c, sense);
                    let mut p = self.reader().parse(object);
                    // "carry the box upstairs": where it goes, not where it is (and no
                    // place to put it on: the pick-up is what the skills can do)
                    let n = object.len();
                    if sense == Sense::Carry
                        && place.is_none()
                        && n >= 2
                        && matches!(object[n - 1].w.as_str(), "upstairs" | "downstairs")
                        && !object[n - 2].is("from")
                    {
                        p.obj.storey = None;
                    }
                    d.absorb(&p);
                    let place = place.map(|(prep, loc)| {
                        let lp = (!loc.is_empty()).then(|| self.reader().parse(loc));
                        if let Some(lp) = &lp {
                            d.absorb(lp);
                        }
                        (prep, lp)
                    });
                    parsed.push((p, place));
                }
                for k in 0..parsed.len() {
                    if parsed[k].1.is_none() {
                        parsed[k].1 = parsed[k + 1..].iter().find_map(|(_, pl)| pl.clone());
                    }
                }
                for (p, place) in parsed {
                    let obj = d
                        .resolve(&p, None)
                        .map_err(|e| refuse(RefusalClass::NoObject, e))?;
                    match place {
                        None if sense == Sense::Carry => {
                            d.push(StepSpec {
                                part: p.part,
                                ..step(Verb::PickUp, obj)
                            });
                        }
                        None => {
                            // "put the cup next to the plate": a placement the skills lack
                            let said = conj
                                .iter()
                                .flat_map(|c| c.iter())
                                .map(|t| t.w.as_str())
                                .collect::<Vec<_>>()
                                .join(" ");
                            if let Some(r) = [
                                "next to",
                                "in front of",
                                "behind",
                                "beside",
                                "left of",
                                "right of",
                                "under",
                                "between",
                                "near",
                            ]
                            .iter()
                            .find(|r| said.contains(*r))
                            {
                                return Err(refuse(
                                    RefusalClass::Unsupported,
                                    format!(
                                        "{verb:?} {r} a place: the robot places only on or in something"
                                    ),
                                ));
                            }
                            return Err(refuse(
                                RefusalClass::NoObject,
                                format!(
                                    "{verb:?} does not say where: on or in what should the {} go?",
                                    obj.name
                                ),
                            ));
                        }
                        Some((prep, loc)) => {
                            let (loc, loc_part) = match loc {
                                Some(lp) => {
                                    let l = d
                                        .resolve(&lp, Some(&obj))
                                        .map_err(|e| refuse(RefusalClass::NoObject, e))?;
                                    (l, lp.part)
                                }
                                // "put the bowl in": where was named before
                                None => (
                                    d.last_other(&obj).ok_or_else(|| {
                                        refuse(
                                            RefusalClass::NoObject,
                                            format!("{verb:?} does not say where"),
                                        )
                                    })?,
                                    None,
                                ),
                            };
                            // "grab the mug and bring it to the table": held already
                            let held = d
                                .last_acted()
                                .is_some_and(|s| s.verb == Verb::PickUp && s.object == obj);
                            if sense == Sense::Carry && !held {
                                d.push(StepSpec {
                                    part: p.part.clone(),
                                    ..step(Verb::PickUp, obj.clone())
                                });
                            }
                            d.push(StepSpec {
                                preposition: Some(prep),
                                location: Some(loc),
                                location_part: loc_part,
                                ..step(Verb::Place, obj)
                            });
                        }
                    }
                }
                Ok(())
            }
            Sense::Push | Sense::Pull => Err(Understanding::AskBack {
                question: format!("{verb:?} what way: open, close, turn on, turn off or press?"),
                guess: Vec::new(),
                confidence: 0.0,
            }),
        }
    }
}

/// Where a put/carry conjunct goes: the preposition and, unless elided ("put the bowl
/// in"), the location's phrase.
type Place = (Preposition, Option<Phrase>);

fn refuse(class: RefusalClass, reason: impl Into<String>) -> Understanding {
    Understanding::Refused {
        class,
        reason: reason.into(),
    }
}

fn step(verb: Verb, object: ObjectRef) -> StepSpec {
    StepSpec {
        verb,
        object,
        part: None,
        preposition: None,
        location: None,
        location_part: None,
        action: None,
        text: None,
        side: None,
        implied: false,
    }
}

fn verb_word(w: &str) -> Option<Sense> {
    VERBS.iter().find(|(p, _)| *p == w).map(|(_, s)| *s)
}

/// The verb `toks[i..]` starts with (its gerund too: "closing"), and its word count.
fn verb_at(toks: &[Tok], i: usize) -> Option<(Sense, usize, &'static str)> {
    if let Some(found) = longest(VERBS, toks, i) {
        return Some(found);
    }
    for base in gerund_bases(&toks.get(i)?.w) {
        let mut t = toks.to_vec();
        t[i].w = base;
        if let Some(found) = longest(VERBS, &t, i) {
            return Some(found);
        }
    }
    None
}

/// Where the request's verb is: after the polite wrapper, after "to", "and", "please",
/// or after "could you" / "if you could".
fn find_act(seg: &[Tok]) -> Option<(usize, Sense, usize)> {
    for i in 0..seg.len() {
        let before = &seg[..i];
        // polite words, and adverbs ("carefully", "quickly") before the verb
        let lead = before
            .iter()
            .all(|t| find(FILLERS, &t.w).is_some() || t.w.len() > 4 && t.w.ends_with("ly"));
        let prev = before.last().map(|t| t.w.as_str());
        let prev2 = before.len().checked_sub(2).map(|k| seg[k].w.as_str());
        let ok =
            lead || matches!(
                prev,
                Some("to" | "and" | "please" | "just" | "then" | "kindly")
            ) || prev.is_some_and(|p| MODALS.contains(&p)) && prev2 == Some("you")
                || prev == Some("you") && prev2.is_some_and(|p| MODALS.contains(&p));
        if !ok {
            continue;
        }
        // "to" after a subject ("I want to …") is not a request unless "you" asked it
        if prev == Some("to")
            && before.iter().any(|t| t.is("i") || t.is("we"))
            && !before.iter().any(|t| t.is("you"))
        {
            continue;
        }
        if let Some((sense, len, _)) = verb_at(seg, i) {
            // a verb needs something after it, unless it ends the goal ("start it")
            return Some((i, sense, len));
        }
    }
    None
}

/// The shape of a clause after a verb no list knows: the object and a state it ends in
/// as the clause's last word ("the cupboard closed", "the gate open"), or the object
/// and where it goes ("the box onto the table", "the coins in the jar").
fn clause_frame(rest: &[Tok]) -> Option<Frame> {
    let words: Vec<&Tok> = rest.iter().take_while(|t| !t.is_mark()).collect();
    let last = words.last()?;
    if words.len() >= 3 && find(DETERMINERS, &words[0].w).is_some() {
        match last.w.as_str() {
            "open" => return Some(Frame::EndsOpen),
            "shut" | "closed" => return Some(Frame::EndsClosed),
            _ => {}
        }
    }
    let certain = words.iter().skip(1).any(|t| t.is("into") || t.is("onto"));
    let maybe = words.iter().enumerate().skip(1).any(|(k, t)| {
        matches!(t.w.as_str(), "in" | "on" | "inside")
            && words
                .get(k + 1)
                .is_some_and(|n| find(DETERMINERS, &n.w).is_some())
            && words
                .get(k + 2)
                .is_none_or(|n| SIDES.iter().all(|(s, _)| *s != n.w))
    });
    (certain || maybe).then_some(Frame::Destination { certain })
}

/// Splits "the red one but the black one" into what is ruled out and what is asked.
fn split_but(rest: &[Tok], verb: Option<(Sense, String)>) -> Clause {
    match rest.iter().position(|t| t.is("but") || t.is("instead")) {
        Some(k) => Clause::Exclude(rest[..k].to_vec(), Some(rest[k + 1..].to_vec()), verb),
        None => Clause::Exclude(rest.to_vec(), None, verb),
    }
}

/// The request a temporal clause starts at `k` ("after you close the window", "before
/// grabbing the mug", "once you have put the cup on the tray"): its words with the
/// subject, "have" and a gerund's "-ing" taken off, and where it ends (the next mark or
/// the end). `None` unless a verb the lists know starts it.
fn temporal_clause(toks: &[Tok], k: usize) -> Option<(Vec<Tok>, usize)> {
    if !matches!(toks.get(k)?.w.as_str(), "after" | "before" | "once") {
        return None;
    }
    let end = (k + 1..toks.len())
        .find(|&q| toks[q].is_mark() || toks[q].is("then"))
        .unwrap_or(toks.len());
    let mut j = k + 1;
    if toks
        .get(j)
        .is_some_and(|t| matches!(t.w.as_str(), "you" | "i" | "we"))
    {
        j += 1;
    }
    if toks
        .get(j)
        .is_some_and(|t| matches!(t.w.as_str(), "have" | "having" | "'ve"))
    {
        j += 1;
    }
    if j >= end {
        return None;
    }
    let mut clause = toks[j..end].to_vec();
    // "grabbing", "closed" → "grab", "close": the base the lists know
    if verb_at(&clause, 0).is_some_and(|(_, _, words)| words.starts_with(&clause[0].w)) {
        return Some((clause, end));
    }
    let said = clause[0].w.clone();
    for base in gerund_bases(&said)
        .into_iter()
        .chain(participle_bases(&said))
    {
        clause[0].w = base;
        if verb_at(&clause, 0).is_some() {
            return Some((clause, end));
        }
    }
    None
}

/// Requests said out of order put back in it: "after you close the window, turn on the
/// fan" and "turn on the fan after you close the window" both close first; "before
/// grabbing the mug, open the cabinet" opens first; "open the cabinet before grabbing
/// the mug" is in order already.
fn in_time_order(toks: Vec<Tok>) -> Vec<Tok> {
    let then = || {
        [",", "then"].map(|w| Tok {
            w: w.to_owned(),
            raw: w.to_owned(),
        })
    };
    for k in 0..toks.len() {
        let Some((sub, end)) = temporal_clause(&toks, k) else {
            continue;
        };
        let first = toks[k].is("before");
        let start = toks[..k]
            .iter()
            .rposition(Tok::is_mark)
            .map_or(0, |m| m + 1);
        // the main clause, and where the words after both clauses start
        let (main, tail) = if start == k {
            // the temporal clause leads: the main clause runs to the next mark
            let after_mark = end + usize::from(toks.get(end).is_some_and(Tok::is_mark));
            let main_end = (after_mark..toks.len())
                .find(|&q| toks[q].is_mark() || toks[q].is("then"))
                .unwrap_or(toks.len());
            (&toks[after_mark..main_end], main_end)
        } else {
            // it follows its main clause
            (&toks[start..k], end)
        };
        if main.is_empty() {
            continue;
        }
        let (a, b): (&[Tok], &[Tok]) = if first { (main, &sub) } else { (&sub, main) };
        let mut out: Vec<Tok> = toks[..start].to_vec();
        out.extend(a.iter().cloned());
        out.extend(then());
        out.extend(b.iter().cloned());
        out.extend(toks[tail..].iter().cloned());
        return in_time_order(out);
    }
    toks
}

/// "hang the dry towel, not the damp one, on the hook": a ruling-out said between commas
/// inside a clause moves after the clause's end, so "on the hook" stays with "hang".
fn parentheses_last(toks: Vec<Tok>) -> Vec<Tok> {
    let mut toks = toks;
    let mut i = 0;
    while i + 1 < toks.len() {
        let rules_out = toks[i].is(",")
            && (["not", "except", "excluding", "neither"]
                .iter()
                .any(|w| toks[i + 1].is(w))
                || starts(&toks, i + 1, "other than")
                || starts(&toks, i + 1, "but not"));
        let close = rules_out
            .then(|| (i + 2..toks.len()).find(|&m| toks[m].is_mark()))
            .flatten()
            .filter(|&m| {
                toks[m].is(",")
                    && toks
                        .get(m + 1)
                        .is_some_and(|t| PLACE_PREPOSITIONS.contains(&t.w.as_str()))
            });
        let Some(m) = close else {
            i += 1;
            continue;
        };
        let end = (m + 1..toks.len())
            .find(|&q| toks[q].is_mark())
            .unwrap_or(toks.len());
        // [.. i) , ruling-out [m) , rest [end) → [.. i) rest , ruling-out [end)
        let rest: Vec<Tok> = toks[m + 1..end].to_vec();
        let aside: Vec<Tok> = toks[i..m].to_vec();
        let n = rest.len();
        toks.splice(i..end, rest.into_iter().chain(aside));
        i += n + 1;
    }
    toks
}

/// Where the destination's words begin when a motion verb at `i` sends the robot
/// somewhere: "go to the sofa", "head back over to the desk", "walk up to the door",
/// "go upstairs", "take me to the desk", "park next to the sofa", "approach the shelf".
/// `None` when an object or a verb follows instead ("move the cup to the table", "go to
/// get the cup", "go ahead and …", "stand the bottle up").
fn motion_at(toks: &[Tok], i: usize) -> Option<usize> {
    let first = toks.get(i)?;
    let skip_adverbs = |mut k: usize| {
        while toks
            .get(k)
            .is_some_and(|t| MOTION_ADVERBS.contains(&t.w.as_str()))
        {
            k += 1;
        }
        k
    };
    let end_at = |k: usize, ends: &[&str]| {
        ends.iter()
            .filter(|e| starts(toks, k, e))
            .map(|e| k + e.split(' ').count())
            .max()
    };
    let to = if APPROACH_VERBS.contains(&first.w.as_str()) {
        // "approach the shelf": its object is where it goes
        i + 1
    } else if let Some(lead) = MOTION_LEADS.iter().find(|l| starts(toks, i, l)) {
        let k = skip_adverbs(i + lead.split(' ').count());
        end_at(k, MOTION_ENDS).or_else(|| end_at(k, STAND_ENDS))?
    } else if STAND_VERBS.contains(&first.w.as_str()) {
        end_at(skip_adverbs(i + 1), STAND_ENDS)?
    } else if MOTION_VERBS.contains(&first.w.as_str()) {
        let k = skip_adverbs(i + 1);
        if let Some(to) = end_at(k, MOTION_ENDS) {
            to
        } else if toks
            .get(k)
            .is_some_and(|t| matches!(t.w.as_str(), "upstairs" | "downstairs" | "here"))
        {
            k
        } else {
            return None;
        }
    } else {
        return None;
    };
    let first = toks.get(to).filter(|t| !t.is_mark())?;
    // "go to get the cup": the verb after it is the request
    if verb_at(toks, to).is_some() && find(DETERMINERS, &first.w).is_none() {
        return None;
    }
    Some(to)
}

/// "where the mug is", "where you saw the keys": the thing the place is pointed at by;
/// other words as they are.
fn where_pointed(rest: &[Tok]) -> &[Tok] {
    let Some(("where", tail)) = rest.split_first().map(|(t, tail)| (t.w.as_str(), tail)) else {
        return rest;
    };
    let tail = WHERE_SEEN
        .iter()
        .find(|p| starts(tail, 0, p))
        .map_or(tail, |p| &tail[p.split(' ').count()..]);
    // "is" and what follows it ("where the mug is now", "where the mug was this morning")
    let end = (1..tail.len())
        .find(|&k| WHERE_IS.iter().any(|w| starts(tail, k, w)))
        .unwrap_or(tail.len());
    &tail[..end]
}

/// Clauses: split at clause marks, "then", "after that", and at "and"/"but" before a
/// verb.
fn segments(toks: &[Tok]) -> Vec<Vec<Tok>> {
    let mut out: Vec<Vec<Tok>> = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    let mut i = 0;
    let flush = |cur: &mut Vec<Tok>, out: &mut Vec<Vec<Tok>>| {
        if !cur.is_empty() {
            out.push(std::mem::take(cur));
        }
    };
    while i < toks.len() {
        let t = &toks[i];
        if t.is_mark() {
            flush(&mut cur, &mut out);
            i += 1;
            continue;
        }
        let seq = [
            "and then",
            "and afterwards",
            "and after that",
            "after that",
            "afterwards",
            "after which",
            "then",
            "once you are done",
            "when you are done",
            "once that is done",
            "when that is done",
            "once done",
            "and finally",
            "finally",
            "followed by",
        ];
        if let Some(s) = seq.iter().find(|s| starts(toks, i, s)) {
            flush(&mut cur, &mut out);
            i += s.split(' ').count();
            continue;
        }
        if (t.is("and") || t.is("but") || t.is("or")) && !cur.is_empty() {
            let mut j = i + 1;
            while toks.get(j).is_some_and(|t| {
                matches!(
                    t.w.as_str(),
                    "also" | "please" | "just" | "then" | "to" | "you" | "can" | "could"
                )
            }) {
                j += 1;
            }
            let between_open = cur
                .iter()
                .rev()
                .take_while(|t| !t.is("and"))
                .any(|t| t.is("between"));
            let starts_clause = !between_open
                && (verb_at(toks, j).is_some_and(|(_, len, _)| {
                    toks.get(j + len)
                        .is_some_and(|n| !n.is_mark() && !n.is("and"))
                        || toks.get(j + len).is_none_or(|n| n.is_mark())
                            && matches!(toks[j].w.as_str(), "start" | "close" | "open")
                }) || starts(toks, j, "do not")
                    || starts(toks, j, "leave")
                    || motion_at(toks, j).is_some());
            if starts_clause {
                flush(&mut cur, &mut out);
                i = j;
                continue;
            }
        }
        cur.push(t.clone());
        i += 1;
    }
    flush(&mut cur, &mut out);
    out
}

/// Top-level "and"-joined object phrases ("the TV and the lamp"); "between X and Y"
/// keeps its "and".
fn conjuncts(rest: &[Tok]) -> Vec<&[Tok]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut between = false;
    for (k, t) in rest.iter().enumerate() {
        if t.is("between") {
            between = true;
        } else if t.is("and") || t.is("as well as") {
            if between {
                between = false;
                continue;
            }
            // "the apple and the banana", not "salt and pepper" alone
            let next_np = rest.get(k + 1).is_some_and(|n| {
                find(DETERMINERS, &n.w).is_some()
                    || find(PRONOUNS, &n.w).is_some()
                    || n.w.parse::<u32>().is_ok()
                    || NUMBERS.iter().any(|(w, _)| *w == n.w)
            });
            if next_np {
                out.push(&rest[start..k]);
                start = k + 1;
            }
        }
    }
    out.push(&rest[start..]);
    out.retain(|c| !c.is_empty());
    if out.is_empty() {
        out.push(&rest[0..0]);
    }
    out
}

/// The particles of a verb said apart from it ("switch the TV off", "put the glass
/// down on the coaster"), and the rest without them.
fn particles(rest: &[Tok], sense: Sense) -> (Vec<String>, Vec<Tok>) {
    let mut found = Vec::new();
    let mut out = Vec::new();
    for (k, t) in rest.iter().enumerate() {
        let w = t.w.as_str();
        let next = rest.get(k + 1).map(|n| n.w.as_str());
        let is_particle = PARTICLES.contains(&w)
            && (next.is_none()
                || next.is_some_and(|n| {
                    find(TRAILERS, n).is_some() && !matches!(n, "the" | "a" | "it" | "here" | "there" | "over")
                        || matches!(n, "and" | "again")
                        || k > 0 && matches!(n, "in" | "on" | "into" | "onto" | "to" | "inside")
                })
                || k == 0 && next.is_some_and(|n| find(DETERMINERS, n).is_some() || find(PRONOUNS, n).is_some() || n == "me")
                // "hand me back the pen", "pass us over the salt"
                || k == 1 && matches!(rest[0].w.as_str(), "me" | "us") && next.is_some_and(|n| find(DETERMINERS, n).is_some()))
            // "put the lid on": the place is said, not a particle
            && !(matches!(sense, Sense::Put) && w == "on" && next.is_none());
        // "the cup on the left": not a particle
        let part_of_phrase = k > 0 && matches!(rest[k - 1].w.as_str(), "the" | "its");
        if is_particle && !part_of_phrase {
            found.push(w.to_owned());
        } else {
            out.push(t.clone());
        }
    }
    (found, out)
}

/// The sense once the particles are known ("switch … off", "pull … open", "throw … at").
fn refine_sense(sense: Sense, verb: &str, particles: &[String], rest: &[Tok]) -> Sense {
    let has = |p: &str| particles.iter().any(|x| x == p) || verb.ends_with(&format!(" {p}"));
    let object_words: Vec<&str> = rest.iter().map(|t| t.w.as_str()).collect();
    let plugged = object_words.iter().any(|w| {
        matches!(
            *w,
            "plug" | "charger" | "cable" | "cord" | "adapter" | "adaptor" | "lead" | "usb"
        )
    });
    let first = verb.split(' ').next().unwrap_or(verb);
    match sense {
        // "leave the binder on the counter": where it is to stay is a place to put it;
        // "leave the drawer open", "leave the cup on the table alone" rule it out
        Sense::Leave
            if !object_words.contains(&"alone")
                && rest.windows(2).any(|w| {
                    matches!(w[0].w.as_str(), "on" | "onto" | "in" | "into" | "inside")
                        && find(DETERMINERS, &w[1].w).is_some()
                }) =>
        {
            Sense::Put
        }
        Sense::Push
        | Sense::Pull
        | Sense::Act(Verb::Close, None)
        | Sense::Act(Verb::Open, None)
        | Sense::Act(Verb::TurnOn, Some(ActionKind::Press)) => {
            if has("on") || first == "power" && has("up") {
                Sense::Act(Verb::TurnOn, None)
            } else if has("off")
                || first == "power" && has("down")
                || first == "shut" && has("down")
            {
                Sense::Act(Verb::TurnOff, None)
            } else if has("open") {
                Sense::Act(Verb::Open, None)
            } else if has("shut") || has("closed") {
                Sense::Act(Verb::Close, None)
            } else if sense == Sense::Pull {
                if plugged {
                    Sense::Act(Verb::PickUp, Some(ActionKind::Unplug))
                } else if has("out") {
                    Sense::Act(Verb::PickUp, Some(ActionKind::PullOut))
                } else {
                    Sense::Act(Verb::Open, None)
                }
            } else if sense == Sense::Push && first == "push" && !pressable(&object_words) {
                // pushing an object around is not a skill
                Sense::Unsupported
            } else if sense == Sense::Push && matches!(first, "push" | "flip") {
                Sense::Act(Verb::TurnOn, Some(ActionKind::Press))
            } else if sense == Sense::Push && first == "slide" {
                Sense::Act(Verb::Open, None)
            } else {
                sense
            }
        }
        Sense::Harm if first == "throw" && !object_words.contains(&"at") => Sense::Put,
        Sense::Put
            if matches!(first, "toss" | "drop" | "stick" | "put")
                && object_words.contains(&"at") =>
        {
            Sense::Harm
        }
        Sense::Carry if has("out") && !object_words.contains(&"to") => {
            Sense::Act(Verb::PickUp, None)
        }
        s => s,
    }
}

/// Whether the words name something one presses (a button, a switch, a bell, a key).
fn pressable(words: &[&str]) -> bool {
    words.iter().any(|w| {
        matches!(
            tokens::singular(w).as_str(),
            "button"
                | "key"
                | "switch"
                | "bell"
                | "doorbell"
                | "buzzer"
                | "bar"
                | "keyboard"
                | "keypad"
                | "pedal"
                | "trigger"
                | "plunger"
                | "remote"
                | "lever"
                | "knob"
                | "dial"
                | "toggle"
                | "touchpad"
                | "screen"
        )
    })
}

/// A word no goal holds: put before the place's preposition when the clause says
/// where the place starts ("the towel on the floor goes | in the hamper").
const PLACE_MARK: &str = "\u{1}place";

/// Splits a put/carry conjunct into the object's words and where it goes.
fn split_place(c: &[Tok], sense: Sense) -> (&[Tok], Option<(Preposition, &[Tok])>) {
    if let Some(m) = c.iter().position(|t| t.w == PLACE_MARK) {
        let (object, place) = (&c[..m], &c[m + 1..]);
        let k = usize::from(place.first().is_some_and(|t| t.is("back")));
        let prep = match place.get(k).map(|t| t.w.as_str()) {
            Some("in" | "into" | "inside") => Preposition::In,
            _ => Preposition::On,
        };
        return (object, Some((prep, place.get(k + 1..).unwrap_or_default())));
    }
    let mut k = 0;
    let mut relative = false;
    while k < c.len() {
        let w = c[k].w.as_str();
        // "the glass that is not empty on the coaster": a state said of the object
        // closes its relative clause at once; only a relation word keeps it open
        if let Some(end) = state_clause_end(c, k) {
            k = end;
            continue;
        }
        let relative_word = find(OBJECT_RELATION_WORDS, w).is_some()
            || matches!(w, "furthest" | "farthest")
            || matches!(w, "that" | "which")
                && c.get(k + 1).is_some_and(|t| {
                    matches!(t.w.as_str(), "is" | "are" | "was" | "sits" | "lies")
                });
        if relative_word {
            relative = true;
            k += 1;
            continue;
        }
        // "something to drink from in the tray": the purpose names the object
        if let Some(end) = phrase::purpose_clause_end(c, k, &c[..k]) {
            k = end;
            continue;
        }
        // relations and side words that belong to the object
        let multi = [
            "next to",
            "close to",
            "closest to",
            "nearest to",
            "right next to",
            "in front of",
            "to the left of",
            "to the right of",
            "on the left of",
            "on the right of",
            "out of",
        ];
        if let Some(m) = multi.iter().find(|m| starts(c, k, m)) {
            relative = true;
            k += m.split(' ').count();
            continue;
        }
        if matches!(w, "on" | "in" | "at")
            && starts(c, k + 1, "the")
            && c.get(k + 2)
                .is_some_and(|t| SIDES.iter().any(|(s, _)| *s == t.w))
            && c.get(k + 3).is_none_or(|t| {
                matches!(
                    t.w.as_str(),
                    "in" | "on"
                        | "into"
                        | "onto"
                        | "inside"
                        | "to"
                        | "side"
                        | "end"
                        | "one"
                        | "and"
                )
            })
        {
            k += 3;
            continue;
        }
        let prep = match w {
            "into" => Some(Preposition::In),
            "inside" | "in" | "within" if sense == Sense::Put => Some(Preposition::In),
            // "take the box on the shelf": for a carry only "to" says where it goes
            "in" | "inside" | "within" | "on" | "upon" if sense == Sense::Carry => None,
            "onto" | "on" | "upon" => Some(Preposition::On),
            "to" if sense == Sense::Carry || sense == Sense::Put => Some(Preposition::On),
            _ => None,
        };
        if let Some(prep) = prep {
            if relative && !matches!(w, "into" | "onto" | "to") && !relative_closed(c, k) {
                relative = false;
                k += 1;
                continue;
            }
            let mut j = k + 1;
            let mut prep = prep;
            if starts(c, j, "top of") {
                j += 2;
            }
            if c[k..].first().is_some_and(|t| t.is("inside"))
                && c.get(j).is_some_and(|t| t.is("of"))
            {
                j += 1;
            }
            if starts(c, k, "into") {
                prep = Preposition::In;
            }
            return (&c[..k], Some((prep, &c[j..])));
        }
        k += 1;
    }
    (c, None)
}

/// Where a relative clause that says a state ends: "that is not empty", "which isn't
/// open", "that's neither red nor blue" end before the next preposition, "and" or mark;
/// `None` unless `c[k..]` is "that"/"which" and a form of "be" followed by such a state
/// (not by a relation: "that is on the table", "that's sitting by the sink").
fn state_clause_end(c: &[Tok], k: usize) -> Option<usize> {
    let opens = c.get(k).is_some_and(|t| t.is("that") || t.is("which"))
        && c.get(k + 1)
            .is_some_and(|t| matches!(t.w.as_str(), "is" | "are" | "was" | "were"));
    if !opens {
        return None;
    }
    let mut j = k + 2;
    while c
        .get(j)
        .is_some_and(|t| matches!(t.w.as_str(), "not" | "neither" | "either"))
    {
        j += 1;
    }
    let first = c.get(j)?;
    let relation_like = |t: &Tok| {
        find(OBJECT_RELATION_WORDS, &t.w).is_some()
            || find(RELATIVE, &t.w).is_some()
            || find(DETERMINERS, &t.w).is_some()
            || PLACE_PREPOSITIONS.contains(&t.w.as_str())
    };
    if relation_like(first) || first.is_mark() {
        return None;
    }
    let end = (j..c.len())
        .find(|&q| relation_like(&c[q]) || c[q].is_mark() || c[q].is("and"))
        .unwrap_or(c.len());
    // "that is closest to the bowl", "that's adjacent to the sink": a word tied to what
    // follows by "to", "of" or "from" says where the object is, unless it is ruled out
    let negated = j > k + 2;
    let tied = c
        .get(end)
        .is_some_and(|t| matches!(t.w.as_str(), "to" | "of" | "from" | "with"));
    let superlative = matches!(
        first.w.as_str(),
        "closest" | "nearest" | "furthest" | "farthest" | "close" | "right" | "left"
    );
    (negated || !tied && !superlative).then_some(end)
}

/// Whether the relative clause before `k` ("the book that is on the table") is over by
/// the time `c[k]` comes: it is when a noun phrase has followed it.
fn relative_closed(c: &[Tok], k: usize) -> bool {
    // a determiner seen after the last relative word means its noun phrase came
    let last_rel = c[..k].iter().rposition(|t| {
        find(OBJECT_RELATION_WORDS, &t.w).is_some()
            || matches!(t.w.as_str(), "that" | "which" | "to" | "of")
    });
    last_rel.is_some_and(|r| {
        c[r + 1..k]
            .iter()
            .any(|t| find(DETERMINERS, &t.w).is_some())
            && c[r].w != "that"
            && c[r].w != "which"
    })
}

/// What the goal has said so far.
#[derive(Debug, Default)]
struct Discourse {
    steps: Vec<StepSpec>,
    /// Objects named, in order (steps' objects and locations, mentions, exclusions).
    objects: Vec<ObjectRef>,
    /// The index of a step made by "I need X", replaced by a later verb acting on it.
    want: Option<usize>,
    /// A noun phrase said before any verb ("the remote by the lamp, …").
    pending: Option<ObjectRef>,
    /// Ruled-out descriptions not yet applied to an object.
    exclusions: Vec<Phrase>,
    /// The room a "go to the kitchen" set.
    room: Option<String>,
    /// Where a "go to …" before any other step said to go.
    destination: Option<Destination>,
    last_act: Option<(Sense, String)>,
    unknown_verbs: Vec<String>,
    unplaced: Vec<String>,
    notes: Vec<String>,
    ask: Option<(String, VerbMatch)>,
    /// Relation words read by meaning below the margin to act on.
    ask_relation: Option<RelationGuess>,
}

impl Discourse {
    /// Takes what a parsed phrase could not place and the relations it read by meaning.
    fn absorb(&mut self, p: &Phrase) {
        self.unplaced.extend(p.unplaced.iter().cloned());
        for g in &p.relations_by_meaning {
            if g.matched.sure() {
                self.notes.push(format!(
                    "{:?} read as {:?} (like {:?}: similarity {:.2}, margin {:.2})",
                    g.words,
                    g.matched.kind,
                    g.matched.prototype,
                    g.matched.similarity,
                    g.matched.margin
                ));
            } else if self.ask_relation.is_none() {
                self.ask_relation = Some(g.clone());
            }
        }
    }

    /// The object a phrase names, with pronouns, "one" and "other" resolved and the
    /// rulings-out applied. `not` is an object the phrase must not resolve to (a
    /// location is never the object placed).
    fn resolve(&mut self, p: &Phrase, not: Option<&ObjectRef>) -> Result<ObjectRef, String> {
        let antecedent = |objects: &[ObjectRef], pending: &Option<ObjectRef>| {
            pending.clone().or_else(|| {
                objects
                    .iter()
                    .rev()
                    .find(|o| Some(*o) != not && !o.name.is_empty())
                    .cloned()
            })
        };
        let mut obj = if p.pronoun {
            // "put it on the desk, then power it on": the thing acted on, not where
            let acted = match not {
                None => self
                    .pending
                    .clone()
                    .or_else(|| self.last_acted().map(|s| s.object.clone())),
                Some(_) => None,
            };
            let mut o = acted
                .or_else(|| antecedent(&self.objects, &self.pending))
                .ok_or_else(|| "nothing was named before that \"it\" could stand for".to_owned())?;
            if let Some(rel) = &p.obj.relation {
                o.relation = Some(rel.clone());
            }
            o
        } else {
            let mut o = p.obj.clone();
            if p.one || o.name.is_empty() {
                let ante = antecedent(&self.objects, &self.pending)
                    .ok_or_else(|| "the goal names no object".to_owned())?;
                o.name = ante.name;
            }
            if p.other {
                let same = self
                    .objects
                    .iter()
                    .rev()
                    .find(|x| x.name == o.name && !x.attributes.is_empty());
                if let Some(same) = same {
                    for a in &same.attributes {
                        if !o.excluded.contains(a) {
                            o.excluded.push(a.clone());
                        }
                    }
                }
            }
            if o.room.is_none() {
                o.room.clone_from(&self.room);
            }
            o
        };
        if obj.name.is_empty() {
            return Err("the goal names no object".to_owned());
        }
        // "it" in a relation: the object named before
        if let Some(rel) = obj.relation.as_mut()
            && rel.anchor.as_ref().is_some_and(|a| a.name == "it")
        {
            rel.anchor = self.objects.last().cloned();
        }
        let pending = std::mem::take(&mut self.exclusions);
        for ex in pending {
            apply_exclusion(&mut obj, &ex);
        }
        self.pending = None;
        Ok(obj)
    }

    /// The last step that acted on a thing (a drive to a room is none: "it" after "go to
    /// the kitchen" is what came before).
    fn last_acted(&self) -> Option<&StepSpec> {
        self.steps.iter().rev().find(|s| !s.is_room_drive())
    }

    fn push(&mut self, s: StepSpec) {
        // "I need four eggs, bring them over": the later verb acts on the wanted object
        if let Some(w) = self.want.take()
            && self.steps.get(w).is_some_and(|ws| ws.object == s.object)
            && s.verb == Verb::PickUp
        {
            self.steps.remove(w);
        }
        self.objects.push(s.object.clone());
        if let Some(l) = &s.location {
            self.objects.push(l.clone());
        }
        self.steps.push(s);
    }

    fn push_want(&mut self, obj: ObjectRef, part: Option<String>) {
        self.push(StepSpec {
            part,
            ..step(Verb::PickUp, obj)
        });
        self.want = Some(self.steps.len() - 1);
    }

    fn mention(&mut self, p: Phrase) {
        let mut o = p.obj;
        if o.name.is_empty() {
            return;
        }
        for ex in std::mem::take(&mut self.exclusions) {
            apply_exclusion(&mut o, &ex);
        }
        self.objects.push(o.clone());
        self.pending = Some(o);
    }

    /// Rules a description out: of the last object when it matches, else of the next.
    fn exclude(&mut self, p: Phrase) {
        if !p.obj.name.is_empty() {
            self.objects.push(p.obj.clone());
        }
        let target = self
            .last_acted()
            .map(|s| s.object.clone())
            .or_else(|| self.pending.clone());
        match target {
            Some(t) if matches_exclusion(&t, &p) => {
                let mut updated = t.clone();
                apply_exclusion(&mut updated, &p);
                self.replace_object(&t, &updated);
                if self.pending.as_ref() == Some(&t) {
                    self.pending = Some(updated);
                }
            }
            _ => self.exclusions.push(p),
        }
    }

    /// "any one except the chipped one", "but the black one": more about the last
    /// object.
    fn refine(&mut self, p: &Phrase) {
        let Some(t) = self
            .last_acted()
            .map(|s| s.object.clone())
            .or_else(|| self.pending.clone())
        else {
            return;
        };
        let mut updated = t.clone();
        for a in &p.obj.attributes {
            if !updated.attributes.contains(a) {
                updated.attributes.push(a.clone());
            }
        }
        for a in &p.obj.excluded {
            if !updated.excluded.contains(a) {
                updated.excluded.push(a.clone());
            }
        }
        self.replace_object(&t, &updated);
        if self.pending.as_ref() == Some(&t) {
            self.pending = Some(updated);
        }
    }

    fn replace_object(&mut self, old: &ObjectRef, new: &ObjectRef) {
        for s in &mut self.steps {
            if &s.object == old {
                s.object = new.clone();
            }
        }
        for o in &mut self.objects {
            if o == old {
                *o = new.clone();
            }
        }
    }

    /// The last object named that is not `obj` (where "put the bowl in" puts it).
    fn last_other(&self, obj: &ObjectRef) -> Option<ObjectRef> {
        self.objects.iter().rev().find(|o| *o != obj).cloned()
    }

    fn finish(mut self, toks: &[Tok]) -> Understanding {
        // "go to the sofa" alone: the goal is to be there
        if self.steps.is_empty() {
            match self.destination.take() {
                Some(Destination::Thing(obj)) => self.steps.push(step(Verb::GoTo, obj)),
                // "go to the kitchen": to the room, found by what the memory saw in it
                Some(Destination::Room { room, storey }) => self
                    .steps
                    .push(step(Verb::GoTo, ObjectRef::room_itself(room, storey))),
                Some(Destination::Storey(storey)) => {
                    return refuse(
                        RefusalClass::Unsupported,
                        format!(
                            "the robot goes to things, not to storeys: say what to go to there ({storey}), e.g. \"go to the sofa upstairs\""
                        ),
                    );
                }
                Some(Destination::Person) => {
                    return refuse(
                        RefusalClass::Unsupported,
                        "the robot goes to things, not to people: name a place to go to",
                    );
                }
                None => {}
            }
        }
        if let Some(reason) = hazard(toks, &self.steps) {
            return refuse(RefusalClass::Unsafe, reason);
        }
        if self.steps.is_empty() {
            let mut reason = "nothing in the goal asks for an action".to_owned();
            if !self.unknown_verbs.is_empty() {
                reason = format!(
                    "no known verb: could not place {}",
                    self.unknown_verbs
                        .iter()
                        .map(|w| format!("{w:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            return refuse(RefusalClass::NoVerb, reason);
        }
        let steps = add_implied(std::mem::take(&mut self.steps));
        if let Some((word, m)) = self.ask {
            return Understanding::AskBack {
                question: format!(
                    "did you mean \"{}\" by {word:?}? (similarity {:.2}, margin {:.2} over another action)",
                    m.prototype, m.similarity, m.margin
                ),
                guess: steps,
                confidence: m.margin,
            };
        }
        if let Some(g) = self.ask_relation {
            return Understanding::AskBack {
                question: format!(
                    "did you mean \"{}\" by {:?}? (similarity {:.2}, margin {:.2} over another relation)",
                    g.matched.prototype, g.words, g.matched.similarity, g.matched.margin
                ),
                guess: steps,
                confidence: g.matched.margin,
            };
        }
        let mut notes = self.notes;
        if !self.unplaced.is_empty() {
            notes.push(format!("words not placed: {}", self.unplaced.join(" ")));
        }
        if !self.unknown_verbs.is_empty() {
            notes.push(format!(
                "clauses without a known verb skipped: {}",
                self.unknown_verbs.join(", ")
            ));
        }
        Understanding::Plan { steps, notes }
    }
}

fn matches_exclusion(target: &ObjectRef, ex: &Phrase) -> bool {
    ex.one || ex.obj.name.is_empty() || ex.obj.name == target.name
}

fn apply_exclusion(obj: &mut ObjectRef, ex: &Phrase) {
    if !matches_exclusion(obj, ex) {
        return;
    }
    for a in &ex.obj.attributes {
        if !obj.excluded.contains(a) && !obj.attributes.contains(a) {
            obj.excluded.push(a.clone());
        }
    }
}

fn head(name: &str) -> &str {
    name.rsplit(' ').next().unwrap_or(name)
}

/// Why the goal must be refused as unsafe, if it must.
fn hazard(toks: &[Tok], steps: &[StepSpec]) -> Option<String> {
    for (k, t) in toks.iter().enumerate() {
        if FIRE.contains(&t.w.as_str()) {
            let next = toks.get(k + 1).map(|n| n.w.as_str());
            let safe = t.is("fire")
                && matches!(
                    next,
                    Some(
                        "up" | "extinguisher"
                            | "alarm"
                            | "door"
                            | "exit"
                            | "station"
                            | "blanket"
                            | "escape"
                    )
                )
                || t.is("torch") && !toks.iter().any(|x| x.is("lit") || x.is("light"));
            if !safe {
                return Some(format!("{:?}: the goal brings a flame to something", t.w));
            }
        }
        if t.is("at")
            && toks
                .get(k + 1..)
                .is_some_and(|r| r.iter().take(3).any(|x| LIVING.contains(&x.w.as_str())))
        {
            return Some("the goal aims something at someone".to_owned());
        }
    }
    for s in steps {
        let obj = head(&s.object.name);
        if LIVING.contains(&obj) && !matches!(s.verb, Verb::Place | Verb::PickUp | Verb::GoTo) {
            return Some(format!("{:?} is alive", s.object.name));
        }
        if LIVING.contains(&obj) && s.action == Some(ActionKind::Press) {
            return Some(format!("{:?} is alive", s.object.name));
        }
        if let Some(loc) = &s.location {
            let l = loc.name.as_str();
            if LIVING.contains(&obj) && (ENCLOSURES.contains(&head(l)) || ENCLOSURES.contains(&l)) {
                return Some(format!(
                    "putting the {} in the {l} would harm it",
                    s.object.name
                ));
            }
            if CONDUCTORS.contains(&obj) && LIVE.iter().any(|x| l.ends_with(x)) {
                return Some(format!("metal in the {l} is an electric shock"));
            }
        }
    }
    None
}

/// Adds the implied steps: pick up before a place unless just picked up; open a closed
/// receptacle before placing in it (before the pick-up: opening needs an empty
/// gripper) or taking out of it.
fn add_implied(steps: Vec<StepSpec>) -> Vec<StepSpec> {
    let mut out: Vec<StepSpec> = Vec::new();
    let mut holding: Option<(ObjectRef, usize)> = None;
    let mut opened: Vec<(ObjectRef, Option<String>)> = Vec::new();
    let openable =
        |o: &ObjectRef, part: Option<&str>| is_openable(&o.name) || part.is_some_and(is_openable);
    for s in steps {
        match s.verb {
            Verb::PickUp => {
                if let Some(rel) = &s.object.relation
                    && rel.kind == RelationKind::In
                    && let Some(a) = &rel.anchor
                    && openable(a, None)
                    && !opened.iter().any(|(o, p)| o == a && p.is_none())
                {
                    let mut open = step(Verb::Open, a.clone());
                    open.implied = true;
                    out.push(open);
                    opened.push((a.clone(), None));
                }
                holding = Some((s.object.clone(), out.len()));
                out.push(s);
            }
            Verb::Place => {
                let pick_at = match &holding {
                    Some((o, i)) if *o == s.object => Some(*i),
                    _ => None,
                };
                if s.preposition == Some(Preposition::In)
                    && let Some(loc) = &s.location
                    && openable(loc, s.location_part.as_deref())
                    && !opened
                        .iter()
                        .any(|(o, p)| o == loc && *p == s.location_part)
                {
                    let mut open = step(Verb::Open, loc.clone());
                    open.part.clone_from(&s.location_part);
                    open.implied = true;
                    let at = pick_at.unwrap_or(out.len());
                    out.insert(at, open);
                    opened.push((loc.clone(), s.location_part.clone()));
                }
                if pick_at.is_none() {
                    let mut pick = step(Verb::PickUp, s.object.clone());
                    pick.implied = true;
                    out.push(pick);
                }
                holding = None;
                out.push(s);
            }
            Verb::Open => {
                opened.push((s.object.clone(), s.part.clone()));
                out.push(s);
            }
            Verb::Close => {
                opened.retain(|(o, p)| !(o == &s.object && *p == s.part));
                out.push(s);
            }
            _ => out.push(s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::corpus::{Ordinal, Side};

    fn plan(goal: &str) -> Vec<StepSpec> {
        match GoalGrammar::lexical().understand(goal) {
            Understanding::Plan { steps, .. } => steps,
            other => panic!("{goal:?}: {other:?}"),
        }
    }

    fn refusal(goal: &str) -> (RefusalClass, String) {
        match GoalGrammar::lexical().understand(goal) {
            Understanding::Refused { class, reason } => (class, reason),
            other => panic!("{goal:?} was not refused: {other:?}"),
        }
    }

    fn shown(steps: &[StepSpec]) -> Vec<String> {
        steps
            .iter()
            .map(|s| {
                let mut t = format!("{} {}", s.verb.as_str(), s.object.name);
                if let Some(l) = &s.location {
                    t.push_str(&format!(" -> {}", l.name));
                }
                if s.implied {
                    t.push_str(" (implied)");
                }
                t
            })
            .collect()
    }

    #[test]
    fn polite_wrappers_and_split_particles_leave_the_verb() {
        for goal in [
            "could you grab the stapler?",
            "would you mind picking the stapler up",
            "I'd really appreciate it if you could fetch the stapler",
            "hey robot, when you get a chance, get me the stapler please",
        ] {
            assert_eq!(shown(&plan(goal)), ["pick_up stapler"], "{goal}");
        }
        assert_eq!(shown(&plan("switch the radio off")), ["turn_off radio"]);
        assert_eq!(shown(&plan("slide the drawer shut")), ["close drawer"]);
        assert_eq!(shown(&plan("I need the scissors")), ["pick_up scissors"]);
    }

    #[test]
    fn a_generalised_reference_keeps_what_it_is_for_and_what_it_is_of() {
        assert_eq!(
            shown(&plan("put something to drink from in the tray")),
            [
                "pick_up something to drink from (implied)",
                "place something to drink from -> tray"
            ]
        );
        assert_eq!(
            shown(&plan("hand me something to write with")),
            ["pick_up something to write with"]
        );
        // the purpose ends where a place begins
        assert_eq!(
            shown(&plan("bring me something to eat to the kitchen table")),
            [
                "pick_up something to eat",
                "place something to eat -> kitchen table"
            ]
        );
        // "to" before a place or after a thing is not a purpose
        assert_eq!(
            shown(&plan("move the cup to the tray")),
            ["pick_up cup (implied)", "place cup -> tray"]
        );
        let s = &plan("put a piece of green fruit in the basket")[0];
        assert_eq!(s.object.name, "fruit");
        assert_eq!(s.object.attributes, ["green"]);
        assert_eq!(
            plan("put some kind of container on the table")[0]
                .object
                .name,
            "container"
        );
    }

    #[test]
    fn the_object_is_its_own_words_and_the_rest_are_filters() {
        let s = &plan("pick up the second small red cup from the left in the kitchen")[0];
        assert_eq!(s.object.name, "cup");
        assert_eq!(s.object.attributes, ["small", "red"]);
        assert_eq!(
            s.object.ordinal,
            Some(Ordinal {
                n: 2,
                from: Some(Side::Left)
            })
        );
        assert_eq!(s.object.room.as_deref(), Some("kitchen"));
        let s = &plan("grab the egg that's closest to the big tomato")[0];
        let rel = s.object.relation.as_ref().unwrap();
        assert_eq!(rel.kind, RelationKind::Nearest);
        assert_eq!(rel.anchor.as_ref().unwrap().name, "tomato");
        assert_eq!(rel.anchor.as_ref().unwrap().attributes, ["large"]);
        let s = &plan("take the cup between the plate and the bowl")[0];
        let rel = s.object.relation.as_ref().unwrap();
        assert_eq!(rel.kind, RelationKind::Between);
        assert_eq!(rel.anchor2.as_ref().unwrap().name, "bowl");
        // a part with its owner, either way round
        for goal in [
            "open the top drawer of the desk",
            "open the desk's top drawer",
        ] {
            let s = &plan(goal)[0];
            assert_eq!(
                (s.object.name.as_str(), s.part.as_deref()),
                ("desk", Some("top drawer"))
            );
        }
        // after a thing, a part no list knows is still its part
        let s = &plan("pick up the teapot's infuser")[0];
        assert_eq!(
            (s.object.name.as_str(), s.part.as_deref()),
            ("teapot", Some("infuser"))
        );
        // not a part after 's: a capitalised word names the thing (a product name kept
        // whole for grounding), someone who owns things only owns it, even a word that
        // can be a part
        let s = &plan("pick up the Rubik's cube")[0];
        assert_eq!(
            (s.object.name.as_str(), s.part.as_deref()),
            ("rubik's cube", None)
        );
        for (goal, thing) in [
            ("bring me grandma's teapot", "teapot"),
            ("bring me the dog's bowl", "bowl"),
            ("hand me my sister's keys", "key"),
        ] {
            let s = &plan(goal)[0];
            assert_eq!((s.object.name.as_str(), s.part.as_deref()), (thing, None));
        }
        let s = &plan("pick up the mug's handle")[0];
        assert_eq!(
            (s.object.name.as_str(), s.part.as_deref()),
            ("mug", Some("handle"))
        );
        // a part without one is the object, picked by position
        let s = &plan("open the top drawer")[0];
        assert_eq!(s.object.name, "drawer");
        assert_eq!(s.object.ordinal.unwrap().from, Some(Side::Top));
        // counts are singular names
        let s = &plan("fetch three soda cans")[0];
        assert_eq!(
            (s.object.name.as_str(), s.object.count),
            ("soda can", Some(3))
        );
    }

    #[test]
    fn clauses_pronouns_and_implied_steps() {
        assert_eq!(
            shown(&plan(
                "take the milk out of the fridge and put it in the cabinet"
            )),
            [
                "open fridge (implied)",
                "open cabinet (implied)",
                "pick_up milk",
                "place milk -> cabinet"
            ]
        );
        assert_eq!(
            shown(&plan(
                "open the microwave, put the bowl in, then close the microwave and start it"
            )),
            [
                "open microwave",
                "pick_up bowl (implied)",
                "place bowl -> microwave",
                "close microwave",
                "turn_on microwave"
            ]
        );
        assert_eq!(
            shown(&plan("turn on the printer, then the monitor")),
            ["turn_on printer", "turn_on monitor"]
        );
        assert_eq!(
            shown(&plan(
                "put the pen in the cup and the notebook on the shelf"
            )),
            [
                "pick_up pen (implied)",
                "place pen -> cup",
                "pick_up notebook (implied)",
                "place notebook -> shelf"
            ]
        );
        // said before the request, named by "it" in it
        assert_eq!(
            shown(&plan("the remote by the lamp, could you grab it")),
            ["pick_up remote"]
        );
        // "go to the kitchen" is where the next object is
        assert_eq!(
            plan("go to the kitchen and get me the mug")[0]
                .object
                .room
                .as_deref(),
            Some("kitchen")
        );
    }

    #[test]
    fn ruling_out() {
        let s = &plan("grab the mug, not the red one")[0];
        assert_eq!(s.object.excluded, ["red"]);
        let s = &plan("I don't want the big mug, get me the small one")[0];
        assert_eq!(
            (s.object.name.as_str(), s.object.attributes.as_slice()),
            ("mug", &["small".to_owned()][..])
        );
        assert_eq!(s.object.excluded, ["large"]);
        let steps = plan("put the red mug on the shelf and the other mug in the sink");
        assert_eq!(steps[3].object.excluded, ["red"]);
        let s = &plan("fetch a non-metal bowl")[0];
        assert_eq!(s.object.excluded, ["metal"]);
        // a different object ruled out changes nothing
        assert_eq!(
            shown(&plan("switch off the fan, not the heater")),
            ["turn_off fan"]
        );
        // "other than", "avoid …", and a verb no list knows after "don't"
        let s = &plan("bring me a towel other than the wet one")[0];
        assert_eq!(
            (s.object.name.as_str(), s.object.excluded.as_slice()),
            ("towel", &["wet".to_owned()][..])
        );
        for goal in [
            "avoid the blue box and grab the yellow one",
            "don't touch the blue box, pick up the yellow one instead",
            "ignore the blue box, take the yellow one",
        ] {
            let s = &plan(goal)[0];
            assert_eq!(s.object.name, "box", "{goal}");
            assert_eq!(s.object.attributes, ["yellow"], "{goal}");
            assert_eq!(s.object.excluded, ["blue"], "{goal}");
        }
    }

    #[test]
    fn going_somewhere_is_a_step_of_its_own_and_sets_the_scene_for_what_follows() {
        // alone: the goal is to be there, with the words that say which one and where
        for (goal, shows) in [
            ("go to the sofa", "go_to sofa"),
            ("please drive over to the red chair", "go_to chair"),
            (
                "could you navigate to the bookshelf next to the window?",
                "go_to bookshelf",
            ),
            ("walk up to the front door", "go_to front door"),
            ("return to the charging dock", "go_to charging dock"),
            ("go to the cat", "go_to cat"),
        ] {
            assert_eq!(shown(&plan(goal)), [shows], "{goal}");
        }
        let s = &plan("head back to the desk in the office")[0];
        assert_eq!(
            (s.verb, s.object.room.as_deref()),
            (Verb::GoTo, Some("office"))
        );
        for goal in [
            "go to the coffee table upstairs",
            "go upstairs to the coffee table",
        ] {
            let s = &plan(goal)[0];
            assert_eq!(s.object.name, "coffee table", "{goal}");
            assert_eq!(s.object.storey, Some(asp_core::Storey::Above), "{goal}");
        }
        // after another step: going there is a step too
        assert_eq!(
            shown(&plan("pick up the cup and go to the table")),
            ["pick_up cup", "go_to table"]
        );
        // before one: where it happens, as before
        let s = &plan("go to the kitchen and get me the mug")[0];
        assert_eq!(
            (s.verb, s.object.room.as_deref()),
            (Verb::PickUp, Some("kitchen"))
        );
        assert_eq!(
            shown(&plan("go to the fridge and open it")),
            ["open fridge"]
        );
        // a motion verb with an object or a verb after it is not a drive
        assert_eq!(shown(&plan("go to get the cup")), ["pick_up cup"]);
        assert_eq!(
            shown(&plan("move the cup to the table")),
            ["pick_up cup (implied)", "place cup -> table"]
        );
        assert_eq!(
            shown(&plan("go ahead and put the apple in the bowl")),
            ["pick_up apple (implied)", "place apple -> bowl"]
        );
        // a storey or a person alone: refused, saying what to say instead
        for (goal, says) in [
            ("go upstairs", "go to the sofa upstairs"),
            ("go to the second floor", "floor 2"),
            ("come here", "name a place to go to"),
            ("come over to me", "name a place to go to"),
        ] {
            let (class, reason) = refusal(goal);
            assert_eq!(class, RefusalClass::Unsupported, "{goal}");
            assert!(reason.contains(says), "{goal}: {reason}");
        }
        // with a request it is only who wants it
        assert_eq!(shown(&plan("come here and grab the mug")), ["pick_up mug"]);
    }

    #[test]
    fn a_room_alone_is_a_drive_to_the_room() {
        let subtasks = |goal: &str| subtasks::subtasks(&plan(goal)).unwrap().0;
        for goal in [
            "go to the kitchen",
            "please head over to the kitchen",
            "take me to the kitchen",
            "could you drive into the kitchen?",
        ] {
            let steps = subtasks(goal);
            assert_eq!(steps.len(), 1, "{goal}: {steps:?}");
            assert_eq!(steps[0].room_drive(), Some("kitchen"), "{goal}: {steps:?}");
            assert_eq!(steps[0].to_string(), "go to the kitchen");
        }
        // the storey said with it is kept
        let s = &plan("go to the office upstairs")[0];
        assert_eq!(
            (s.verb, s.object.room.as_deref(), s.object.storey),
            (Verb::GoTo, Some("office"), Some(asp_core::Storey::Above))
        );
        // after another step it is a step too, and the room of what follows
        let steps = subtasks("pick up the cup, go to the kitchen and put it in the sink");
        let drives: Vec<_> = steps
            .iter()
            .map(crate::planner::Subtask::room_drive)
            .collect();
        assert_eq!(drives, [None, Some("kitchen"), None], "{steps:?}");
        assert_eq!(steps[2].location_room.as_deref(), Some("kitchen"));
        assert_eq!(steps[2].object, "cup", "\"it\" is still the cup: {steps:?}");
        assert_eq!(
            shown(&plan(
                "grab the mug, go to the office and bring it to the desk"
            )),
            ["pick_up mug", "go_to office", "place mug -> desk"]
        );
        // before a request only where it happens; a thing in a room is no room drive
        assert!(
            subtasks("go to the kitchen and get me the mug")
                .iter()
                .all(|s| s.room_drive().is_none())
        );
        let steps = subtasks("go to the table in the kitchen");
        assert_eq!((steps[0].verb, steps[0].room_drive()), (Verb::GoTo, None));
        assert_eq!(steps[0].room.as_deref(), Some("kitchen"));
    }

    #[test]
    fn other_ways_of_saying_go_there_are_drives_too() {
        for (goal, shows) in [
            // a person or "the way" between the verb and the place
            ("take me to the coffee table", "go_to coffee table"),
            ("lead the way to the sofa", "go_to sofa"),
            ("please guide us to the front door", "go_to front door"),
            ("could you make your way to the bed?", "go_to bed"),
            (
                "position yourself in front of the bookshelf",
                "go_to bookshelf",
            ),
            // standing somewhere
            ("park next to the dining table", "go_to dining table"),
            ("go and stand by the window", "go_to window"),
            ("wait right by the door", "go_to door"),
            ("drive next to the sofa", "go_to sofa"),
            // the place as its object
            ("approach the bookshelf", "go_to bookshelf"),
            // the place pointed at by what is there
            ("go back to where the mug is", "go_to mug"),
            ("head to where you last saw the keys", "go_to key"),
            (
                "go to where the red bottle was this morning",
                "go_to bottle",
            ),
        ] {
            assert_eq!(shown(&plan(goal)), [shows], "{goal}");
        }
        // those verbs with an object, or with nothing after them, are not drives
        assert_eq!(shown(&plan("take the cup")), ["pick_up cup"]);
        for goal in [
            "move the cup next to the sofa",
            "stand the bottle up on the table",
            "wait",
            "stop the fan",
        ] {
            let u = GoalGrammar::lexical().understand(goal);
            assert!(
                !matches!(&u, Understanding::Plan { steps, .. } if steps.iter().any(|s| s.verb == Verb::GoTo)),
                "{goal}: {u:?}"
            );
        }
    }

    #[test]
    fn particles_after_me_and_where_to_without_a_place() {
        for (goal, shows) in [
            ("hand me back the pen", "pick_up pen"),
            ("pass me over the salt", "pick_up salt"),
            ("carry the box upstairs", "pick_up box"),
        ] {
            assert_eq!(shown(&plan(goal)), [shows], "{goal}");
        }
    }

    #[test]
    fn requests_said_out_of_order_are_put_in_time_order() {
        for goal in [
            "after you close the window, turn on the fan",
            "turn on the fan after you close the window",
            "turn on the fan once you have closed the window",
            "before turning on the fan, close the window",
            "close the window before you turn on the fan",
            "after closing the window, turn on the fan",
        ] {
            assert_eq!(
                shown(&plan(goal)),
                ["close window", "turn_on fan"],
                "{goal}"
            );
        }
        // a third request after them keeps its place
        assert_eq!(
            shown(&plan(
                "after you close the window, turn on the fan, then open the door"
            )),
            ["close window", "turn_on fan", "open door"]
        );
        // "after" that starts no request is left alone
        assert_eq!(plan("grab the cup after the plate").len(), 1);
    }

    #[test]
    fn leaving_something_somewhere_puts_it_there_and_leaving_it_alone_does_not() {
        let steps = plan("leave the red binder on the kitchen counter");
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!(steps[1].object.name, "binder");
        let place = steps[1].location.as_ref().unwrap();
        assert_eq!(
            (place.name.as_str(), place.room.as_deref()),
            ("counter", Some("kitchen"))
        );
        let steps = plan("pick up the cup and leave it in the sink");
        assert_eq!(
            steps.last().unwrap().location.as_ref().unwrap().name,
            "sink"
        );
        // a state to keep, or the object ruled out: nothing is placed
        let steps = plan("close the cabinet but leave the drawer open");
        assert_eq!(steps.len(), 1, "{steps:?}");
        let steps = plan("leave the cup on the table alone and bring me the apple");
        assert!(steps.iter().all(|s| s.location.is_none()), "{steps:?}");
        assert!(steps.iter().all(|s| s.object.name != "cup"), "{steps:?}");
    }

    #[test]
    fn a_wish_with_a_place_puts_it_there_unless_a_request_follows() {
        let steps = plan("I'd like the small tv remote on the reading table");
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert_eq!(steps[1].verb, Verb::Place);
        assert_eq!(steps[1].object.name, "tv remote");
        assert_eq!(steps[1].location.as_ref().unwrap().name, "reading table");
        let steps = plan("I want the apples in the fruit bowl please");
        assert_eq!(steps.last().unwrap().verb, Verb::Place, "{steps:?}");
        // the place tells which one: a need, or a request after the wish
        for goal in [
            "I need the notebook on my desk, could you get it for me?",
            "I'd like the notebook on my desk, could you get it for me?",
            "can I have the cup on the table",
        ] {
            let steps = plan(goal);
            assert_eq!(steps.len(), 1, "{goal}: {steps:?}");
            assert_eq!(steps[0].verb, Verb::PickUp, "{goal}");
            let name = if goal.contains("cup") {
                "cup"
            } else {
                "notebook"
            };
            assert_eq!(steps[0].object.name, name, "{goal}");
            assert!(steps[0].object.relation.is_some(), "{goal}: {steps:?}");
        }
    }

    #[test]
    fn a_ruling_out_inside_a_clause_leaves_the_rest_of_it_alone() {
        // a state clause ends before where the object goes
        for goal in [
            "put the glass that isn't empty on the coaster",
            "put the glass thats not empty on the coaster",
            "put the glass, not the empty one, on the coaster",
        ] {
            let steps = plan(goal);
            assert_eq!(
                shown(&steps),
                ["pick_up glass (implied)", "place glass -> coaster"],
                "{goal}"
            );
            assert_eq!(steps[1].object.excluded, ["empty"], "{goal}");
        }
        // a word before "one" describes it, whether a list knows it or not
        let steps = plan("hang the dry towel, not the damp one, on the hook");
        assert_eq!(steps[1].object.excluded, ["damp"]);
        assert_eq!(
            steps[1].location.as_ref().map(|l| l.name.as_str()),
            Some("hook")
        );
        // neither … nor
        for goal in [
            "get me the mug that's neither white nor black",
            "grab a mug, neither the white one nor the black one",
        ] {
            let s = &plan(goal)[0];
            assert_eq!(s.object.name, "mug", "{goal}");
            assert_eq!(s.object.excluded, ["white", "black"], "{goal}");
        }
        // a relation in a relative clause stays a relation
        let s = &plan("take the orange that's closest to the bowl")[0];
        assert_eq!(
            s.object.relation.as_ref().map(|r| r.kind),
            Some(RelationKind::Nearest)
        );
        let steps = plan("put the book that is on the table in the box");
        assert_eq!(
            steps[0].object.relation.as_ref().map(|r| r.kind),
            Some(RelationKind::On)
        );
        assert_eq!(
            steps[1].location.as_ref().map(|l| l.name.as_str()),
            Some("box")
        );
    }

    #[test]
    fn wants_after_a_modal_and_degrees_of_attributes() {
        for goal in [
            "can I get the salt shaker",
            "please, could I get the salt shaker",
        ] {
            assert_eq!(shown(&plan(goal)), ["pick_up salt shaker"], "{goal}");
        }
        // a comparative of a word the lists know is an attribute; a noun in "-er" is not
        let s = &plan("bring the colder drink")[0];
        assert_eq!(
            (s.object.name.as_str(), s.object.attributes.as_slice()),
            ("drink", &["colder".to_owned()][..])
        );
        for goal in [
            "grab the water bottle",
            "take the dryer sheet",
            "get the charger cable",
        ] {
            assert!(plan(goal)[0].object.attributes.is_empty(), "{goal}");
        }
        assert_eq!(
            phrase::comparative_bases("bigger"),
            ["bigg", "bigge", "big"]
        );
        assert_eq!(phrase::comparative_bases("heaviest"), ["heavy"]);
        assert!(phrase::comparative_bases("dryer").is_empty());
    }

    #[test]
    fn refusals_have_a_class_and_name_what_was_not_understood() {
        assert_eq!(refusal("hello there!").0, RefusalClass::NoVerb);
        assert_eq!(refusal("is the fridge open?").0, RefusalClass::NoVerb);
        let (class, reason) = refusal("blorp the kettle");
        assert_eq!(class, RefusalClass::NoVerb);
        assert!(reason.contains("\"blorp\""), "{reason}");
        assert_eq!(refusal("fold the laundry").0, RefusalClass::Unsupported);
        assert_eq!(
            refusal("the plant needs water").0,
            RefusalClass::Unsupported
        );
        for goal in [
            "throw the vase at the window",
            "put the cat in the dryer and turn it on",
            "stick a fork in the wall socket",
            "hold a lit match to the curtains",
            "hit my brother with the frying pan",
        ] {
            assert_eq!(refusal(goal).0, RefusalClass::Unsafe, "{goal}");
        }
        // the same verbs on things are fine
        assert_eq!(
            shown(&plan("hit the light switch")),
            ["turn_on light switch"]
        );
        assert_eq!(
            shown(&plan("fire up the coffee maker")),
            ["turn_on coffee maker"]
        );
        for goal in ["pick up", "open it", "turn that off please"] {
            assert_eq!(refusal(goal).0, RefusalClass::NoObject, "{goal}");
        }
    }

    #[test]
    fn typed_text_keeps_its_spelling() {
        let s = &plan("please type Hello on the keyboard")[0];
        assert_eq!(s.action, Some(ActionKind::Type));
        assert_eq!(s.text.as_deref(), Some("Hello"));
        assert_eq!(s.object.name, "keyboard");
    }
}
