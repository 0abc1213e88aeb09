//! The concept corpus (`config/concepts/corpus.yaml`): what the loopback search server
//! knows, and how it ranks it for a query.

use std::collections::BTreeSet;
use std::path::Path;

use asp_sim::world::spec::ShapeSpec;
use serde::{Deserialize, Serialize};

/// What a good grounding would say of a concept (SPEC §4.2's five keywords): the VLM
/// stand-in's truth, never served as a search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keywords {
    pub colour: String,
    pub shape: String,
    pub material: String,
    pub size: String,
    pub function: String,
}

/// One page of text about a concept, served as a search result as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Page {
    pub title: String,
    pub url: String,
    pub content: String,
}

/// A thing no detector vocabulary names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Concept {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub keywords: Keywords,
    /// The closest word of the detector's known list.
    pub replacement: String,
    pub color: [u8; 3],
    /// Its geometry, as world files give it (object frame at the base centre, z up).
    pub shapes: Vec<ShapeSpec>,
    pub pages: Vec<Page>,
}

impl Concept {
    /// Its name as a path segment and an object name: lower-case ASCII, digits and `_`.
    pub fn slug(&self) -> String {
        let s: String = self
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        if s.starts_with(|c: char| c.is_ascii_lowercase()) {
            s
        } else {
            format!("c_{s}")
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    concepts: Vec<Concept>,
}

/// A corpus file could not be used; the message names the file and the entry.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct CorpusError {
    pub file: String,
    pub message: String,
}

/// The concepts the server answers about.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    concepts: Vec<Concept>,
}

/// Words that say nothing about which thing is meant.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "my", "your", "our", "his", "her", "their", "its", "this", "that", "these",
    "those", "of", "for", "to", "in", "on", "at", "with", "and", "or", "some", "what", "is", "are",
    "does", "do", "look", "looks", "like", "image", "images", "photo", "photos", "picture",
    "pictures",
];

/// The query's or a text's words: lower case, letters and digits (accents kept).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        // plurals folded, as a search engine stems ("moka pots" finds "moka pot")
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.len() > 2 && !stem.ends_with('s') => stem.to_owned(),
            _ => w,
        })
        .collect()
}

/// Whether `phrase`'s words occur in `text`'s words in a row.
fn contains_phrase(text: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && text.windows(phrase.len()).any(|w| w == phrase)
}

impl Corpus {
    pub fn load(path: impl AsRef<Path>) -> Result<Self, CorpusError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| CorpusError {
            file: path.display().to_string(),
            message: format!("cannot read it: {e}"),
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a corpus; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, CorpusError> {
        let err = |message: String| CorpusError {
            file: file.to_owned(),
            message,
        };
        let de = serde_yaml_ng::Deserializer::from_str(text);
        let parsed: File = serde_path_to_error::deserialize(de)
            .map_err(|e| err(format!("at {}: {}", e.path(), e.inner())))?;
        let mut names = BTreeSet::new();
        let mut urls = BTreeSet::new();
        for (i, c) in parsed.concepts.iter().enumerate() {
            let at = format!("concepts[{i}] ({:?})", c.name);
            if words(&c.name).is_empty() {
                return Err(err(format!("{at}: the name has no word to search for")));
            }
            for n in std::iter::once(&c.name).chain(&c.aliases) {
                if !names.insert(n.to_lowercase()) {
                    return Err(err(format!("{at}: the name {n:?} is given twice")));
                }
            }
            if c.shapes.is_empty() {
                return Err(err(format!("{at}: shapes is empty; nothing to render")));
            }
            if c.pages.is_empty() {
                return Err(err(format!("{at}: pages is empty; nothing to serve")));
            }
            for p in &c.pages {
                if !urls.insert(p.url.clone()) {
                    return Err(err(format!(
                        "{at}: the page url {:?} is given twice",
                        p.url
                    )));
                }
            }
        }
        Ok(Self {
            concepts: parsed.concepts,
        })
    }

    pub fn concepts(&self) -> &[Concept] {
        &self.concepts
    }

    /// The concept called `name` (or known by it as an alias).
    pub fn concept(&self, name: &str) -> Option<&Concept> {
        let name = name.trim().to_lowercase();
        self.concepts
            .iter()
            .find(|c| c.name == name || c.aliases.contains(&name))
    }

    /// The concept whose [`Concept::slug`] is `slug`.
    pub fn by_slug(&self, slug: &str) -> Option<&Concept> {
        self.concepts.iter().find(|c| c.slug() == slug)
    }

    /// The concepts whose pictures an image search for `query` shows, best first: those
    /// the query names (its name or an alias among the query's words), as an image
    /// engine matches pictures by their captions. A query that names none shows none,
    /// rather than pictures of whatever page mentions one of its words.
    pub fn pictured(&self, query: &str) -> Vec<(&Concept, f32)> {
        let q = words(query);
        self.rank(query)
            .into_iter()
            .filter(|(c, _)| {
                std::iter::once(&c.name)
                    .chain(&c.aliases)
                    .any(|n| contains_phrase(&q, &words(n)))
            })
            .collect()
    }

    /// The concepts that match `query`, best first, with their scores: a name or an alias
    /// in the query's words counts most, then shared words with the names, the page
    /// titles and the page text. Concepts sharing no word are left out.
    pub fn rank(&self, query: &str) -> Vec<(&Concept, f32)> {
        let q = words(query);
        if q.is_empty() {
            return Vec::new();
        }
        let qs: BTreeSet<&String> = q.iter().collect();
        let mut scored: Vec<(usize, f32)> = self
            .concepts
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let names: Vec<Vec<String>> = std::iter::once(&c.name)
                    .chain(&c.aliases)
                    .map(|n| words(n))
                    .collect();
                let phrase = names
                    .iter()
                    .filter(|n| contains_phrase(&q, n))
                    .map(|n| 10.0 + n.len() as f32)
                    .fold(0.0, f32::max);
                let shared = |field: BTreeSet<String>| {
                    qs.iter().filter(|w| field.contains(w.as_str())).count() as f32
                };
                let name_words: BTreeSet<String> = names.into_iter().flatten().collect();
                let titles: BTreeSet<String> =
                    c.pages.iter().flat_map(|p| words(&p.title)).collect();
                let text: BTreeSet<String> =
                    c.pages.iter().flat_map(|p| words(&p.content)).collect();
                let score =
                    phrase + 3.0 * shared(name_words) + 1.5 * shared(titles) + 0.5 * shared(text);
                (score > 0.0).then_some((i, score))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
            .into_iter()
            .map(|(i, s)| (&self.concepts[i], s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"
concepts:
  - name: moka pot
    aliases: [stovetop espresso maker]
    keywords: {colour: silver, shape: eight-sided jug, material: aluminium, size: small, function: brews coffee}
    replacement: kettle
    color: [185, 185, 190]
    shapes:
      - cylinder: {radius: 0.045, height: 0.09}
        at: {xyz: [0, 0, 0.045]}
    pages:
      - {title: Moka pot, url: "https://e.org/moka", content: "A stovetop coffee maker of aluminium."}
  - name: french press
    keywords: {colour: clear, shape: cylinder with a plunger, material: glass, size: small, function: brews coffee}
    replacement: kettle
    color: [200, 200, 210]
    shapes:
      - cylinder: {radius: 0.05, height: 0.2}
    pages:
      - {title: French press, url: "https://e.org/press", content: "A glass jug whose plunger presses coffee grounds."}
"#;

    #[test]
    fn a_named_concept_ranks_first_and_unrelated_words_find_nothing() {
        let c = Corpus::parse(TWO, "two.yaml").unwrap();
        let r = c.rank("the Moka Pot");
        assert_eq!(r[0].0.name, "moka pot", "{r:?}");
        assert!(r.len() == 1 || r[0].1 > 2.0 * r[1].1, "{r:?}");
        assert_eq!(c.rank("stovetop espresso maker")[0].0.name, "moka pot");
        assert_eq!(c.rank("a glass plunger jug")[0].0.name, "french press");
        assert!(c.rank("unicorn").is_empty());
        assert!(c.rank("the my of").is_empty());
    }

    #[test]
    fn pictures_are_of_the_concepts_a_query_names() {
        let c = Corpus::parse(TWO, "two.yaml").unwrap();
        let names = |q: &str| -> Vec<String> {
            c.pictured(q).iter().map(|(k, _)| k.name.clone()).collect()
        };
        assert_eq!(names("my Moka Pots"), ["moka pot"]);
        assert_eq!(names("a stovetop espresso maker"), ["moka pot"]);
        // words of its pages, or one word of its name, are not a picture of it
        assert!(!c.rank("a glass plunger jug").is_empty());
        assert!(names("a glass plunger jug").is_empty());
        assert!(names("the pot").is_empty());
    }

    #[test]
    fn a_bad_corpus_names_the_entry() {
        let dup = TWO.replace("name: french press", "name: moka pot");
        let e = Corpus::parse(&dup, "dup.yaml").unwrap_err().to_string();
        assert!(
            e.contains("dup.yaml") && e.contains("concepts[1]") && e.contains("twice"),
            "{e}"
        );
        let e = Corpus::parse(
            &TWO.replace("replacement: kettle\n    color: [185", "color: [185"),
            "x.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("replacement"), "{e}");
    }

    #[test]
    fn slugs_are_object_names() {
        let c = Corpus::parse(TWO, "two.yaml").unwrap();
        assert_eq!(c.concepts()[0].slug(), "moka_pot");
        assert_eq!(c.by_slug("french_press").unwrap().name, "french press");
    }

    #[test]
    fn the_shipped_corpus_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/concepts/corpus.yaml");
        let c = Corpus::load(path).unwrap();
        assert!(c.concepts().len() >= 50, "{} concepts", c.concepts().len());
        // every concept is found by its own name, first
        for k in c.concepts() {
            let r = c.rank(&k.name);
            assert_eq!(
                r.first().map(|r| r.0.name.as_str()),
                Some(k.name.as_str()),
                "{:?}",
                k.name
            );
        }
    }
}
