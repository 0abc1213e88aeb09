//! A text embedder that needs no model file: hashed character n-grams.
//!
//! Each word (lowercased, split at non-alphanumeric characters) is wrapped in boundary
//! markers (`<mug>`) and cut into character 3- and 4-grams, as fastText does for
//! sub-words; the word itself counts too. Every piece is hashed (FNV-1a, 64 bit) to one
//! of `dim` buckets with a sign from another bit of the hash (the signed hashing trick,
//! so collisions cancel on average), and the vector is L2-normalised.
//!
//! It is LEXICAL ONLY: "mug" and "mugs" are close, "mug" and "cup" are not. Use it where
//! no MiniLM model is installed, or to test code that needs a deterministic embedder;
//! open-vocabulary retrieval on a real robot wants `minilm_onnx`.

use asp_core::models::{ModelError, TextEmbedder};

/// Hashed character n-gram embedder (lexical only).
#[derive(Debug, Clone)]
pub struct HashingTextEmbedder {
    dim: usize,
}

impl HashingTextEmbedder {
    /// An embedder of `dim` buckets (at least 1).
    pub fn new(dim: usize) -> Self {
        Self { dim: dim.max(1) }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl TextEmbedder for HashingTextEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_text(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let mut v = vec![0.0f32; self.dim];
        let mut add = |piece: &str, weight: f32| {
            let h = fnv1a(piece.as_bytes());
            let bucket = (h % self.dim as u64) as usize;
            let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
            v[bucket] += sign * weight;
        };
        let lower = text.to_lowercase();
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            add(&format!("w:{word}"), 1.0);
            let chars: Vec<char> = format!("<{word}>").chars().collect();
            for n in 3..=4 {
                for gram in chars.windows(n) {
                    add(&gram.iter().collect::<String>(), 0.5);
                }
            }
        }
        asp_core::map::normalize(&mut v);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::map::cosine_similarity;

    #[test]
    fn similar_words_are_close_and_unrelated_ones_are_not() {
        let e = HashingTextEmbedder::new(384);
        let mug = e.embed_text("red mug").unwrap();
        let mugs = e.embed_text("Red MUGS!").unwrap();
        let kettle = e.embed_text("steel kettle").unwrap();
        assert_eq!(mug.len(), 384);
        let n: f32 = mug.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-5);
        let close = cosine_similarity(&mug, &mugs);
        let far = cosine_similarity(&mug, &kettle);
        assert!(close > 0.6, "mug vs mugs {close}");
        assert!(far < 0.3, "mug vs kettle {far}");
        // deterministic
        assert_eq!(mug, e.embed_text("red mug").unwrap());
        // empty text is the zero vector, not NaN
        assert!(e.embed_text("  ").unwrap().iter().all(|&x| x == 0.0));
    }
}
