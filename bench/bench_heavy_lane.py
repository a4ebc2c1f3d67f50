"""A light recall beside heavy ones: what a session waits for when others recall with a long
query of common words (a pasted paragraph: seconds each at a million records).

Builds a home of N session records (bench_recall's Zipf generator), starts memoryd as a process,
times one heavy recall alone and one rare-word recall alone, then sends H heavy recalls at once
(each from a session of its own) and times a rare-word recall beside them. memoryd weighs each
recall before it searches and runs the heavy ones in a lane of their own
(services/memoryd/recall/heaviness.py), so the light one should wait for none of them.

    PYTHONPATH=bench .venv/bin/python bench/bench_heavy_lane.py --records 500000 --heavy 8
"""

import argparse
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path

import memoryd_proc
from bench_recall import ZipfGenerator

from memoryd.index.index import Index
from proto.client import request
from proto.messages import MemoryCall, ToolRequest, ToolResponse


def _recall(socket: Path, session: str, query: str) -> tuple[float, bool]:
    """Seconds to the answer, and whether it was one (not a refusal)."""
    call = ToolRequest(
        session=session, call_id="c", tool="recall", arguments=json.dumps({"query": query, "k": 5})
    )
    started = time.perf_counter()
    reply = request(socket, MemoryCall(request=call, taint="private", untrusted=False), timeout=600)
    return time.perf_counter() - started, isinstance(reply, ToolResponse) and reply.ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--heavy", type=int, default=8)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-heavy-lane-"))
    proc = None
    try:
        gen = ZipfGenerator()
        home = gen.home(tmp / "home", args.records)
        index = Index(home)
        index.open()
        index.reindex()
        index.close()
        proc = memoryd_proc.start(tmp, home, wait=("broker",))
        socket = memoryd_proc.sockets(home)["broker"]
        heavy = " ".join(gen.words[:200])[:500]
        _recall(socket, "warm", gen.words[-5])
        alone, _ = _recall(socket, "warm", heavy)
        light_alone, _ = _recall(socket, "light", gen.words[-2])
        took: list[float] = []
        threads = [
            threading.Thread(target=lambda i=i: took.append(_recall(socket, f"s{i}", heavy)[0]))
            for i in range(args.heavy)
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.3)
        light, answered = _recall(socket, "light", gen.words[-3])
        for thread in threads:
            thread.join()
        print(f"records {args.records:,}; a {len(heavy)}-character query of common words")
        print(f"  heavy recall alone      {alone * 1000:8.0f} ms")
        print(f"  rare-word recall alone  {light_alone * 1000:8.0f} ms")
        print(
            f"  rare-word recall beside {args.heavy} heavy ones {light * 1000:8.0f} ms "
            f"({'answered' if answered else 'refused'}); the heavy ones "
            f"{min(took):.1f} to {max(took):.1f} s"
        )
    finally:
        if proc is not None:
            memoryd_proc.stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
