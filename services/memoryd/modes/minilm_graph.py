"""The pinned MiniLM file rebuilt, in memory at each load, as a graph whose products run in int8.

The package's "int8" file stores each weight as int8 with a float scale per output column, but
its graph turns them back into float32 (Cast, then Mul) in front of every MatMul: onnxruntime
folds those into float32 constants at load, so every product ran in float32 and the machine's
int8 instructions (VNNI) sat idle; the float weights and word table also cost about 140 MB.
Its attention, as PyTorch's dynamo exporter wrote it, is a chain of small operators (Where,
IsNaN, Transpose, Reshape) that onnxruntime's fusions do not recognise.

build() reads the file's int8 weights, scales, biases and norms and writes the same BERT (6
layers, 12 heads, 384 wide) with onnxruntime's fused CPU attention (MultiHeadAttention, which
stays float32: its products are of activations by activations) and every weight product as
MatMulIntegerToFloat (int8 by int8, each column scaled in the same pass). How the activations
are quantised decides the accuracy (worst cosine to the float reference, bench/check_minilm_onnx):
- per token (each row its own scale, QuantizeLinear along the rows): one scale for a whole batch
  (onnxruntime's DynamicQuantizeMatMul, what quantize_dynamic writes) let one token's outlier
  coarsen every other token: 0.970, and 0.980 per token;
- the inputs of the query/key/value and first feed-forward products, which are the residual
  stream after its norm, carry a few channels 10 to 20 times the others (the known outlier
  dimensions of BERT). Those channels are divided out of the activations and multiplied into the
  weights' rows (SmoothQuant, alpha ALPHA), so both quantise evenly: 0.993. The factors come from
  the channels' peaks on the CALIBRATION sentences, run first through the same graph unsmoothed
  (its int8 products find the same peaks; float32 weights would hold 250 MB more meanwhile).
  These two products' weights are therefore quantised again, per column, from the file's values
  times the factors; the attention-output and second feed-forward products keep the file's int8.
Everything is a pure function of the pinned file and of this module: the same bytes at every
load, no file written, no network.

On x86 without VNNI, onnxruntime multiplies unsigned by signed bytes with an instruction that
saturates (VPMADDUBSW); there the weights are shifted to uint8 with a zero point of 128, which
is exact and does not saturate.

The graph takes input_ids and attention_mask (token type is always 0: one sentence a text) and
gives last_hidden_state, as the file does.
"""

from pathlib import Path

from memoryd.errors import StartFailed

LAYERS = 6
HEADS = 12
WIDTH = 384
VOCABULARY = 30522
POSITIONS = 512
EPSILON = 1e-12
ALPHA = 0.7  # worst cosines: 0.9922 at 0.5, 0.9937 at 0.7, 0.9928 at 0.8
_MS = "com.microsoft"
_ROLES = {
    "qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "ao": ("attention.output.dense",),
    "ff1": ("intermediate.dense",),
    "ff2": ("output.dense",),
}
_SMOOTHED = ("qkv", "ff1")
# Sentences of the kinds memoryd embeds (requests, dates and names, code and errors, chatter),
# written for this purpose and not taken from any evaluation.
CALIBRATION = (
    "Can you remind me when the dentist appointment is? I think it was moved to Thursday.",
    "The quarterly report is due on 14 March; Priya wants the figures for Lisbon and Oslo first.",
    "I ran the tests again after the upgrade and two of them still fail with a timeout.",
    "We hiked up to the lake on Saturday, the kids loved it, and we saw a heron!",
    "Summary: the build uses Python 3.11, the database is SQLite, and logs go to /var/log.",
    "My sister's birthday is next week and I still don't know what to get her, maybe a book?",
    "ok thanks",
    "Error: connection refused (errno 111) while fetching https://example.org/api/v2/items?page=3",
)


class GraphInvalid(StartFailed):
    """The model file does not have the layout build() rewrites."""


def vnni(cpuinfo: str | None = None) -> bool:
    """Whether the int8 products may use signed weights: the CPU multiplies bytes without
    saturating (x86 with VNNI, or not x86). cpuinfo: /proc/cpuinfo's text (read when None)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            return "avx512_vnni" in flags or "avx_vnni" in flags
    return True  # no x86 flags line: an ARM cpuinfo, whose dot products do not saturate


def build(path: Path, signed: bool, calibration: list[list[int]]) -> bytes:
    """The int8 graph of the model file at path (already checked against its pin), serialised.
    calibration: token ids of CALIBRATION (the caller holds the tokenizer)."""
    import onnx

    weights = _weights(onnx.load(str(path)))
    plain = _Graph(weights, signed, None)
    plain.build()
    peaks = _peaks(plain.serialise(), plain.taps, calibration)
    del plain
    graph = _Graph(weights, signed, peaks)
    graph.build()
    return graph.serialise()


def _weights(model) -> dict:
    """The file's tensors by name (without the exporter's "inner." prefix), and each quantised
    MatMul weight as ROLE.q and ROLE.scale, found by the bias its product is added to (the
    exporter named the biases, not the weights)."""
    from onnx import numpy_helper

    graph = model.graph
    tensors = {i.name.removeprefix("inner."): numpy_helper.to_array(i) for i in graph.initializer}
    made_by = {out: node for node in graph.node for out in node.output}
    added_to = {n.input[0]: n.input[1] for n in graph.node if n.op_type == "Add"}
    found = dict(tensors)
    for node in graph.node:
        if node.op_type != "MatMul":
            continue
        mul = made_by.get(node.input[1])
        if mul is None or mul.op_type != "Mul":
            continue  # attention's own products: no weight
        cast = made_by.get(mul.input[0])
        if cast is None or cast.op_type != "Cast":
            continue
        bias = added_to.get(node.output[0], "")
        if not bias.endswith(".bias"):
            raise GraphInvalid(f"model: the MatMul {node.name} is not followed by a bias")
        role = bias.removeprefix("inner.").removesuffix(".bias")
        found[role + ".q"] = tensors.get(cast.input[0].removeprefix("inner."))
        found[role + ".scale"] = tensors.get(mul.input[1].removeprefix("inner."))
    return found


def _need(found: dict, name: str, shape: tuple[int, ...], dtype: str):
    array = found.get(name)
    if array is None or array.shape != shape or array.dtype != dtype:
        got = None if array is None else (array.shape, str(array.dtype))
        raise GraphInvalid(f"model: {name} is {got}, not {shape} {dtype}")
    return array


def _peaks(model: bytes, taps: dict, calibration: list[list[int]]) -> dict:
    """Each smoothed product's input channels' largest magnitude over the calibration tokens."""
    import numpy as np
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    names = list(taps.values())
    peaks: dict = {}
    for ids in calibration:
        batch = np.array([ids], np.int64)
        outs = session.run(names, {"input_ids": batch, "attention_mask": np.ones_like(batch)})
        for key, value in zip(taps, outs, strict=True):
            peak = np.abs(value).reshape(-1, WIDTH).max(0)
            peaks[key] = np.maximum(peaks.get(key, peak), peak)
    return peaks


class _Graph:
    """One build of the graph. Without peaks, nothing is smoothed and the inputs of the
    products to be smoothed are outputs too (taps), for _peaks: their channels' peaks, which
    only set the factors, are found as well through int8 products as through float32 ones, and
    float32 weights would hold about 250 MB more while the graph is made."""

    def __init__(self, found: dict, signed: bool, peaks: dict | None):
        import numpy as np
        from onnx import TensorProto, helper, numpy_helper

        self.np, self.tp, self.helper, self.numpy_helper = np, TensorProto, helper, numpy_helper
        self.found, self.signed, self.peaks = found, signed, peaks
        self.inits: list = []
        self.nodes: list = []
        self.taps: dict[str, str] = {}
        self.output = ""

    def const(self, name: str, array) -> str:
        self.inits.append(self.numpy_helper.from_array(self.np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs) -> str:
        self.nodes.append(
            self.helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs)
        )
        return output

    def dense(self, x: str, layer: int, kind: str) -> str:
        """x times the kind's weights (qkv: the three side by side), plus their biases."""
        np, out = self.np, f"l{layer}.{kind}"
        depth = 4 * WIDTH if kind == "ff2" else WIDTH
        cols = 4 * WIDTH if kind == "ff1" else WIDTH
        q, scale, bias = [], [], []
        for role in _ROLES[kind]:
            name = f"encoder.layer.{layer}.{role}"
            q.append(_need(self.found, name + ".q", (depth, cols), "int8"))
            scale.append(_need(self.found, name + ".scale", (1, cols), "float32").reshape(-1))
            bias.append(_need(self.found, name + ".bias", (cols,), "float32"))
        w, scales = np.concatenate(q, axis=1), np.concatenate(scale)
        biases = self.const(out + ".bias", np.concatenate(bias))
        if kind in _SMOOTHED:
            if self.peaks is None:
                self.taps[out] = x
            else:
                x, w, scales = self.smooth(x, w, scales, self.peaks[out], out)
        if self.signed:
            weight, zero = self.const(out + ".w", w), ""
        else:
            weight = self.const(out + ".w", (w.astype(np.int16) + 128).astype(np.uint8))
            zero = self.const(out + ".zero", np.full(w.shape[1], 128, np.uint8))
        # Each token's own scale: its largest magnitude is 127 (zero point 128, unsigned).
        rows = self.node(
            "Reshape", [x, self.const(out + ".flat", np.array([-1, depth]))], out + ".x2"
        )
        peak = self.node(
            "ReduceMax",
            [self.node("Abs", [rows], out + ".abs")],
            out + ".peak",
            axes=[-1],
            keepdims=0,
        )
        step = self.node(
            "Mul", [peak, self.const(out + ".by", np.array(1 / 127, np.float32))], out + ".s"
        )
        step = self.node(
            "Max", [step, self.const(out + ".tiny", np.array(1e-12, np.float32))], out + ".step"
        )
        mid = self.node(
            "ConstantOfShape",
            [self.node("Shape", [step], out + ".n")],
            out + ".mid",
            value=self.numpy_helper.from_array(np.array([128], np.uint8)),
        )
        codes = self.node("QuantizeLinear", [rows, step, mid], out + ".codes", axis=0)
        half = self.const(out + ".az", np.array(128, np.uint8))
        # The rows' scales are applied after: MatMulIntegerToFloat takes one for all of A.
        one = self.const(out + ".one", np.array(1, np.float32))
        product = self.node(
            "MatMulIntegerToFloat",
            [codes, weight, one, self.const(out + ".scale", scales), half, zero],
            out + ".f",
            _MS,
        )
        column = self.node(
            "Unsqueeze", [step, self.const(out + ".ax", np.array([1]))], out + ".col"
        )
        product = self.node("Mul", [product, column], out + ".rows")
        product = self.node("Add", [product, biases], out + ".y2")
        shape = self.node(
            "Concat",
            [
                self.node("Shape", [x], out + ".xshape", end=-1),
                self.const(out + ".width", np.array([w.shape[1]])),
            ],
            out + ".shape",
            axis=0,
        )
        return self.node("Reshape", [product, shape], out)

    def smooth(self, x: str, w, scales, peak, out: str):
        """x divided and w's rows multiplied by the same factors per channel, w quantised again
        per column."""
        np = self.np
        wide = w.astype(np.float32) * scales
        factor = np.maximum(peak, 1e-5) ** ALPHA / np.maximum(np.abs(wide).max(1), 1e-5) ** (
            1 - ALPHA
        )
        factor = factor.astype(np.float32)
        x = self.node("Mul", [x, self.const(out + ".smooth", 1 / factor)], out + ".xs")
        wide = wide * factor[:, None]
        scales = (np.abs(wide).max(0) / 127).astype(np.float32)
        return x, np.clip(np.round(wide / scales), -127, 127).astype(np.int8), scales

    def norm(self, x: str, skip: str, prefix: str, out: str) -> str:
        """LayerNorm(x + skip) with the file's weights under prefix. (onnxruntime's fused
        SkipLayerNormalization took three times as long here as Add and LayerNormalization.)"""
        gamma = _need(self.found, prefix + "LayerNorm.weight", (WIDTH,), "float32")
        beta = _need(self.found, prefix + "LayerNorm.bias", (WIDTH,), "float32")
        gamma, beta = self.const(out + ".gamma", gamma), self.const(out + ".beta", beta)
        total = self.node("Add", [x, skip], out + ".sum") if skip else x
        return self.node("LayerNormalization", [total, gamma, beta], out, axis=-1, epsilon=EPSILON)

    def build(self) -> None:
        np, found = self.np, self.found
        words = _need(found, "embeddings.word_embeddings.weight_q", (VOCABULARY, WIDTH), "int8")
        word_scale = _need(
            found, "embeddings.word_embeddings.weight_scale", (VOCABULARY, 1), "float32"
        )
        places = _need(found, "embeddings.position_embeddings.weight_q", (POSITIONS, WIDTH), "int8")
        place_scale = _need(
            found, "embeddings.position_embeddings.weight_scale", (POSITIONS, 1), "float32"
        )
        kinds = _need(found, "embeddings.token_type_embeddings.weight", (2, WIDTH), "float32")
        # The word table stays int8; only the rows a batch uses are scaled to float. Position
        # and token type 0 are added to every text: one table of their sums.
        positions = places.astype(np.float32) * place_scale + kinds[0]
        ids = "input_ids"
        rows = self.node(
            "Cast",
            [self.node("Gather", [self.const("words", words), ids], "word_q")],
            "word_f",
            to=self.tp.FLOAT,
        )
        rows = self.node(
            "Mul",
            [rows, self.node("Gather", [self.const("word_scale", word_scale), ids], "word_s")],
            "word_emb",
        )
        length = self.node("Shape", [ids], "length", start=1, end=2)
        first = self.const("first", np.zeros(1, np.int64))
        used = self.node(
            "Slice", [self.const("positions", positions), first, length, first], "pos_emb"
        )
        x = self.norm(self.node("Add", [rows, used], "emb"), "", "embeddings.", "emb_norm")
        mask = self.node("Cast", ["attention_mask"], "mask32", to=self.tp.INT32)
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            parts = [f"l{i}.q", f"l{i}.k", f"l{i}.v"]
            split = self.const(f"l{i}.split", np.array([WIDTH] * 3, np.int64))
            self.nodes.append(
                self.helper.make_node(
                    "Split", [self.dense(x, i, "qkv"), split], parts, name=f"l{i}.split", axis=-1
                )
            )
            attended = self.node(
                "MultiHeadAttention", [*parts, "", mask], f"l{i}.attn", _MS, num_heads=HEADS
            )
            x = self.norm(self.dense(attended, i, "ao"), x, p + "attention.output.", f"l{i}.n1")
            hidden = self.node("Gelu", [self.dense(x, i, "ff1")], f"l{i}.gelu", _MS)
            last = "last_hidden_state" if i == LAYERS - 1 else f"l{i}.n2"
            x = self.norm(self.dense(hidden, i, "ff2"), x, p + "output.", last)
        self.output = x

    def serialise(self) -> bytes:
        helper, tp = self.helper, self.tp
        inputs = [
            helper.make_tensor_value_info(n, tp.INT64, ["batch", "length"])
            for n in ("input_ids", "attention_mask")
        ]
        outputs = [helper.make_tensor_value_info(self.output, tp.FLOAT, ["batch", "length", WIDTH])]
        outputs += [helper.make_tensor_value_info(t, tp.FLOAT, None) for t in self.taps.values()]
        graph = helper.make_graph(self.nodes, "minilm-int8", inputs, outputs, self.inits)
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)]
        return helper.make_model(graph, opset_imports=opsets).SerializeToString()
