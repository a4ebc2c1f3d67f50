"""notes.md read as a stream: its entries one at a time from its bytes in chunks, never whole.

notes.md has no size limit (spec 3): memoryd appends to it for as long as the home lives, and one
import adds up to 64 MiB. A reader that must see every note (an export) holds only the note it
is at: the chunks are cut into whole lines, the lines gathered until the next header line, and
that note's bytes parsed by notes.parse itself, so that a note reads here exactly as it does
everywhere else (its numbering, byte span, damaged headers, the escapes of its text).

A damaged header with no real time takes the time of the note before it (notes._damaged): such a
note's bytes are parsed after a header line giving that time, which is then dropped.
"""

from collections.abc import Iterable, Iterator

from memoryd.memory import notes

CHUNK = 1 << 20  # bytes read of notes.md at a time


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of chunks, each with its newline (the last may have none); a line torn by a
    chunk's end is carried into the next."""
    pending: list[bytes] = []
    for chunk in chunks:
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            pending.append(chunk)  # a line longer than a chunk: held until its newline
            continue
        whole = b"".join([*pending, chunk[:cut]]) if pending else chunk[:cut]
        pending = [chunk[cut:]] if cut < len(chunk) else []
        yield from _split(whole)
    if pending:
        yield from b"".join(pending).splitlines(keepends=True)


def _split(whole: bytes) -> Iterator[bytes]:
    """whole's lines as notes.parse cuts them (bytes.splitlines: a lone CR ends a line too)."""
    if b"\r" in whole:
        yield from whole.splitlines(keepends=True)
        return
    start = 0
    while start < len(whole):
        end = whole.index(b"\n", start) + 1
        yield whole[start:end]
        start = end


# "§" in UTF-8, and in a line read as Windows-1252 (notes.decode_line): a line that begins with
# neither cannot read as beginning with "§", and is not decoded to tell.
_SECTION = (b"\xc2\xa7", b"\xa7")


def _starts_note(raw: bytes) -> bool:
    """Whether notes.parse starts a note at the line raw, past the file's first line (where a
    byte-order mark is read as nothing): a line beginning with "§", a header or a damaged one."""
    return raw.startswith(_SECTION) and notes.decode_line(raw).startswith("§")


def entries(chunks: Iterable[bytes]) -> Iterator[notes.NoteEntry]:
    """The entries of notes.md, given as chunks of its bytes from its start, one at a time: the
    same entries notes.parse gives of the whole file."""
    for _, _, found in blocks(chunks):
        yield from found


def blocks(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes, list[notes.NoteEntry]]]:
    """notes.md, given as chunks of its bytes from its start, cut before each line that starts a
    note: each piece's byte offset, its bytes and the entries notes.parse gives of it there (one;
    none for text before the first header). The pieces' bytes joined are the file's, so a reader
    that rewrites a note (forget's marker) or says where a line is holds one note at a time."""
    number = 0
    before: notes.NoteEntry | None = None
    for start, data in pieces(chunks):
        found = _parse(data, start, number, before)
        if found:
            number, before = found[-1].number + 1, found[-1]
        yield start, data, found


def pieces(chunks: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """notes.md, given as chunks of its bytes from its start, cut before each line that starts a
    note, unparsed: each piece's byte offset and its bytes. Every piece but the first is one note;
    the first is one note or the text before the first header."""
    block: list[bytes] = []
    start = position = 0
    for raw in _lines(chunks):
        if block and _starts_note(raw):
            yield start, b"".join(block)
            block, start = [], position
        block.append(raw)
        position += len(raw)
    if block:
        yield start, b"".join(block)


def file_chunks(f, size: int = CHUNK) -> Iterator[bytes]:
    """The bytes of the open file f from where it stands, in chunks of size."""
    while chunk := f.read(size):
        yield chunk


def damage_said(entry: notes.NoteEntry, data: bytes, start: int, lines_before: int) -> str:
    """notes.damage_said of the damaged entry, which starts the piece data at byte start of the
    file after lines_before lines, in the words it gives when handed the whole file (the line
    number), from the piece alone."""
    said = notes.damage_said(entry, data, start)
    return said.replace(f"notes.md byte {entry.start}:", f"notes.md line {lines_before + 1}:", 1)


def _parse(
    data: bytes, start: int, number: int, before: notes.NoteEntry | None
) -> list[notes.NoteEntry]:
    """notes.parse of data (the file's bytes from start, numbered from number) as if the note
    before were above it. Only a damaged header reads that note (its time, notes._damaged), so
    data is parsed again after a header line giving that time only when it starts with one."""
    found = notes.parse(data, start, number)
    if before is None or not found or not found[0].damaged:
        return found
    above = notes.header_line("noted", before.time, "owner", "private").encode() + b"\n"
    return notes.parse(above + data, start - len(above), number - 1)[1:]


def header_end(data: bytes, at: int) -> int:
    """Where the header line at byte at of a note's bytes ends: after its first newline; a note
    with none (its header ended by a lone CR and nothing after it, or the file's last line
    unended) keeps its header's first line, and what replaces its text (forget's marker) follows
    it."""
    end = data.find(b"\n", at)
    if end != -1:
        return end + 1
    return at + len(data[at:].splitlines(keepends=True)[0])
