//! Shared test support: generated ONNX stand-ins, synthetic scenes, model paths.
#![allow(dead_code)]

pub mod onnx_gen;
pub mod scene;

use std::path::PathBuf;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The ONNX Runtime library installed by scripts/setup.
pub fn ort_library() -> PathBuf {
    let p = root().join("models/onnxruntime/libonnxruntime.so");
    assert!(
        p.exists(),
        "{} is missing: run scripts/setup (scripts/test does) before the tests",
        p.display()
    );
    p
}

pub fn onnx_options() -> asp_perception::onnx::OnnxOptions {
    asp_perception::onnx::OnnxOptions::cpu(ort_library())
}

/// The MiniLM model and tokenizer installed by scripts/setup.
pub fn minilm() -> asp_perception::onnx::MiniLmTextEmbedder {
    let dir = root().join("models/minilm");
    asp_perception::onnx::MiniLmTextEmbedder::load(
        &dir.join("model.onnx"),
        &dir.join("tokenizer.json"),
        256,
        &onnx_options(),
    )
    .unwrap_or_else(|e| panic!("{e} (run scripts/setup)"))
}
