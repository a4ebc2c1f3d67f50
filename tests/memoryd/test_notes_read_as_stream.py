"""notes.md has no limit (one import adds up to 64 MiB): stats, forget's marking of a note and a
restore's leaving out of a forgotten note read it a note at a time and write it as a stream, so
the memory they take stays about a chunk and a note however big it grows, and what they say and
write is what reading the file whole gave."""

import datetime as dt
import random
import tracemalloc
from collections import deque

from memoryd.data import erasing, leftout, notesclaim, places
from memoryd.home import Home
from memoryd.journal import forgotten, forgottenmarker
from memoryd.memory import notes
from memoryd.owner import stats
from memoryd.owner.recallcounts import why

NOW = dt.datetime(2026, 9, 24, 12, tzinfo=dt.UTC)
MARKER = forgottenmarker.marker("2026-09-24T12:00Z")
PIECES = [
    "§ noted 2026-09-24T21:02Z in session mm-a · private\n".encode(),
    "§ moved 2026-09-24T20:14Z from memory.md in session mm-c\n".encode(),
    "§ dropped 2026-02-30T20:14Z from user.md in session mm-d\n".encode(),
    "§ damaged header, no time at all\n".encode(),
    b"\xa7 a header saved as Latin-1\n",
    "\\§ an escaped line of text\n".encode(),
    b"text with a damaged byte \xff\n",
    b"cr\rin\r\n",
    b"\xef\xbb\xbf",
    b"apricots\n",
    b"plain text\n",
    b"\n",
]


def _home(tmp_path, data: bytes) -> Home:
    home = Home(tmp_path / "home")
    home.memory.mkdir(parents=True, exist_ok=True)
    home.memory_file("notes.md").write_bytes(data)
    return home


def _whole_said(data: bytes) -> list[str]:
    """What stats said of notes.md when it read it whole."""
    parsed = notes.parse(data)
    said = [notes.not_utf8(data), notes.leading_said(data)]
    return [s for s in said if s is not None] + [
        notes.damage_said(n, data) for n in parsed if n.damaged
    ]


def _whole_marked(data: bytes, numbers: list[int]) -> tuple[bytes, list[tuple[int, int]]]:
    """notes.md as forget marked it when it read it whole."""
    out, last, shifts = [], 0, []
    for note in notes.parse(data):
        if note.number not in numbers:
            continue
        header_end = data.index(b"\n", note.start) + 1
        body = MARKER.encode() + b"\n"
        out += [data[last:header_end], body]
        shifts.append((note.end, len(body) - (note.end - header_end)))
        last = note.end
    out.append(data[last:])
    return b"".join(out), shifts


def test_stats_says_of_notes_md_read_a_note_at_a_time_what_it_said_of_it_whole(tmp_path):
    from memoryd.owner import statsnotes

    rng = random.Random(21)
    for n in range(300):
        data = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        home = _home(tmp_path / str(n), data)
        got = statsnotes.read(home, {"apricots"}, why)
        parsed = notes.parse(data)
        assert got.unread == _whole_said(data), data
        assert got.moved == [p for p in parsed if p.kind == "moved"]
        assert got.holding == {p.number: p.text for p in parsed if p.text == "apricots"}


def test_forget_marks_a_note_read_as_a_stream_byte_for_byte_as_read_whole(tmp_path):
    rng = random.Random(22)
    done = 0
    for n in range(400):
        data = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
        if b"\r" in data.replace(b"\r\n", b""):  # a lone CR: the old reading cut no header there
            continue
        numbers = [p.number for p in notes.parse(data) if p.text == "apricots"]
        if not numbers or not data.endswith(b"\n"):
            continue
        home = _home(tmp_path / str(n), data)
        erasing.check_notes(home, numbers, ["apricots"])
        shifts = erasing.mark_notes(home, numbers, ["apricots"], MARKER)
        want, want_shifts = _whole_marked(data, numbers)
        assert home.memory_file("notes.md").read_bytes() == want, data
        assert shifts == want_shifts
        done += 1
    assert done > 20


def _big_notes(size: int) -> tuple[bytes, int]:
    """A notes.md of about size bytes; the number of a note that reads "apricots"."""
    note = "§ noted 2026-09-24T21:02Z in session mm-a · private\n".encode()
    body = b"A note about the weather, the tea and the garden, long enough to count.\n" * 24
    count = size // (len(note) + len(body))
    middle = count // 2
    parts = [note + (b"apricots\n" if i == middle else body) for i in range(count)]
    return b"".join(parts), middle


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


BIG = 12 << 20
BOUND = 6 << 20  # a chunk of 1 MiB read, its lines, one note, and a few bytes a note for stats


def test_stats_forget_and_restore_hold_far_less_than_a_big_notes_md(tmp_path):
    data, middle = _big_notes(BIG)
    home = _home(tmp_path, data)
    assert _peak(lambda: stats.collect(home, 30, NOW)) < BOUND
    assert _peak(lambda: deque(places.notes_of(home), maxlen=1)) < BOUND
    assert _peak(lambda: erasing.check_notes(home, [middle], ["apricots"])) < BOUND
    assert _peak(lambda: erasing.mark_notes(home, [middle], ["apricots"], MARKER)) < BOUND
    after = home.memory_file("notes.md").read_bytes()
    assert after == _whole_marked(data, [middle])[0]
    del after
    restored = _home(tmp_path / "staged", data)
    digests = {forgotten.digest("apricots")}
    peak = _peak(lambda: leftout.leave_out(restored, digests, "2026-09-24T12:00Z", NOW))
    assert peak < BOUND
    assert restored.memory_file("notes.md").read_bytes() == _whole_marked(data, [middle])[0]


def test_a_restore_makes_a_header_strict_in_a_big_notes_md_as_a_stream(tmp_path):
    """A restore's check of notes.md's headers against the archive's journal (notesclaim) reads
    it a note at a time for each pass and writes the stricter header as it reads it."""
    from tests.memoryd.owner_data_harness import Memoryd

    m = Memoryd(tmp_path / "home")
    try:
        m.call({"action": "note", "text": "The beta stays open."}, tainted=True)
    finally:
        m.close()
    path = m.home.memory_file("notes.md")
    written = path.read_bytes()
    assert b" \xc2\xb7 untrusted\n" in written
    laxer = written.replace(" · untrusted\n".encode(), b"\n", 1)
    big, _ = _big_notes(BIG)
    path.write_bytes(laxer + big)
    strict = notesclaim.make_strict(m.home)
    assert [number for number, _, _ in strict.made] == [0]
    assert path.read_bytes() == written + big
    path.write_bytes(laxer + big)
    assert _peak(lambda: notesclaim.make_strict(m.home)) < BOUND
    assert path.read_bytes() == written + big


def test_forget_reads_an_archives_big_notes_md_a_note_at_a_time(tmp_path):
    """forget names the archives in backups/ that may hold its text (archiveheld), reading an
    archive's notes.md as memoryd reads it: a note at a time, never the member whole."""
    import io
    import tarfile

    from memoryd.data import archiveheld, layout

    home = _home(tmp_path, b"")
    data, _ = _big_notes(BIG)
    layout.backups(home).mkdir(parents=True, exist_ok=True)
    name = "memory-20261205T120000Z" + archiveheld.ARCHIVE_END
    with tarfile.open(layout.backups(home) / name, "w:gz") as tar:
        info = tarfile.TarInfo("memory/notes.md")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    del data
    found: list[list[str]] = []
    bound = BOUND + (2 << 20)  # and the archive's reader: gzip's and tarfile's buffers
    assert _peak(lambda: found.append(archiveheld.holding(home, ["apricots"]))) < bound
    assert _peak(lambda: found.append(archiveheld.holding(home, ["no such note"]))) < bound
    assert found == [[name], []]


def test_promote_finds_its_note_in_a_big_notes_md_a_note_at_a_time(tmp_path):
    """promote looks for the note it names a note at a time, never holding notes.md whole."""
    from tests.memoryd.owner_data_harness import Memoryd

    m = Memoryd(tmp_path / "home")
    try:
        data, _ = _big_notes(BIG)
        with open(m.home.memory_file("notes.md"), "ab") as f:
            f.write(data)
        del data
        said: list[str] = []
        run = lambda: said.append(m.admin("promote", {"ref": "apricots", "file": "memory"}))  # noqa: E731
        assert _peak(run) < BOUND
        assert said[0].startswith("promoted note:")
        assert "apricots" in m.home.memory_file("memory.md").read_text()
    finally:
        m.close()
