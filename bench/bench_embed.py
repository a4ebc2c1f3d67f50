"""The hybrid embedder's background rate, in the embedding child as memoryd runs it
(modes/embedworker.py), on texts of 128 and 256 tokens: the package's graph as shipped (its
products in float32, onnxruntime's intra-op threads on every core: what memoryd ran before)
against minilm_graph's int8 graph (a group of texts per core, side by side: what it runs now).

    PYTHONPATH=bench .venv/bin/python bench/bench_embed.py [--seconds 10] [--rounds 3]
        [--lengths 128,256] [--more]

The texts: turns of generated conversations (recall_eval) run together until each holds at
least the length measured, and cut there (the child is started with --tokens LENGTH; memoryd's
own cut is embed.MAX_TOKENS); batches of hybrid.EMBED_BATCH, as the embedder takes them. The
configurations take turns for --seconds each, --rounds times, so that a load that comes and
goes on a shared machine falls on all of them; each round's rate is printed, then the median.
After each configuration, the child's memory: resident now and at its peak (VmRSS, VmHWM).
--more adds the int8 graph on onnxruntime's intra-op threads, and one child of one thread per
core (the model held once per child).
"""

import argparse
import statistics
import threading
import time
from pathlib import Path

from recall_eval.conversations import conversation

from memoryd.modes import embed
from memoryd.modes.embedchild import cores
from memoryd.modes.embedworker import Worker
from memoryd.modes.hybrid import EMBED_BATCH


def texts_of(length: int, count: int) -> list[str]:
    """count texts of at least length tokens, each of whole turns."""
    turns = [t for seed in (5, 6, 7) for s in conversation(seed).sessions for _, t in s.turns]
    tokenizer = embed.Embedder(tokens=4 * length, as_shipped=True)._tokenizer
    out, current = [], []
    for turn in turns * 4:
        current.append(turn)
        text = " ".join(current)
        if len(tokenizer.encode(text).ids) >= length:
            out.append(text)
            current = []
            if len(out) == count:
                break
    return out


def _memory(pid: int | None) -> str:
    if pid is None:
        return "?"
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) // 1024
    return f"{fields.get('VmRSS')} / {fields.get('VmHWM')} MiB"


def rate(workers: list[Worker], texts: list[str], seconds: float) -> float:
    """Records a second, each worker sent batches in turn from a thread of its own."""
    rates = [0.0] * len(workers)

    def one(i: int) -> None:
        mine = texts[i :: len(workers)]
        workers[i].embed(mine[:EMBED_BATCH])  # warm
        done, at, started = 0, 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            batch = mine[at : at + EMBED_BATCH]
            at = (at + EMBED_BATCH) % (len(mine) - EMBED_BATCH)
            workers[i].embed(batch)
            done += len(batch)
        rates[i] = done / (time.perf_counter() - started)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(workers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--lengths", type=lambda s: [int(x) for x in s.split(",")], default=[128, 256]
    )
    parser.add_argument("--more", action="store_true")
    args = parser.parse_args()
    n = cores()
    configs: dict[str, tuple[int, dict]] = {
        f"as shipped, 1 child, {n} intra-op threads": (1, {"as_shipped": True, "intra_op": True}),
        f"int8 graph, 1 child, {n} groups side by side": (1, {}),
    }
    if args.more:
        configs[f"int8 graph, 1 child, {n} intra-op threads"] = (1, {"intra_op": True})
        configs[f"int8 graph, {n} children of 1 thread"] = (n, {"threads": 1})
    print(f"{n} cores; batches of {EMBED_BATCH}; groups of {embed.GROUP}", flush=True)
    for length in args.lengths:
        texts = texts_of(length, 8 * EMBED_BATCH)
        print(f"\n{len(texts)} texts of {length} tokens (cut there)", flush=True)
        rates: dict[str, list[float]] = {name: [] for name in configs}
        memory: dict[str, list[str]] = {}
        for _ in range(args.rounds):
            for name, (children, options) in configs.items():
                workers = [Worker(tokens=length, **options) for _ in range(children)]
                for w in workers:
                    w.start()
                rates[name].append(rate(workers, texts, args.seconds))
                memory[name] = [_memory(w.pid) for w in workers]
                for w in workers:
                    w.close()
                print(f"  {name}: {rates[name][-1]:.1f} records/s", flush=True)
        for name, found in rates.items():
            listed = ", ".join(f"{r:.1f}" for r in found)
            print(
                f"{length} tokens, {name}: median {statistics.median(found):.1f} records/s"
                f" ({listed}); child RSS / peak {'; '.join(memory[name])}",
                flush=True,
            )


if __name__ == "__main__":
    main()
