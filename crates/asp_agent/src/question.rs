//! Questions about where things are ("where is my stapler?", "have you seen the red
//! mug?", "do you know where the keys are?"): the offline agent answers them from the
//! building memory without moving; the LLM agent's model does so with `recall_memory`.
//! Only the question's frame is matched here; what it asks about is read by the goal
//! grammar like any object phrase.

/// Words before the question that carry nothing ("hey robot, where is …").
const FILLERS: &[&str] = &[
    "hey", "hi", "hello", "ok", "okay", "so", "robot", "please", "um", "uh", "and",
];

/// Openings that ask where something is; what follows is the object phrase (with
/// a trailing "is" / "are" / "was" when the opening embeds the question: "do you know
/// where the keys are").
const WHERE_OPENINGS: &[&str] = &[
    "can you tell me where",
    "could you tell me where",
    "would you tell me where",
    "tell me where",
    "do you know where",
    "do you remember where",
    "any idea where",
    "i wonder where",
    "i need to know where",
    "where did you last see",
    "where did you see",
    "where did you spot",
    "where did you notice",
    "where have you seen",
    "where have you spotted",
    "where did i",
    "where did we",
    "where have i",
    "where can i find",
    "where could i find",
    "where would i find",
    "where do i find",
    "where is",
    "where's",
    "wheres",
    "where are",
    "where was",
    "where were",
    "have you seen",
    "have you spotted",
    "did you see",
    "did you spot",
    "do you remember seeing",
    "do you remember",
];

/// Words after the object that end the question without adding to it.
const TAIL: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "went",
    "now",
    "anywhere",
    "around",
    "somewhere",
    "lately",
    "recently",
    "today",
    "please",
    "at",
    "located",
    "kept",
    "be",
    "might",
    "could",
    "would",
];

/// A goal that asks where something is: the object phrase it asks about ("the red
/// stapler in the office"), as the goal says it. `None` for anything else, actions
/// included ("put the cup where the bowl is" is not a question).
pub fn where_question(goal: &str) -> Option<String> {
    let lower = goal.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '?' | '!' | '.' | ';' | ':'))
        .filter(|w| !w.is_empty())
        .collect();
    let start = words.iter().take_while(|w| FILLERS.contains(w)).count();
    let words = &words[start..];
    let opening = WHERE_OPENINGS.iter().find_map(|o| {
        let o: Vec<&str> = o.split(' ').collect();
        words.starts_with(&o).then_some(o.len())
    })?;
    let mut rest = &words[opening..];
    // "do you know where I left my keys", "where did I leave / put the keys"
    if let [who, tail @ ..] = rest
        && matches!(*who, "i" | "we")
    {
        rest = tail;
    }
    if let [verb, tail @ ..] = rest
        && matches!(
            *verb,
            "leave" | "left" | "put" | "place" | "placed" | "keep" | "kept"
        )
    {
        rest = tail;
    }
    while let [head @ .., last] = rest
        && TAIL.contains(last)
    {
        rest = head;
    }
    let phrase = rest.join(" ");
    let pronoun = matches!(
        phrase.as_str(),
        "it" | "that" | "this" | "them" | "they" | "those" | "these" | "he" | "she" | "you" | "i"
    );
    (!phrase.is_empty() && !pronoun).then_some(phrase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_of_where_give_the_object_phrase() {
        for (goal, phrase) in [
            ("Where is the red stapler?", "the red stapler"),
            ("where's my phone", "my phone"),
            ("Hey robot, where are the keys?", "the keys"),
            ("Have you seen a blue thermos anywhere?", "a blue thermos"),
            (
                "Do you know where the stapler in the office is?",
                "the stapler in the office",
            ),
            ("Can you tell me where my glasses are", "my glasses"),
            ("Where did you last see the tv remote?", "the tv remote"),
            ("where did I leave my mug", "my mug"),
            ("do you know where I left the keys?", "the keys"),
            ("Where can I find a stapler?", "a stapler"),
            (
                "did you spot the black bottle in the living room",
                "the black bottle in the living room",
            ),
        ] {
            assert_eq!(where_question(goal).as_deref(), Some(phrase), "{goal}");
        }
    }

    #[test]
    fn actions_and_empty_questions_are_not_where_questions() {
        for goal in [
            "put the cup where the bowl is",
            "bring me the stapler",
            "find the red mug",
            "pick up the apple and tell me where it was",
            "where is it?",
            "where are you",
            "where?",
            "is the fridge open?",
            "",
        ] {
            assert_eq!(where_question(goal), None, "{goal}");
        }
    }
}
