"""The hybrid embedder's background rate on long turns: in memoryd's thread as before, in the
embedding child (modes/embedworker.py) with onnxruntime's intra-op threads on every core, and in
as many one-thread children as cores (the alternative the child's design turned down: the model
held once per process); at the model's two lengths, 256 tokens (sentence-transformers'
max_seq_length) and 128 (the length it was trained at). Same texts, one process after another,
each for --seconds.

    .venv/bin/python bench/bench_embed.py [--seconds 20] [--lengths 256,128]

The texts: turns of generated conversations (recall_eval) run together until each holds at
least 256 tokens, cut to the length measured; batches of hybrid.EMBED_BATCH, as the embedder
takes them. Also prints each child's peak memory (VmHWM), which memoryd's container must hold.
"""

import argparse
import time
from pathlib import Path

from recall_eval.conversations import conversation

from memoryd.modes import embed
from memoryd.modes.embedworker import Worker, cores
from memoryd.modes.hybrid import EMBED_BATCH


def long_texts(count: int) -> list[str]:
    turns = [t for seed in (5, 6, 7) for s in conversation(seed).sessions for _, t in s.turns]
    tokenizer = embed.Embedder(tokens=512)._tokenizer  # counts past the truncation
    out, current = [], []
    for turn in turns * 4:
        current.append(turn)
        text = " ".join(current)
        if len(tokenizer.encode(text).ids) >= 256:
            out.append(text)
            current = []
            if len(out) == count:
                break
    return out


def _hwm(pid: int | None) -> int | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return None


def run(embed_batch, texts: list[str], seconds: float) -> float:
    embed_batch(texts[:EMBED_BATCH])  # warm
    done, started, at = 0, time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        batch = texts[at : at + EMBED_BATCH]
        at = (at + EMBED_BATCH) % (len(texts) - EMBED_BATCH)
        embed_batch(batch)
        done += len(batch)
    return done / (time.perf_counter() - started)


def pool_rate(workers: list[Worker], texts: list[str], seconds: float) -> float:
    """Each worker on its own thread, batches taken in turn (what a pool of children does)."""
    import threading

    rates = [0.0] * len(workers)

    def one(i: int) -> None:
        rates[i] = run(workers[i].embed, texts[i :: len(workers)] * len(workers), seconds)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--lengths", type=lambda s: [int(x) for x in s.split(",")], default=[256, 128]
    )
    args = parser.parse_args()
    texts = long_texts(256)
    n = cores()
    print(f"{len(texts)} texts of at least 256 tokens; {n} cores; batches of {EMBED_BATCH}")
    for length in args.lengths:
        inproc = embed.Embedder(threads=1, tokens=length)
        rate = run(inproc.embed, texts, args.seconds)
        print(f"{length} tokens, in memoryd's thread, 1 thread: {rate:.1f} records/s", flush=True)
        del inproc
        worker = Worker(threads=n, tokens=length)
        rate = run(worker.embed, texts, args.seconds)
        hwm = _hwm(worker.pid)
        worker.close()
        print(
            f"{length} tokens, one child, {n} intra-op threads: {rate:.1f} records/s"
            f" (child's peak {hwm} MB)",
            flush=True,
        )
        workers = [Worker(threads=1, tokens=length) for _ in range(n)]
        rate = pool_rate(workers, texts, args.seconds)
        hwms = [_hwm(w.pid) for w in workers]
        for w in workers:
            w.close()
        print(
            f"{length} tokens, {n} children of 1 thread: {rate:.1f} records/s"
            f" (children's peaks {hwms} MB)",
            flush=True,
        )


if __name__ == "__main__":
    main()
