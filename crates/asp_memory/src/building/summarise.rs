//! Cluster summaries (SPEC §3.1: "an LLM summarises each cluster"). The offline
//! [`KeywordSummariser`] keeps the words most of the members mention, which is what a
//! retrieval over embedded summaries needs from them; an LLM summariser implements the
//! same trait where a model is configured.

use std::collections::HashMap;

/// Summarises the texts of a cluster's members (view descriptions with their objects for
/// level 4, the summaries of the level below above it).
pub trait Summariser: Send + Sync {
    /// The summary, or why there is none.
    fn summarise(&self, level: usize, members: &[&str]) -> Result<String, String>;
}

/// The `words` content words found in the most members (ties: most mentions, then
/// alphabetical), as "a, b, c". Deterministic and model-free.
#[derive(Debug, Clone)]
pub struct KeywordSummariser {
    pub words: usize,
}

impl Default for KeywordSummariser {
    fn default() -> Self {
        KeywordSummariser { words: 24 }
    }
}

/// Words that say nothing about a place or an object.
const STOPWORDS: &[&str] = &[
    "the", "and", "with", "for", "from", "that", "this", "these", "those", "there", "here", "are",
    "was", "were", "has", "have", "its", "into", "onto", "over", "under", "near", "next", "some",
    "one", "two", "three", "view", "image", "shows", "showing", "visible", "seen", "can", "see",
    "left", "right", "front", "behind", "top", "side", "area", "zone", "also", "which", "where",
    "while", "very", "small", "large", "big", "on", "in", "of", "a", "an", "to", "is", "at", "by",
    "it", "or", "as", "beside", "between", "above", "below", "around", "against", "along",
    "against", "other", "several", "many",
];

/// Lower-case content words of `text`.
pub(crate) fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit()))
}

impl Summariser for KeywordSummariser {
    fn summarise(&self, _level: usize, members: &[&str]) -> Result<String, String> {
        // (members mentioning it, mentions)
        let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
        for text in members {
            let mut seen = std::collections::HashSet::new();
            for w in content_words(text) {
                let entry = counts.entry(w.clone()).or_default();
                entry.1 += 1;
                if seen.insert(w) {
                    entry.0 += 1;
                }
            }
        }
        if counts.is_empty() {
            // views of bare walls say nothing; their cluster is found by place alone
            return Ok(String::new());
        }
        let mut ranked: Vec<(String, (usize, usize))> = counts.into_iter().collect();
        ranked.sort_by(|(wa, a), (wb, b)| b.cmp(a).then_with(|| wa.cmp(wb)));
        Ok(ranked
            .into_iter()
            .take(self.words.max(1))
            .map(|(w, _)| w)
            .collect::<Vec<_>>()
            .join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_most_members_mention() {
        let s = KeywordSummariser { words: 3 };
        let summary = s
            .summarise(
                4,
                &[
                    "a bed with a grey pillow next to a lamp",
                    "the bed and a wardrobe",
                    "a lamp on a nightstand beside the bed",
                ],
            )
            .unwrap();
        assert_eq!(summary, "bed, lamp, grey");
    }

    #[test]
    fn nothing_to_say_is_an_empty_summary_not_a_failed_build() {
        let s = KeywordSummariser::default();
        assert_eq!(s.summarise(5, &["a", "the of"]).unwrap(), "");
    }
}
