//! Words of a goal: lower-cased, contractions opened ("don't" → "do not", "that's" →
//! "that is", "the desk's" → "desk 's"), punctuation kept as clause marks, each word
//! with the spelling it had (for text to type).

/// One word of a goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tok {
    /// Lower case, contractions opened.
    pub w: String,
    /// As written (quotes stripped).
    pub raw: String,
}

impl Tok {
    fn new(w: impl Into<String>, raw: impl Into<String>) -> Self {
        Self {
            w: w.into(),
            raw: raw.into(),
        }
    }

    pub fn is(&self, w: &str) -> bool {
        self.w == w
    }

    /// A clause mark: `,` `.` `;` `!` `?` `:`.
    pub fn is_mark(&self) -> bool {
        matches!(self.w.as_str(), "," | "." | ";" | "!" | "?" | ":")
    }
}

/// Words that take "'s" as "is" ("that's", "it's").
const S_IS: &[&str] = &[
    "that", "it", "there", "what", "here", "where", "who", "he", "she", "which", "one",
];

const SHORTHAND: &[(&str, &str)] = &[
    ("u", "you"),
    ("ur", "your"),
    ("pls", "please"),
    ("plz", "please"),
    ("thx", "thanks"),
    ("ty", "thanks"),
    ("favor", "favour"),
    ("gimme", "give me"),
    ("lemme", "let me"),
    ("wanna", "want to"),
    ("gonna", "going to"),
    ("tv", "tv"),
    // contractions typed without their apostrophe, where no word is spelt the same
    ("thats", "that is"),
    ("whats", "what is"),
    ("theres", "there is"),
    ("isnt", "is not"),
    ("arent", "are not"),
    ("wasnt", "was not"),
    ("dont", "do not"),
    ("doesnt", "does not"),
    ("didnt", "did not"),
    ("cant", "can not"),
    ("couldnt", "could not"),
    ("wouldnt", "would not"),
    ("shouldnt", "should not"),
    ("havent", "have not"),
    ("hasnt", "has not"),
    ("youre", "you are"),
    ("im", "i am"),
    ("ive", "i have"),
];

/// Splits a goal into words.
pub fn tokenize(goal: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let text = goal.replace(['\u{2019}', '\u{2018}', '`'], "'");
    for chunk in text.split_whitespace() {
        let mut word = String::new();
        let chars: Vec<char> = chunk.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let next_alnum = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
            let prev_alnum = i > 0 && chars[i - 1].is_alphanumeric();
            match c {
                ',' | '.' | ';' | '!' | '?' | ':' if !(prev_alnum && next_alnum && c != ',') => {
                    push_word(&mut out, &word);
                    word.clear();
                    out.push(Tok::new(c.to_string(), c.to_string()));
                }
                '"' | '(' | ')' | '[' | ']' | '{' | '}' => {
                    push_word(&mut out, &word);
                    word.clear();
                }
                '\'' if !(prev_alnum && (next_alnum || i + 1 == chars.len())) => {
                    // an opening or closing quote
                    push_word(&mut out, &word);
                    word.clear();
                }
                '-' | '/' if prev_alnum && next_alnum => {
                    // "non-metal", "t-shirt", "555-0199": split words, keep numbers
                    let digits = chars[i - 1].is_ascii_digit() && chars[i + 1].is_ascii_digit();
                    let short = word.chars().count() == 1;
                    if digits || short {
                        word.push(c);
                    } else {
                        push_word(&mut out, &word);
                        word.clear();
                    }
                }
                c if c.is_alphanumeric() || c == '\'' || c == '&' || c == '#' => word.push(c),
                _ => {
                    push_word(&mut out, &word);
                    word.clear();
                }
            }
        }
        push_word(&mut out, &word);
    }
    out
}

fn push_word(out: &mut Vec<Tok>, raw: &str) {
    let raw = raw.trim_matches('\'');
    if raw.is_empty() {
        return;
    }
    let lower = raw.to_lowercase();
    if let Some(&(_, full)) = SHORTHAND.iter().find(|(s, _)| *s == lower) {
        for w in full.split(' ') {
            out.push(Tok::new(w, raw));
        }
        return;
    }
    let (stem, tail): (&str, &[&str]) = if let Some(s) = lower.strip_suffix("n't") {
        let stem = match s {
            "ca" => "can",
            "wo" => "will",
            "sha" => "shall",
            "ai" => "is",
            _ => s,
        };
        (stem, &["not"])
    } else if let Some(s) = lower.strip_suffix("'s") {
        if S_IS.contains(&s) {
            (s, &["is"])
        } else if s == "let" {
            (s, &["us"])
        } else {
            (s, &["'s"])
        }
    } else if let Some(s) = lower.strip_suffix("'d") {
        (s, &["would"])
    } else if let Some(s) = lower.strip_suffix("'ll") {
        (s, &["will"])
    } else if let Some(s) = lower.strip_suffix("'re") {
        (s, &["are"])
    } else if let Some(s) = lower.strip_suffix("'m") {
        (s, &["am"])
    } else if let Some(s) = lower.strip_suffix("'ve") {
        (s, &["have"])
    } else {
        (lower.as_str(), &[])
    };
    let stem = stem.replace('\'', "");
    if !stem.is_empty() {
        let raw_stem = if tail.is_empty() {
            raw.to_owned()
        } else {
            raw.chars().take(stem.chars().count()).collect()
        };
        out.push(Tok::new(stem, raw_stem));
    }
    for t in tail {
        out.push(Tok::new(*t, *t));
    }
}

/// The singular of a noun ("apples" → "apple", "knives" → "knife", "scissors" stays).
pub fn singular(word: &str) -> String {
    const SAME: &[&str] = &[
        "scissors",
        "glasses",
        "pants",
        "jeans",
        "shorts",
        "tongs",
        "pliers",
        "headphones",
        "earphones",
        "tweezers",
        "trousers",
        "binoculars",
        "news",
        "series",
        "species",
        "chips",
        "sweets",
        "clothes",
        "dishes",
        "keys",
        "cutlery",
        "goggles",
        "leggings",
        "slippers",
        "sneakers",
        "shoes",
        "socks",
        "boots",
        "gloves",
        "mittens",
        "earbuds",
        "sunglasses",
        "chopsticks",
        "bus",
        "gas",
        "lens",
        "canvas",
        "cactus",
        "octopus",
        "hummus",
        "asparagus",
        "glass",
        "grass",
        "brass",
        "dress",
        "mattress",
        "compass",
        "lotus",
        "citrus",
        "iris",
        "tennis",
        "chess",
        "moss",
        "press",
        "boss",
        "class",
        "this",
        "is",
        "his",
        "its",
        "yes",
        "plus",
        "minus",
        "fries",
        "nuts",
        "thermos",
        "atlas",
        "cosmos",
        "chaos",
        "kudos",
        // one die is "dice" in everyday speech and in detector vocabularies
        "dice",
    ];
    const IRREGULAR: &[(&str, &str)] = &[
        ("knives", "knife"),
        ("shelves", "shelf"),
        ("leaves", "leaf"),
        ("loaves", "loaf"),
        ("halves", "half"),
        ("wolves", "wolf"),
        ("scarves", "scarf"),
        ("children", "child"),
        ("people", "person"),
        ("men", "man"),
        ("women", "woman"),
        ("feet", "foot"),
        ("teeth", "tooth"),
        ("mice", "mouse"),
        ("geese", "goose"),
        ("potatoes", "potato"),
        ("tomatoes", "tomato"),
        ("mangoes", "mango"),
        ("heroes", "hero"),
        ("thermoses", "thermos"),
        ("atlases", "atlas"),
    ];
    // pairs named as one thing stay as said ("socks" would be one sock otherwise)
    let keep_pairs = ["socks", "shoes", "boots", "gloves", "slippers", "keys"];
    if let Some(&(_, s)) = IRREGULAR.iter().find(|(p, _)| *p == word) {
        return s.to_owned();
    }
    if SAME.contains(&word) && !keep_pairs.contains(&word) || word.len() <= 3 {
        return word.to_owned();
    }
    if let Some(s) = word.strip_suffix("ies") {
        return format!("{s}y");
    }
    for end in ["ches", "shes", "xes", "sses", "zzes"] {
        if word.ends_with(end) {
            return word[..word.len() - 2].to_owned();
        }
    }
    if word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_owned();
    }
    word.strip_suffix('s').unwrap_or(word).to_owned()
}

/// The bases a gerund may come from ("closing" → "clos", "close"; "grabbing" → "grab").
pub fn gerund_bases(word: &str) -> Vec<String> {
    suffix_bases(word, "ing")
}

/// The bases a past participle may come from ("closed" → "clos", "close"; "plugged" →
/// "plug"); irregular ones ("put", "shut") are their own base.
pub fn participle_bases(word: &str) -> Vec<String> {
    suffix_bases(word, "ed")
}

/// `word` without `suffix`, with an "e" put back, and with a doubled consonant undone.
fn suffix_bases(word: &str, suffix: &str) -> Vec<String> {
    let Some(stem) = word.strip_suffix(suffix) else {
        return Vec::new();
    };
    if stem.len() < 2 {
        return Vec::new();
    }
    let mut out = vec![stem.to_owned(), format!("{stem}e")];
    let b = stem.as_bytes();
    if b.len() >= 2 && b[b.len() - 1] == b[b.len() - 2] {
        out.push(stem[..stem.len() - 1].to_owned());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        tokenize(s).into_iter().map(|t| t.w).collect()
    }

    #[test]
    fn contractions_open_and_marks_stay() {
        assert_eq!(
            words("Don't grab the desk's top drawer, it's full!"),
            [
                "do", "not", "grab", "the", "desk", "'s", "top", "drawer", ",", "it", "is", "full",
                "!"
            ]
        );
        assert_eq!(
            words("I'd like a non-metal bowl pls"),
            ["i", "would", "like", "a", "non", "metal", "bowl", "please"]
        );
        assert_eq!(
            words("dial 555-0199, then stop."),
            ["dial", "555-0199", ",", "then", "stop", "."]
        );
        assert_eq!(
            words("type 'hello' on the keyboard"),
            ["type", "hello", "on", "the", "keyboard"]
        );
        let t = tokenize("Type Hello");
        assert_eq!(t[1].raw, "Hello");
    }

    #[test]
    fn plurals_and_gerunds() {
        assert_eq!(singular("apples"), "apple");
        assert_eq!(singular("knives"), "knife");
        assert_eq!(singular("batteries"), "battery");
        assert_eq!(singular("boxes"), "box");
        assert_eq!(singular("scissors"), "scissors");
        assert_eq!(singular("glass"), "glass");
        assert_eq!(singular("tomatoes"), "tomato");
        // a singular that ends in -os: "the thermos", and "both thermoses"
        assert_eq!(singular("thermos"), "thermos");
        assert_eq!(singular("thermoses"), "thermos");
        assert_eq!(singular("photos"), "photo");
        assert!(gerund_bases("closing").contains(&"close".to_owned()));
        assert!(gerund_bases("grabbing").contains(&"grab".to_owned()));
        assert!(gerund_bases("turning").contains(&"turn".to_owned()));
        assert!(participle_bases("closed").contains(&"close".to_owned()));
        assert!(participle_bases("plugged").contains(&"plug".to_owned()));
        assert!(participle_bases("red").is_empty());
    }
}
