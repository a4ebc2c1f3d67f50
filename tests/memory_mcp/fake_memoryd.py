"""A stand-in for memoryd's broker and loopd sockets that records every frame it gets.

memory-mcp should only ever send memory_call on the broker socket; the loopd socket is served too
(memory_block answered with a fixed block), so that a memory-mcp that asked it would succeed and be
seen doing so in `received`. mode "answer" replies to a memory_call with a fixed tool_response;
"hang" accepts connections and never replies; "error" replies with an error message; "wrong"
replies with a kind no request is answered with; "slow" answers as "answer" does, SLOW seconds
late; "close" closes the connection without a reply.

Watcher listens on a socket path memory-mcp must never connect to, and counts the connections.
"""

import socket
import struct
import threading
import time
from pathlib import Path

from proto.frames import decode_payload, encode_frame

BLOCK = "# soul.md\nfake\n"
ERROR_TEXT = "memory_call: request.session: the pattern does not match"
SLOW = 1.0


def _recv(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


class FakeMemoryd:
    def __init__(self, home: Path, mode: str = "answer"):
        self.mode = mode
        self.received: list[tuple[str, dict]] = []
        self.held: list[socket.socket] = []
        self.listeners = []
        for folder in ("broker-memory", "loop-memory"):
            path = home / "run" / folder / "memory.sock"
            path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(str(path))
            listener.listen(16)
            self.listeners.append(listener)
            threading.Thread(target=self._serve, args=(listener,), daemon=True).start()

    def _serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                (length,) = struct.unpack(">I", _recv(conn, 4))
                kind, body = decode_payload(_recv(conn, length))
                self.received.append((kind, body))
                if self.mode == "hang":
                    self.held.append(conn)
                    continue
                if self.mode == "slow":
                    time.sleep(SLOW)
                if self.mode == "close":
                    pass
                elif self.mode == "error":
                    conn.sendall(encode_frame("error", {"text": ERROR_TEXT}))
                elif self.mode == "wrong":
                    conn.sendall(encode_frame("ok", {}))
                elif kind == "memory_block":
                    conn.sendall(encode_frame("memory_block_reply", {"text": BLOCK}))
                else:
                    call_id = body["request"]["call_id"]
                    reply = {"call_id": call_id, "ok": True, "output": "fake answer", "label": None}
                    conn.sendall(encode_frame("tool_response", reply))
                conn.close()
            except (OSError, ConnectionError, ValueError):
                conn.close()

    def close(self) -> None:
        for s in self.listeners + self.held:
            s.close()


class Watcher:
    def __init__(self, path: Path):
        self.connections = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(16)
        threading.Thread(target=self._count, daemon=True).start()

    def _count(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.listener.close()
