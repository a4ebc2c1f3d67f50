"""How hybrid's chosen fusion holds when its dense half is weaker than here: on public
conversations the sentence vectors found less than on the written sets (dense alone 0.53 against
context's 0.76 on LoCoMo, 0.75 against 0.80 on the written set), and an owner's own chats may be
further still from what the model knows.

From fusion_sweep.py's cache (the same questions, every part collected once), each question's
dense top-100 scores get Gaussian noise of k times their spread, for k from 0 to 4: dense alone's
any@5 falls, and hybrid's is measured at the chosen dense weight and two lower ones. Then two
harder cases: the top 100's scores shuffled among them, and the same scores given to 100 rows of
the conversation drawn at random (a dense half that is sure and wrong). Seeded; prints one table.

    PYTHONPATH=bench .venv/bin/python bench/fusion_sweep.py --shapes "" --written --held-out \\
        --cache FILE        # collects the questions once (about 6 minutes)
    PYTHONPATH=bench .venv/bin/python bench/dense_noise.py FILE
"""

import argparse
import pickle
import random
from pathlib import Path

import fusion_sweep as fs
import numpy as np

NOISE = (0.0, 0.5, 1.0, 2.0, 4.0)
WEIGHTS = (0.25, 0.15, 0.1)  # the chosen dense weight first


def any_at_5(questions: list[dict], p: dict, shapes: list[str]) -> dict[str, float]:
    got = fs.per_question(questions, p, [{} for _ in questions])[:, 0]
    return {s: float(got[[q["shape"] == s for q in questions]].mean()) for s in shapes}


def dense_alone(questions: list[dict], shapes: list[str]) -> dict[str, float]:
    found: dict[str, list[bool]] = {s: [] for s in shapes}
    for q in questions:
        top = fs.places_of(q, sorted(q["bare"], key=lambda r: -q["bare"][r]))[:5]
        found[q["shape"]].append(bool(set(top) & set(q["question"].answers)))
    return {s: float(np.mean(v)) for s, v in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="fusion_sweep.py's --cache file")
    questions = pickle.loads(parser.parse_args().cache.read_bytes())
    shapes = list(dict.fromkeys(q["shape"] for q in questions))

    def cells(by_shape: dict[str, float]) -> str:
        return " / ".join(f"{by_shape[s]:.3f}" for s in shapes)

    print(f"any@5 ({' / '.join(shapes)})")
    print(f"spec {cells(any_at_5(questions, dict(fs.grid())['spec'], shapes))}")
    print(f"context {cells(any_at_5(questions, fs.CHOSEN_CONTEXT, shapes))}")
    print(
        "| dense half | dense alone | " + " | ".join(f"hybrid, dense {w}" for w in WEIGHTS) + " |"
    )
    print("| --- " * (2 + len(WEIGHTS)) + "|")
    rng = np.random.default_rng(7)
    picks = random.Random(7)

    def row(name: str, changed: list[dict]) -> None:
        hybrid = [any_at_5(changed, dict(fs.CHOSEN_HYBRID, wd=w), shapes) for w in WEIGHTS]
        print(
            f"| {name} | {cells(dense_alone(changed, shapes))} | "
            + " | ".join(map(cells, hybrid))
            + " |"
        )

    for k in NOISE:
        changed = []
        for q in questions:
            scores = np.array(list(q["bare"].values()))
            noisy = scores + rng.normal(0, k * (scores.std() or 1e-6), len(scores))
            changed.append(dict(q, bare=dict(zip(q["bare"], noisy.tolist(), strict=True))))
        row(f"noise {k} x spread", changed)
    shuffled = []
    for q in questions:
        values = list(q["bare"].values())
        picks.shuffle(values)
        shuffled.append(dict(q, bare=dict(zip(q["bare"], values, strict=True))))
    row("scores shuffled in its top 100", shuffled)
    drawn = []
    for q in questions:
        rows = picks.sample(list(q["key"].values()), min(len(q["bare"]), len(q["key"])))
        drawn.append(
            dict(q, bare=dict(zip(rows, sorted(q["bare"].values(), reverse=True), strict=False)))
        )
    row("its scores on 100 random rows", drawn)


if __name__ == "__main__":
    main()
