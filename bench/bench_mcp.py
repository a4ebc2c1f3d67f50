"""Benchmark: recall through memory-mcp (the SDK's stdio client, JSON-RPC, memory_call) against
the same memory_call sent straight to memoryd's broker socket, on the same index.

It generates a home (bench_index's generator), starts memoryd as a subprocess on it, starts
memory-mcp with the SDK's own stdio client (and times that start: spawn, imports, the protocol's
first exchange), then runs the same queries both ways, alternating which goes first, and prints
the p50 and p99 of each and their ratio, measured in the same run. It then reads the memory block
as memory-mcp serves it (memory://block, rendered from {home}/memory/ in a worker thread) and as
memoryd gives it to loopd (memory_block on the loopd socket), alternating, and prints the same.

    .venv/bin/python bench/bench_mcp.py [--records 10000] [--queries 300]
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp_types as types
import memoryd_proc
from bench_index import Generator, percentile
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from proto.client import arequest
from proto.messages import MemoryBlock, MemoryCall, ToolRequest


async def alternate(times: dict[str, list[float]], pair, rounds: int) -> None:
    """Run the two (name, fn) of pair rounds times, alternating which goes first."""
    for n in range(rounds):
        for name, fn in pair if n % 2 else pair[::-1]:
            t0 = time.perf_counter()
            await fn(n)
            times[name].append(time.perf_counter() - t0)


async def measure(
    home: Path, queries: list[str], blocks: int
) -> tuple[float, dict[str, list[float]]]:
    sock = home / "run" / "broker-memory" / "memory.sock"
    loop_sock = home / "run" / "loop-memory" / "memory.sock"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_mcp", "--home", str(home)]
    )
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            client_info=types.Implementation(name="bench", version="1"),
        ) as client:
            await client.list_tools()
            start_seconds = time.perf_counter() - started

            async def over_mcp(text: str) -> None:
                result = await client.call_tool("recall", {"query": text, "k": 5})
                if result.is_error:
                    raise SystemExit(f"recall failed: {result.content[0].text}")

            async def direct(text: str) -> None:
                req = ToolRequest(
                    session="bench",
                    call_id="c",
                    tool="recall",
                    arguments=json.dumps({"query": text, "k": 5}),
                )
                call = MemoryCall(request=req, taint="private", untrusted=True)
                reply = await arequest(sock, call)
                if not reply.ok:
                    raise SystemExit(f"recall failed: {reply.output}")

            for text in queries[:20]:
                await over_mcp(text)
                await direct(text)

            async def block_over_mcp(_: int) -> None:
                result = await client.read_resource("memory://block")
                texts.add(result.contents[0].text)

            async def block_from_memoryd(_: int) -> None:
                texts.add((await arequest(loop_sock, MemoryBlock())).text)

            times: dict[str, list[float]] = {"mcp": [], "socket": [], "block": [], "loopd": []}
            recall_pair = (
                ("mcp", lambda n: over_mcp(queries[n])),
                ("socket", lambda n: direct(queries[n])),
            )
            await alternate(times, recall_pair, len(queries))
            texts: set[str] = set()
            block_pair = (("block", block_over_mcp), ("loopd", block_from_memoryd))
            await alternate(times, block_pair, blocks)
            if len(texts) != 1:
                raise SystemExit("memory-mcp's block differs from memoryd's")
    return start_seconds, times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--blocks", type=int, default=300)
    args = parser.parse_args(argv)
    print(f"cpus {os.cpu_count()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-mcp-", dir="/tmp") as tmp:
        generator = Generator()
        home = generator.home(Path(tmp) / "home", args.records)
        memory_md = "\n§\n".join(f"Bench fact {n}: the {n}th thing to remember." for n in range(40))
        (home.memory / "memory.md").parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        (home.memory / "memory.md").write_text(memory_md[:2_200].rsplit("\n§\n", 1)[0] + "\n")
        proc = memoryd_proc.start(Path(tmp), home)
        try:
            queries = [generator.query() for _ in range(args.queries)]
            start_seconds, times = anyio.run(measure, home.root, queries, args.blocks)
            print(
                f"memory-mcp start to first answer (spawn, imports, first exchange): "
                f"{start_seconds * 1e3:.0f} ms"
            )
            for p in (50, 99):
                m, s = percentile(times["mcp"], p), percentile(times["socket"], p)
                print(
                    f"records {args.records}: recall p{p} through memory-mcp {m * 1e3:.3f} ms, "
                    f"straight to the broker socket {s * 1e3:.3f} ms, ratio {m / s:.2f}"
                )
            for p in (50, 99):
                m, s = percentile(times["block"], p), percentile(times["loopd"], p)
                print(
                    f"memory block p{p}: memory://block through memory-mcp {m * 1e3:.3f} ms, "
                    f"memory_block on the loopd socket {s * 1e3:.3f} ms, ratio {m / s:.2f}"
                )
        finally:
            memoryd_proc.stop(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
