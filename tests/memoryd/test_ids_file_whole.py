"""memory/.ids.json (the last ids handed out) is replaced whole, never rewritten in place: a
reader (or a kill) at any moment finds the old ids or the new, never an empty or half file."""

import json
import threading

from tests.memoryd.owner_data_harness import Memoryd


def test_the_ids_file_is_never_seen_half_written(tmp_path):
    md = Memoryd(tmp_path / "home")
    path = md.home.memory / ".ids.json"
    seen_bad: list[bytes] = []
    done = threading.Event()

    def read_all_along() -> None:
        while not done.is_set():
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            try:
                value = json.loads(data)
            except ValueError:
                seen_bad.append(data)
                continue
            if not isinstance(value, dict) or not isinstance(value.get("edit"), dict):
                seen_bad.append(data)

    reader = threading.Thread(target=read_all_along)
    reader.start()
    try:
        for n in range(300):
            md.call({"action": "note", "text": f"note number {n}"})
    finally:
        done.set()
        reader.join()
        md.close()
    assert seen_bad == []
    assert list(json.loads(path.read_bytes())["edit"].values()) == [300]
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []
