"""Fake peers on a real Unix socket, each connection answered in a thread: silent, sending a
byte at a time, or stopping part way through an answer (a SIGSTOPped peer), for tests of how
long a client waits."""

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from proto.server import serve_unix

ANNOUNCED = struct.pack(">I", 500)  # a frame of 500 bytes, of which the fakes send few or none


class Peer:
    """A fake peer on a Unix socket: each connection is handed to answer(conn, stop) in a thread
    of its own; close() ends them all and removes nothing but what it opened."""

    def __init__(self, path: str, answer: Callable[[socket.socket, threading.Event], None]):
        self.path, self.answer = path, answer
        self.stop = threading.Event()
        self.conns: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(16)
        self.listener.settimeout(0.05)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.answer(conn, self.stop)
        except OSError:
            pass  # the client gave up and closed: what the tests wait for

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for thread in self.threads:
            thread.join(5)
        for conn in self.conns:
            conn.close()
        self.listener.close()


class Peers:
    """Fake peers started on sockets in folder (a test's tmp_path); close() ends them all."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.made: list[Peer] = []

    def start(self, answer: Callable[[socket.socket, threading.Event], None]) -> str:
        """A new Peer answering each connection with answer(conn, stop): its socket's path."""
        self.made.append(Peer(str(self.folder / f"p{len(self.made)}.sock"), answer))
        return self.made[-1].path

    def close(self) -> None:
        for peer in self.made:
            peer.close()


def silent(conn: socket.socket, stop: threading.Event) -> None:
    conn.recv(65536)
    stop.wait()


def trickling(every: float) -> Callable[[socket.socket, threading.Event], None]:
    """Announces a 500-byte frame and sends it a byte each `every` seconds."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        conn.recv(65536)
        conn.sendall(ANNOUNCED)
        while not stop.wait(every):
            conn.sendall(b"\x00")

    return answer


def cut_after(part: bytes) -> Callable[[socket.socket, threading.Event], None]:
    """Sends part of an answer, then nothing, the connection held open (a SIGSTOPped peer)."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        conn.recv(65536)
        conn.sendall(part)
        stop.wait()

    return answer


def ended_in(call: Callable[[], object], most: float) -> tuple[BaseException | None, float]:
    """What call() raised (None if it returned) and how long it took; a failure, without hanging
    the run, when it is still waiting after most seconds."""
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            call()
        except BaseException as e:  # handed to the test
            outcome["error"] = e

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(most)
    assert not thread.is_alive(), f"still waiting after {most:g} s"
    return outcome.get("error"), time.monotonic() - started


@contextlib.contextmanager
def served_owner(path: Path, handle, answerable: tuple) -> Iterator[None]:
    """A fake memoryd's owner socket at path (proto.server's serve_unix, reindex and
    memory_admin) on an event loop in a thread of its own, stopped when the block ends."""
    loop = asyncio.new_event_loop()
    server = loop.run_until_complete(
        serve_unix(path, handle, {"reindex", "memory_admin"}, name="fake", answerable=answerable)
    )
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
