//! What kinds of thing a noun names and what it is used for, from a WordNet noun database
//! (Princeton's WNdb files `index.noun` and `data.noun`; Debian's `wordnet-base` puts
//! them in `/usr/share/wordnet`, `scripts/setup` installs it). SIMULATION ONLY: the
//! simulated retrieval VLM uses it for the world knowledge a real VLM brings, so "a
//! fruit" can be an apple and "something to drink from" a cup without a list written
//! for the suites. The product never asks it anything.
//!
//! A noun's kinds are the heads of its first senses' lemmas and of every hypernym's above
//! them (apple → edible fruit → produce → food …: apple, fruit, produce, food), and the
//! uses their lemmas and glosses state ("drinking vessel"; "a small open container
//! usually used for drinking": drinking).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The senses of a noun looked at, most frequent first: the everyday meanings.
const SENSES: usize = 2;
/// Hypernym levels followed above a sense.
const DEPTH: usize = 12;

/// Why a database could not be read.
#[derive(Debug, thiserror::Error)]
#[error("WordNet database {file}: {message}")]
pub struct LexiconError {
    pub file: PathBuf,
    pub message: String,
}

#[derive(Debug, Clone)]
struct Synset {
    lemmas: Vec<String>,
    hypernyms: Vec<u64>,
    purposes: Vec<String>,
}

/// A WordNet noun database in memory.
#[derive(Debug)]
pub struct Lexicon {
    /// Lemma (lowercase, spaces as `_`) → its synsets, most frequent sense first.
    index: HashMap<String, Vec<u64>>,
    synsets: HashMap<u64, Synset>,
}

impl Lexicon {
    /// Reads `index.noun` and `data.noun` from `dir`.
    pub fn open(dir: &Path) -> Result<Self, LexiconError> {
        let read = |name: &str| {
            let file = dir.join(name);
            std::fs::read_to_string(&file).map_err(|e| LexiconError {
                file,
                message: e.to_string(),
            })
        };
        let index_text = read("index.noun")?;
        let data_text = read("data.noun")?;
        let mut index = HashMap::new();
        for line in index_text.lines().filter(|l| !l.starts_with(' ')) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // lemma pos synset_cnt p_cnt [ptr...] sense_cnt tagsense_cnt offsets...
            let (Some(lemma), Some(count)) = (f.first(), f.get(2).and_then(|c| c.parse().ok()))
            else {
                continue;
            };
            let count: usize = count;
            let offsets: Vec<u64> = f[f.len().saturating_sub(count)..]
                .iter()
                .filter_map(|o| o.parse().ok())
                .collect();
            index.insert((*lemma).to_owned(), offsets);
        }
        let mut synsets = HashMap::new();
        for line in data_text.lines().filter(|l| !l.starts_with(' ')) {
            if let Some((offset, s)) = parse_synset(line) {
                synsets.insert(offset, s);
            }
        }
        if index.is_empty() || synsets.is_empty() {
            return Err(LexiconError {
                file: dir.to_path_buf(),
                message: "no nouns read".into(),
            });
        }
        Ok(Self { index, synsets })
    }

    /// The database of `ASP_WORDNET_DIR`, else `/usr/share/wordnet`, read once per
    /// process; `None` (logged once) when there is none.
    pub fn system() -> Option<Arc<Lexicon>> {
        static SYSTEM: OnceLock<Option<Arc<Lexicon>>> = OnceLock::new();
        SYSTEM
            .get_or_init(|| {
                let dir = std::env::var_os("ASP_WORDNET_DIR")
                    .map_or_else(|| PathBuf::from("/usr/share/wordnet"), PathBuf::from);
                match Lexicon::open(&dir) {
                    Ok(l) => Some(Arc::new(l)),
                    Err(e) => {
                        tracing::warn!(
                            "{e}: the simulated VLM knows no kinds of thing (run scripts/setup)"
                        );
                        None
                    }
                }
            })
            .clone()
    }

    /// The words of what `noun` names and what it is for: its first senses' lemmas,
    /// every hypernym's above them, and their glosses' purposes. Empty for an unknown
    /// noun.
    pub fn kinds(&self, noun: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let Some(senses) = self.index.get(&noun.to_lowercase()) else {
            return out;
        };
        let mut frontier: Vec<u64> = senses.iter().take(SENSES).copied().collect();
        let mut seen: BTreeSet<u64> = BTreeSet::new();
        for _ in 0..=DEPTH {
            let mut next = Vec::new();
            for o in frontier {
                if !seen.insert(o) {
                    continue;
                }
                let Some(s) = self.synsets.get(&o) else {
                    continue;
                };
                for l in &s.lemmas {
                    out.extend(lemma_words(l));
                }
                out.extend(s.purposes.iter().cloned());
                next.extend(&s.hypernyms);
            }
            frontier = next;
        }
        out
    }

    /// Whether `word` (a kind or a use: "fruit", "drink") is among the kinds of one of
    /// `nouns`; a use matches its "-ing" form ("drink" and "drinking").
    pub fn describes<'a>(&self, word: &str, nouns: impl IntoIterator<Item = &'a str>) -> bool {
        // "drink": drinking; "write": writing
        let ing = [
            format!("{word}ing"),
            format!("{}ing", word.strip_suffix('e').unwrap_or(word)),
        ];
        nouns.into_iter().any(|n| {
            let k = self.kinds(n);
            k.contains(word) || ing.iter().any(|i| k.contains(i))
        })
    }
}

/// One `data.noun` line: offset, lemmas, hypernyms (`@`, `@i`) and the purposes its
/// gloss states ("used for drinking", "for cutting").
fn parse_synset(line: &str) -> Option<(u64, Synset)> {
    let (fields, gloss) = line.split_once(" | ").unwrap_or((line, ""));
    let f: Vec<&str> = fields.split_whitespace().collect();
    let offset: u64 = f.first()?.parse().ok()?;
    let words = usize::from_str_radix(f.get(3)?, 16).ok()?;
    let lemmas: Vec<String> = (0..words)
        .filter_map(|i| f.get(4 + 2 * i))
        .map(|w| strip_marker(w).to_lowercase())
        .collect();
    let at = 4 + 2 * words;
    let pointers: usize = f.get(at)?.parse().ok()?;
    let hypernyms = (0..pointers)
        .filter_map(|i| {
            let p = at + 1 + 4 * i;
            let (symbol, target, pos) = (f.get(p)?, f.get(p + 1)?, f.get(p + 2)?);
            (matches!(*symbol, "@" | "@i") && *pos == "n")
                .then(|| target.parse().ok())
                .flatten()
        })
        .collect();
    Some((
        offset,
        Synset {
            lemmas,
            hypernyms,
            purposes: purposes(gloss),
        },
    ))
}

/// What a lemma says a thing is: its head ("edible_fruit": fruit) and a use it is named
/// after ("drinking_vessel": drinking). Not its other words: "green_goods" (produce)
/// does not make a tomato green.
fn lemma_words(lemma: &str) -> Vec<String> {
    let words: Vec<&str> = lemma.split('_').filter(|w| !w.is_empty()).collect();
    let mut out: Vec<String> = words.last().map(|w| (*w).to_owned()).into_iter().collect();
    if words.len() > 1
        && let Some(first) = words.first()
        && first.len() > 4
        && first.ends_with("ing")
    {
        out.push((*first).to_owned());
    }
    out
}

/// An adjective lemma's marker, "(p)" in "galore(p)".
fn strip_marker(w: &str) -> &str {
    w.split_once('(').map_or(w, |(a, _)| a)
}

/// The "-ing" words a gloss says the thing is for: "used for drinking", "for cutting".
fn purposes(gloss: &str) -> Vec<String> {
    let words: Vec<String> = gloss
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words
        .windows(2)
        .filter(|w| w[0] == "for" && w[1].len() > 4 && w[1].ends_with("ing"))
        .map(|w| w[1].clone())
        .collect()
}

/// A few nouns in WordNet's own file format, for tests.
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    pub(crate) fn tiny(dir: &Path) -> Lexicon {
        let data = "  1 This is a license header line.\n\
00000100 03 n 01 entity 0 000 | that which exists\n\
00000200 03 n 01 food 0 001 @ 00000100 n 0000 | any substance that can be eaten\n\
00000300 13 n 02 edible_fruit 0 fruit 0 001 @ 00000200 n 0000 | edible reproductive body of a seed plant\n\
00000400 13 n 01 apple 0 001 @ 00000300 n 0000 | fruit with red or yellow or green skin\n\
00000500 06 n 01 container 0 001 @ 00000100 n 0000 | any object that can be used to hold things\n\
00000600 06 n 01 cup 0 001 @ 00000500 n 0000 | a small open container usually used for drinking; usually has a handle\n\
00000700 06 n 01 ball 0 001 @ 00000100 n 0000 | round object that is hit or thrown or kicked in games\n";
        let index = "  1 This is a license header line.\n\
apple n 1 1 @ 1 0 00000400  \n\
ball n 1 1 @ 1 0 00000700  \n\
container n 1 1 @ 1 0 00000500  \n\
cup n 1 1 @ 1 0 00000600  \n\
edible_fruit n 1 1 @ 1 0 00000300  \n\
fruit n 1 1 @ 1 0 00000300  \n";
        std::fs::write(dir.join("data.noun"), data).unwrap();
        std::fs::write(dir.join("index.noun"), index).unwrap();
        Lexicon::open(dir).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::tiny;
    use super::*;

    #[test]
    fn kinds_climb_the_hypernyms_and_uses_come_from_the_gloss() {
        let dir = tempfile::tempdir().unwrap();
        let lex = tiny(dir.path());
        let apple = lex.kinds("apple");
        for w in ["apple", "fruit", "food", "entity"] {
            assert!(apple.contains(w), "{w}: {apple:?}");
        }
        // a lemma's head, not its other words
        assert!(!apple.contains("edible"), "{apple:?}");
        assert!(!apple.contains("red"), "gloss words are not kinds");
        assert!(lex.describes("fruit", ["red", "apple"]));
        assert!(!lex.describes("fruit", ["red", "ball"]));
        assert!(lex.describes("drink", ["yellow", "cup"]));
        assert!(lex.describes("container", ["cup"]));
        assert!(!lex.describes("drink", ["ball"]));
        assert!(lex.kinds("unicorn").is_empty());
    }

    #[test]
    fn a_folder_without_the_files_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = Lexicon::open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("index.noun"), "{e}");
    }
}
