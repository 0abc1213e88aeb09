//! The MiniLM ONNX text embedder against the original model: reference embeddings
//! computed once by sentence-transformers (fp32) and by Python onnxruntime on the same
//! int8 file (tests/data/make_minilm_reference.py).
#![allow(clippy::unwrap_used)]

mod support;

use asp_core::map::cosine_similarity;
use asp_core::models::TextEmbedder;
use serde::Deserialize;

#[derive(Deserialize)]
struct Reference {
    max_seq_length: usize,
    sentences: Vec<Sentence>,
}

#[derive(Deserialize)]
struct Sentence {
    text: String,
    token_ids: Vec<u32>,
    fp32_sentence_transformers: Vec<f32>,
    int8_onnxruntime_python: Vec<f32>,
}

fn reference() -> Reference {
    let text = include_str!("data/minilm_reference.json");
    serde_json::from_str(text).unwrap()
}

#[test]
fn token_ids_match_the_original_tokenizer() {
    let r = reference();
    assert_eq!(r.max_seq_length, 256);
    let e = support::minilm();
    for s in &r.sentences {
        assert_eq!(e.token_ids(&s.text).unwrap(), s.token_ids, "{:?}", s.text);
    }
    // the long sentence is past the tokenizer.json's 128-token limit
    assert!(r.sentences.iter().any(|s| s.token_ids.len() > 128));
}

#[test]
fn embeddings_match_the_reference() {
    let r = reference();
    let e = support::minilm();
    assert_eq!(e.dim(), 384);
    let mut min_fp32 = 1.0f32;
    let mut min_int8 = 1.0f32;
    for s in &r.sentences {
        let v = e.embed_text(&s.text).unwrap();
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{:?} norm {norm}", s.text);
        let fp32 = cosine_similarity(&v, &s.fp32_sentence_transformers);
        let int8 = cosine_similarity(&v, &s.int8_onnxruntime_python);
        min_fp32 = min_fp32.min(fp32);
        min_int8 = min_int8.min(int8);
        // int8 quantisation against the fp32 original
        assert!(
            fp32 >= 0.99,
            "{:?}: cosine {fp32} to sentence-transformers",
            s.text
        );
        // the same int8 file in Python: only float rounding may differ
        assert!(
            int8 >= 0.9999,
            "{:?}: cosine {int8} to Python onnxruntime",
            s.text
        );
    }
    eprintln!(
        "minimum cosine: {min_fp32:.5} vs fp32 sentence-transformers, {min_int8:.6} vs int8 onnxruntime-python"
    );
    // a batch gives the same vectors as one at a time (padding is masked out)
    let texts: Vec<&str> = r.sentences.iter().map(|s| s.text.as_str()).collect();
    let batch = e.embed_batch(&texts).unwrap();
    for (b, s) in batch.iter().zip(&r.sentences) {
        assert!(
            cosine_similarity(b, &s.int8_onnxruntime_python) >= 0.9999,
            "{:?}",
            s.text
        );
    }
}

#[test]
fn similar_meanings_are_closer_than_unrelated_ones() {
    let e = support::minilm();
    let q = e.embed_text("coffee cup").unwrap();
    let mug = e.embed_text("a red ceramic mug with a handle").unwrap();
    let kettle = e.embed_text("a yellow paperback book").unwrap();
    assert!(cosine_similarity(&q, &mug) > cosine_similarity(&q, &kettle) + 0.1);
}

#[test]
fn missing_files_name_the_path() {
    let err = asp_perception::onnx::MiniLmTextEmbedder::load(
        std::path::Path::new("/nonexistent/model.onnx"),
        std::path::Path::new("/nonexistent/tokenizer.json"),
        256,
        &support::onnx_options(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/model.onnx"), "{err}");
}
