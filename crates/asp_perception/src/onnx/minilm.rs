//! Text embedders run by ONNX Runtime with a Hugging Face `tokenizer.json`:
//!
//! - [`MiniLmTextEmbedder`]: all-MiniLM-L6-v2 (or any BERT-style sentence-transformers
//!   model): tokens → `last_hidden_state` → mean over the attention mask → L2
//!   normalisation, exactly the sentence-transformers pipeline (Transformer →
//!   Pooling(mean) → Normalize).
//! - [`ClipTextEmbedder`]: a CLIP text tower that pools and projects inside the model
//!   (Hugging Face `CLIPTextModelWithProjection`: output `text_embeds` `[batch, D]`),
//!   L2-normalised: the text side that matches [`super::OnnxImageEmbedder`].
//!
//! Inputs: `input_ids` and `attention_mask` (and `token_type_ids` when the model declares
//! it), int64 `[batch, sequence]`; a model with a fixed sequence length (CLIP exports
//! often fix 77) gets its inputs padded to it.

use std::path::Path;

use asp_core::models::{ModelError, TextEmbedder};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{InputTensor, OnnxModel, OnnxOptions};

const MODEL: &str = "MiniLM text embedder";
const CLIP_MODEL: &str = "CLIP text embedder";
const OUTPUT: &str = "last_hidden_state";

/// A tokenizer and an ONNX text model.
#[derive(Debug)]
struct TextModel {
    name: &'static str,
    model: OnnxModel,
    tokenizer: Tokenizer,
    uses_token_types: bool,
}

/// Token tensors of a batch.
struct Batch {
    shape: Vec<i64>,
    ids: Vec<i64>,
    mask: Vec<i64>,
    types: Vec<i64>,
}

impl TextModel {
    fn load(
        name: &'static str,
        model_path: &Path,
        tokenizer_path: &Path,
        max_tokens: usize,
        options: &OnnxOptions,
    ) -> Result<Self, ModelError> {
        let model = OnnxModel::load(name, model_path, options)?;
        model.require_inputs(&["input_ids", "attention_mask"])?;
        let uses_token_types = model.input("token_type_ids").is_some();
        let backend = |message: String| ModelError::Backend {
            model: name.into(),
            message,
        };
        if !tokenizer_path.is_file() {
            return Err(backend(format!(
                "tokenizer file {} does not exist",
                tokenizer_path.display()
            )));
        }
        let mut tokenizer = Tokenizer::from_file(tokenizer_path)
            .map_err(|e| backend(format!("cannot read {}: {e}", tokenizer_path.display())))?;
        // a fixed sequence length in the model wins over the configured maximum
        let fixed = model
            .input("input_ids")
            .and_then(|i| i.shape.get(1).copied())
            .filter(|&n| n > 0)
            .map(|n| n as usize);
        // tokenizer.json files exported for serving often fix padding and truncation at
        // 128; sentence-transformers pads per batch and truncates at max_seq_length.
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: fixed.unwrap_or(max_tokens),
                ..TruncationParams::default()
            }))
            .map_err(|e| backend(format!("truncation: {e}")))?;
        let pad_id = tokenizer
            .get_padding()
            .map(|p| (p.pad_id, p.pad_token.clone()))
            .unwrap_or((0, "[PAD]".into()));
        tokenizer.with_padding(Some(PaddingParams {
            strategy: match fixed {
                Some(n) => PaddingStrategy::Fixed(n),
                None => PaddingStrategy::BatchLongest,
            },
            pad_id: pad_id.0,
            pad_token: pad_id.1,
            ..PaddingParams::default()
        }));
        Ok(Self {
            name,
            model,
            tokenizer,
            uses_token_types,
        })
    }

    fn token_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| ModelError::InvalidInput {
                model: self.name.into(),
                problem: format!("cannot tokenise {text:?}: {e}"),
            })?;
        Ok(enc
            .get_ids()
            .iter()
            .zip(enc.get_attention_mask())
            .filter(|(_, m)| **m != 0)
            .map(|(i, _)| *i)
            .collect())
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Batch, ModelError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| ModelError::InvalidInput {
                model: self.name.into(),
                problem: format!("cannot tokenise: {e}"),
            })?;
        let batch = encodings.len();
        let seq = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut b = Batch {
            shape: vec![batch as i64, seq as i64],
            ids: Vec::with_capacity(batch * seq),
            mask: Vec::with_capacity(batch * seq),
            types: Vec::with_capacity(batch * seq),
        };
        for e in &encodings {
            let pad = seq - e.len();
            b.ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
            b.ids.extend(std::iter::repeat_n(0, pad));
            b.mask
                .extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            b.mask.extend(std::iter::repeat_n(0, pad));
            b.types
                .extend(e.get_type_ids().iter().map(|&x| i64::from(x)));
            b.types.extend(std::iter::repeat_n(0, pad));
        }
        Ok(b)
    }

    fn run(&self, b: &Batch, output: &str) -> Result<super::TensorF32, ModelError> {
        let mut inputs = vec![
            (
                "input_ids",
                InputTensor::I64(b.shape.clone(), b.ids.clone()),
            ),
            (
                "attention_mask",
                InputTensor::I64(b.shape.clone(), b.mask.clone()),
            ),
        ];
        if self.uses_token_types {
            inputs.push((
                "token_type_ids",
                InputTensor::I64(b.shape.clone(), b.types.clone()),
            ));
        }
        Ok(self.model.run(inputs, &[output])?.remove(0))
    }

    /// The fixed last axis of `output`.
    fn output_dim(&self, output: &str) -> Result<usize, ModelError> {
        self.model.require_outputs(&[output])?;
        self.model
            .outputs()
            .iter()
            .find(|o| o.name == output)
            .and_then(|o| o.shape.last().copied())
            .filter(|&d| d > 0)
            .map(|d| d as usize)
            .ok_or_else(|| {
                self.model.bad_model(format!(
                    "declares no fixed embedding size as the last axis of {output}"
                ))
            })
    }
}

/// A sentence-transformers text embedder run by ONNX Runtime.
#[derive(Debug)]
pub struct MiniLmTextEmbedder {
    inner: TextModel,
    dim: usize,
}

impl MiniLmTextEmbedder {
    /// Loads the ONNX model (output `last_hidden_state` `[batch, sequence, dim]`) and its
    /// `tokenizer.json`. Texts longer than `max_tokens` (256 for all-MiniLM-L6-v2 in
    /// sentence-transformers) are truncated.
    pub fn load(
        model_path: &Path,
        tokenizer_path: &Path,
        max_tokens: usize,
        options: &OnnxOptions,
    ) -> Result<Self, ModelError> {
        let inner = TextModel::load(MODEL, model_path, tokenizer_path, max_tokens, options)?;
        let dim = inner.output_dim(OUTPUT)?;
        Ok(Self { inner, dim })
    }

    /// The token ids of `text` as the model sees them (with `[CLS]`/`[SEP]`, without
    /// padding).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, ModelError> {
        self.inner.token_ids(text)
    }

    /// Embeds several texts in one run (padded to the longest).
    pub fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ModelError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let b = self.inner.tokenize(texts)?;
        let (batch, seq) = (b.shape[0] as usize, b.shape[1] as usize);
        let out = self.inner.run(&b, OUTPUT)?;
        if out.shape != [batch, seq, self.dim] {
            return Err(self.inner.model.bad_model(format!(
                "returned {OUTPUT} of shape {:?}, expected {:?}",
                out.shape,
                [batch, seq, self.dim]
            )));
        }
        Ok((0..batch)
            .map(|i| {
                mean_pool(
                    &out.data[i * seq * self.dim..(i + 1) * seq * self.dim],
                    &b.mask[i * seq..(i + 1) * seq],
                    self.dim,
                )
            })
            .collect())
    }
}

/// A CLIP text tower run by ONNX Runtime (pooling and projection inside the model).
#[derive(Debug)]
pub struct ClipTextEmbedder {
    inner: TextModel,
    output: String,
    dim: usize,
}

impl ClipTextEmbedder {
    /// Loads the ONNX model (output `output`, `[batch, D]`) and its `tokenizer.json`.
    pub fn load(
        model_path: &Path,
        tokenizer_path: &Path,
        output: &str,
        max_tokens: usize,
        options: &OnnxOptions,
    ) -> Result<Self, ModelError> {
        let inner = TextModel::load(CLIP_MODEL, model_path, tokenizer_path, max_tokens, options)?;
        let dim = inner.output_dim(output)?;
        Ok(Self {
            inner,
            output: output.to_owned(),
            dim,
        })
    }
}

impl TextEmbedder for ClipTextEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_text(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let b = self.inner.tokenize(&[text])?;
        let out = self.inner.run(&b, &self.output)?;
        if out.data.len() != self.dim {
            return Err(self.inner.model.bad_model(format!(
                "returned {} of shape {:?}, expected [1, {}]",
                self.output, out.shape, self.dim
            )));
        }
        let mut v = out.data;
        asp_core::map::normalize(&mut v);
        Ok(v)
    }
}

/// Mean of the token vectors where `mask` is 1, then unit length (sentence-transformers'
/// mean pooling with the attention mask, clamping the count at 1e-9, then Normalize).
pub(crate) fn mean_pool(hidden: &[f32], mask: &[i64], dim: usize) -> Vec<f32> {
    let mut sum = vec![0.0f32; dim];
    let mut count = 0.0f32;
    for (t, &m) in mask.iter().enumerate() {
        if m == 0 {
            continue;
        }
        count += 1.0;
        for (s, h) in sum.iter_mut().zip(&hidden[t * dim..(t + 1) * dim]) {
            *s += h;
        }
    }
    let count = count.max(1e-9);
    sum.iter_mut().for_each(|s| *s /= count);
    asp_core::map::normalize(&mut sum);
    sum
}

impl TextEmbedder for MiniLmTextEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    fn embed_text(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        Ok(self.embed_batch(&[text])?.remove(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pool_ignores_padding_and_normalises() {
        // two tokens [3, 0] and [0, 4], one padding token that must not count
        let hidden = [3.0, 0.0, 0.0, 4.0, 100.0, 100.0];
        let v = mean_pool(&hidden, &[1, 1, 0], 2);
        // mean (1.5, 2.0) → unit (0.6, 0.8)
        assert!(
            (v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6,
            "{v:?}"
        );
    }
}
