//! Shared test support: the repository root and the MiniLM text embedder scripts/setup
//! installs.
#![allow(dead_code)]

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The MiniLM model and tokenizer installed by scripts/setup.
pub fn minilm() -> asp_perception::onnx::MiniLmTextEmbedder {
    let dir = root().join("models/minilm");
    let ort = root().join("models/onnxruntime/libonnxruntime.so");
    asp_perception::onnx::MiniLmTextEmbedder::load(
        &dir.join("model.onnx"),
        &dir.join("tokenizer.json"),
        256,
        &asp_perception::onnx::OnnxOptions::cpu(ort),
    )
    .unwrap_or_else(|e| panic!("{e} (run scripts/setup)"))
}
