"""The hybrid embedder's rate on texts of mixed lengths: batches of 32 (as the background
embedder takes them) run as one padded group, as before, or in groups of embed.GROUP texts
sorted by length, as now. Same texts, same process, alternated.

    .venv/bin/python bench/bench_embed.py [--texts 512]

The texts: turns of a generated conversation (recall_eval), three in ten repeated 2 to 8 times
to make the longer memories an owner's notes and pasted passages are (seeded).
"""

import argparse
import random
import time

import numpy as np
from recall_eval.conversations import conversation

from memoryd.modes import embed
from memoryd.modes.hybrid import EMBED_BATCH


def texts(count: int) -> list[str]:
    rng = random.Random(1)
    turns = [text for seed in (5, 6) for s in conversation(seed).sessions for _, text in s.turns]
    mixed = [t if rng.random() < 0.7 else " ".join([t] * rng.randint(2, 8)) for t in turns]
    return mixed[:count]


def rate(embedder: embed.Embedder, batch: list[str], group: int) -> tuple[float, np.ndarray]:
    embed.GROUP = group
    started = time.perf_counter()
    vectors = np.concatenate(
        [embedder.embed(batch[i : i + EMBED_BATCH]) for i in range(0, len(batch), EMBED_BATCH)]
    )
    return len(batch) / (time.perf_counter() - started), vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=512)
    batch = texts(parser.parse_args().texts)
    embedder = embed.shared()
    now = embed.GROUP
    embedder.embed(batch[:8])  # warm
    rates: dict[str, list[float]] = {"one padded group of 32": [], f"groups of {now}": []}
    for _ in range(2):
        before, old = rate(embedder, batch, EMBED_BATCH)
        after, new = rate(embedder, batch, now)
        rates["one padded group of 32"].append(before)
        rates[f"groups of {now}"].append(after)
    embed.GROUP = now
    lengths = sorted(len(t) for t in batch)
    median = lengths[len(lengths) // 2]
    print(f"{len(batch)} texts, {lengths[0]} to {lengths[-1]} characters (median {median})")
    for name, found in rates.items():
        print(f"{name}: " + ", ".join(f"{r:.0f}" for r in found) + " texts/s")
    print(
        f"lowest cosine between the two ways' vectors: {float((old * new).sum(axis=1).min()):.6f}"
    )


if __name__ == "__main__":
    main()
