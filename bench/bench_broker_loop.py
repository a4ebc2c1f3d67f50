"""What brokerd-shim's files cost its event loop.

Two figures:
1. grants/ per call: the full listing (scandir + a stat of every entry, what each call paid
   before) against the settled check (a stat of the folder and of each file, no listing), for a
   folder of N grant files.
2. the event loop's longest stall while C concurrent http_fetch calls go through Broker.handle on
   a real home (ledger and audit fsync'd, fixtures read): with the files on threads the heartbeat
   keeps running; the stall printed is the longest gap between 1 ms heartbeats.

    .venv/bin/python bench/bench_broker_loop.py [--grants 200] [--calls 200]
"""

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from brokerd_shim import grants as grants_module
from brokerd_shim.config import load_config
from brokerd_shim.fixtures import FixtureRuntime
from brokerd_shim.server import build_broker
from proto.messages import ToolRequest, ToolRequestMessage

REPO = Path(__file__).resolve().parents[1]
GRANT = (REPO / "config" / "grants" / "http_fetch.toml").read_text()
FIXTURES = REPO / "config" / "fixtures"


def per_call_us(fn, rounds: int) -> float:
    began = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - began) / rounds * 1e6


def grants_figures(folder: Path, count: int) -> None:
    for n in range(count):
        (folder / f"g{n:04d}.toml").write_text(GRANT)
    scan = grants_module.scan_folder(folder)
    assert scan is not None
    full = per_call_us(lambda: grants_module.scan_folder(folder), 200)
    settled = per_call_us(lambda: scan.unchanged(folder), 200)
    print(
        f"grants/ of {count} files: full listing {full:.0f} us/call, settled check "
        f"{settled:.0f} us/call ({full / settled:.1f}x)"
    )


async def stall_while(work) -> tuple[float, float]:
    longest, done = 0.0, asyncio.Event()

    async def heartbeat():
        nonlocal longest
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.monotonic()
            longest, last = max(longest, now - last), now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.01)
    began = time.monotonic()
    await work
    took = time.monotonic() - began
    done.set()
    await beat
    return longest, took


def loop_figures(home: Path, calls: int) -> None:
    (home / "grants").mkdir(mode=0o700, parents=True)
    (home / "grants" / "http_fetch.toml").write_text(GRANT)
    config_path = home / "brokerd.toml"
    config_path.write_text(f'[paths]\nhome = "{home}"\n[fixtures]\ndir = "{FIXTURES}"\n')
    broker = build_broker(load_config(config_path), FixtureRuntime(FIXTURES))
    url = '{"url": "https://example.org/notes"}'

    def message(n: int) -> ToolRequestMessage:
        return ToolRequestMessage(
            request=ToolRequest(
                session=f"mm-bench{n % 20:04d}", call_id=f"c{n}", tool="http_fetch", arguments=url
            )
        )

    async def all_calls():
        answers = await asyncio.gather(*(broker.handle(message(n)) for n in range(calls)))
        assert all(a.ok for a in answers)

    try:
        longest, took = asyncio.run(stall_while(all_calls()))
    finally:
        broker.close()
    print(
        f"{calls} concurrent calls (20 sessions): {took * 1000:.0f} ms, "
        f"longest event-loop stall {longest * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grants", type=int, default=200)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bbl", dir="/tmp"))
    try:
        (root / "grants").mkdir()
        grants_figures(root / "grants", args.grants)
        loop_figures(root / "home", args.calls)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
