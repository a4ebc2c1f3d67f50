"""The pinned MiniLM file rebuilt as a graph that computes in int8, in memory, at each load.

The package's "int8" file stores each weight as int8 with a float scale per output column, but
its graph turns them back into float32 (Cast, then Mul) before every MatMul: onnxruntime folds
those into float32 constants at load, so every product ran in float32 (about 90 MB of weights
expanded, and the 47 MB float word table) and the machine's int8 instructions (VNNI) sat idle.
Its attention, exported by PyTorch's dynamo exporter, is also a chain of small operators
(Where, IsNaN, Transpose, Reshape) that onnxruntime's fusions do not recognise.

build() reads that file's own int8 weights, scales, biases and norms and writes the same BERT
(6 layers, 12 heads, 384 wide) with onnxruntime's fused CPU operators: DynamicQuantizeMatMul
(the activations quantised per call, the weights exactly the file's int8, the bias added),
MultiHeadAttention, SkipLayerNormalization and Gelu. Nothing is re-quantised, so the weights
cannot drift from the pinned file, and the result is a pure function of it: no file is written,
the session is made from the bytes.

On x86 without VNNI, onnxruntime multiplies unsigned by signed bytes with an instruction that
saturates (VPMADDUBSW); there the weights are shifted to uint8 with a zero point of 128, which is
exact and does not saturate.

The graph takes input_ids and attention_mask (token type is always 0: one sentence a text) and
gives last_hidden_state, as the file does.
"""

from pathlib import Path

from memoryd.errors import StartFailed

LAYERS = 6
HEADS = 12
WIDTH = 384
EPSILON = 1e-12
_MS = "com.microsoft"
_ROLES = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


CALIBRATION = (
    "Can you remind me when the dentist appointment is? I think it was moved to Thursday.",
    "The quarterly report is due on 14 March; Priya wants the figures for Lisbon and Oslo first.",
    "I ran the tests again after the upgrade and two of them still fail with a timeout.",
    "We hiked up to the lake on Saturday, the kids loved it, and we saw a heron!",
    "Here is a summary: the build uses Python 3.11, the database is SQLite, and logs go to /var/log.",
    "My sister's birthday is next week and I still don't know what to get her, maybe a book?",
    "ok thanks",
    "Error: connection refused (errno 111) while fetching https://example.org/api/v2/items?page=3",
)


class GraphInvalid(StartFailed):
    """The model file does not have the layout build() rewrites."""


def vnni() -> bool:
    """Whether the int8 products may use signed weights: the CPU multiplies bytes without
    saturating (x86 with VNNI, or not x86)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return "avx512_vnni" in flags or "avx_vnni" in flags
    return True  # no x86 flags line: an ARM cpuinfo, whose dot products do not saturate


def _weights(model) -> dict:
    """The file's tensors by role: {name: array}, with each quantised MatMul weight found by
    the bias its output is added to (the exporter named biases, not weights)."""
    from onnx import numpy_helper

    graph = model.graph
    tensors = {i.name.removeprefix("inner."): numpy_helper.to_array(i) for i in graph.initializer}
    made_by = {out: node for node in graph.node for out in node.output}
    found = dict(tensors)
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        mul = made_by.get(node.input[1])
        cast = made_by.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast":
            continue  # attention's own products: no weight
        bias = next(
            (
                other.input[1]
                for other in graph.node
                if other.op_type == "Add" and other.input[0] == node.output[0]
            ),
            None,
        )
        if bias is None or not bias.endswith(".bias"):
            raise GraphInvalid(f"model: the MatMul {node.name} is not followed by a bias")
        role = bias.removeprefix("inner.").removesuffix(".bias")
        found[role + ".q"] = tensors[cast.input[0].removeprefix("inner.")]
        found[role + ".scale"] = tensors[mul.input[1].removeprefix("inner.")]
    return found


def _need(found: dict, name: str, shape: tuple[int, ...], dtype: str):
    array = found.get(name)
    if array is None or array.shape != shape or array.dtype != dtype:
        got = None if array is None else (array.shape, str(array.dtype))
        raise GraphInvalid(f"model: {name} is {got}, not {shape} {dtype}")
    return array


def build(
    path: Path,
    signed: bool,
    calibration: list[list[int]] | None = None,
    quantise: tuple[str, ...] = ("qkv", "ao", "ff1", "ff2"),
    per_row: bool = True,
    alpha: float = 0.5,
) -> bytes:
    """The int8 graph of the model file at path (already checked against its pin), serialised."""
    import onnx

    found = _weights(onnx.load(str(path)))
    smooth = None
    if calibration:
        smooth = _smoothing(found, calibration, alpha)
    return _graph(found, signed, quantise, per_row, smooth, (), alpha)[0]


def _smoothing(found: dict, calibration: list[list[int]], alpha: float) -> dict:
    import numpy as np
    import onnxruntime
    import os

    data, taps = _graph(found, True, (), False, None, tuple(os.environ.get("TAPS", "qkv,ff1").split(",")))
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    peaks: dict = {}
    for ids in calibration:
        batch = np.array([ids], np.int64)
        outs = session.run(taps, {"input_ids": batch, "attention_mask": np.ones_like(batch)})
        for name, value in zip(taps, outs, strict=True):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(0)
            peaks[name] = np.maximum(peaks.get(name, peak), peak)
    return peaks


def _graph(found, signed, quantise, per_row, smooth, tap, alpha=0.5) -> tuple[bytes, list[str]]:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inits: list = []
    nodes: list = []
    taps: list[str] = []

    def const(name: str, array) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    def dense(x: str, kind: str, roles: tuple[str, ...], out: str) -> str:
        """x times the roles' weights side by side (their columns joined), plus their biases."""
        if kind in tap:
            taps.append(x)
        depth = 4 * WIDTH if kind == "ff2" else WIDTH
        q, scale, bias = [], [], []
        for role in roles:
            cols = 4 * WIDTH if kind == "ff1" else WIDTH
            q.append(_need(found, role + ".q", (depth, cols), "int8"))
            scale.append(_need(found, role + ".scale", (1, cols), "float32").reshape(-1))
            bias.append(_need(found, role + ".bias", (cols,), "float32"))
        w = np.concatenate(q, axis=1)
        scales = np.concatenate(scale)
        biases = const(out + ".bias", np.concatenate(bias))
        if kind not in quantise:
            product = node("MatMul", [x, const(out + ".wf", w.astype(np.float32) * scales)], out + ".p")
            return node("Add", [product, biases], out)
        if smooth is not None and x in smooth:
            wide = w.astype(np.float32) * scales
            peak_w = np.abs(wide).max(1)
            factor = (np.maximum(smooth[x], 1e-5) ** alpha) / (np.maximum(peak_w, 1e-5) ** (1 - alpha))
            factor = factor.astype(np.float32)
            x = node("Mul", [x, const(out + ".smooth", (1 / factor).astype(np.float32))], out + ".xs")
            wide = wide * factor[:, None]
            scales = (np.abs(wide).max(0) / 127).astype(np.float32)
            w = np.clip(np.round(wide / scales), -127, 127).astype(np.int8)
        if signed:
            wi, zero = const(out + ".w", w), ""
        else:
            wi = const(out + ".w", (w.astype(np.int16) + 128).astype(np.uint8))
            zero = const(out + ".zero", np.full(w.shape[1], 128, np.uint8))
        if not per_row:
            inputs = [x, wi, const(out + ".scale", scales), zero, biases]
            return node("DynamicQuantizeMatMul", inputs, out, _MS)
        peak = node("ReduceMax", [node("Abs", [x], out + ".abs")], out + ".peak", axes=[-1], keepdims=1)
        step = node("Div", [node("Max", [peak, const(out + ".tiny", np.array(1e-12, np.float32))], out + ".peak1"), const(out + ".127", np.array(127, np.float32))], out + ".step")
        qx = node("Round", [node("Div", [x, step], out + ".qf")], out + ".qr")
        qx = node("Cast", [node("Add", [qx, const(out + ".128", np.array(128, np.float32))], out + ".qs")], out + ".qu", to=TensorProto.UINT8)
        product = node("MatMulInteger", [qx, wi, const(out + ".az", np.array(128, np.uint8)), zero], out + ".mmi")
        product = node("Mul", [node("Cast", [product], out + ".mf", to=TensorProto.FLOAT), step], out + ".ms")
        product = node("Mul", [product, const(out + ".scale", scales)], out + ".mc")
        return node("Add", [product, biases], out)

    def norm(x: str, skip: str, prefix: str, out: str) -> str:
        """LayerNorm(x + skip) with the file's weights under prefix."""
        gamma = const(out + ".gamma", found[prefix + "LayerNorm.weight"])
        beta = const(out + ".beta", found[prefix + "LayerNorm.bias"])
        total = node("Add", [x, skip], out + ".sum")
        return node("LayerNormalization", [total, gamma, beta], out, axis=-1, epsilon=EPSILON)

    # Embeddings: the word table stays int8 and only the rows a batch uses are scaled to float.
    words = _need(found, "embeddings.word_embeddings.weight_q", (30522, WIDTH), "int8")
    word_scale = _need(found, "embeddings.word_embeddings.weight_scale", (30522, 1), "float32")
    position_q = _need(found, "embeddings.position_embeddings.weight_q", (512, WIDTH), "int8")
    position_scale = _need(
        found, "embeddings.position_embeddings.weight_scale", (512, 1), "float32"
    )
    token_type = _need(found, "embeddings.token_type_embeddings.weight", (2, WIDTH), "float32")
    # Position and token type 0 are added to every text: one table of their sums.
    positions = position_q.astype(np.float32) * position_scale + token_type[0]
    ids = "input_ids"
    word_rows = node(
        "Cast",
        [node("Gather", [const("words", words), ids], "word_q")],
        "word_f",
        to=TensorProto.FLOAT,
    )
    word_emb = node(
        "Mul",
        [word_rows, node("Gather", [const("word_scale", word_scale), ids], "word_s")],
        "word_emb",
    )
    length = node("Shape", [ids], "length", start=1, end=2)
    first = const("first", np.zeros(1, np.int64))
    used = node("Slice", [const("positions", positions), first, length, first], "pos_emb")
    x = node("Add", [word_emb, used], "emb")
    x = node(
        "LayerNormalization",
        [
            x,
            const("emb.gamma", found["embeddings.LayerNorm.weight"]),
            const("emb.beta", found["embeddings.LayerNorm.bias"]),
        ],
        "emb_norm",
        axis=-1,
        epsilon=EPSILON,
    )
    mask = node("Cast", ["attention_mask"], "mask32", to=TensorProto.INT32)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv = dense(x, "qkv", tuple(p + r for r in _ROLES[:3]), f"l{i}.qkv")
        parts = [f"l{i}.q", f"l{i}.k", f"l{i}.v"]
        nodes.append(
            helper.make_node(
                "Split",
                [qkv, const(f"l{i}.split", np.array([WIDTH] * 3, np.int64))],
                parts,
                name=f"l{i}.split",
                axis=-1,
            )
        )
        attended = node(
            "MultiHeadAttention", [*parts, "", mask], f"l{i}.attn", _MS, num_heads=HEADS
        )
        x = norm(dense(attended, "ao", (p + _ROLES[3],), f"l{i}.ao"), x, f"{p}attention.output.", f"l{i}.n1")
        hidden = node("Gelu", [dense(x, "ff1", (p + _ROLES[4],), f"l{i}.ff1")], f"l{i}.gelu", _MS)
        out = "last_hidden_state" if i == LAYERS - 1 else f"l{i}.n2"
        x = norm(dense(hidden, "ff2", (p + _ROLES[5],), f"l{i}.ff2"), x, f"{p}output.", out)
    graph = helper.make_graph(
        nodes,
        "minilm-int8",
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "length"])
            for n in (ids, "attention_mask")
        ],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "length", WIDTH])]
        + [helper.make_tensor_value_info(t, TensorProto.FLOAT, None) for t in taps],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)]
    )
    return model.SerializeToString(), taps
