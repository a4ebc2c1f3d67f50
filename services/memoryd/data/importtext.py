"""Whether an import file is UTF-8, said before any of its lines is read as JSON.

An export is UTF-8 JSON lines (docs/export-format.md). A file passed through Windows (Notepad's
"Unicode", PowerShell 5's ">") comes back UTF-16 with a byte order mark: json.loads guesses the
encoding of its first line from the mark, and every later line, cut at the byte "\\n", starts with
a NUL, so the owner was sent to a line their editor shows as valid. The encoding is named instead.
The check decodes the file in pieces and keeps none of the text, so an import still holds its file
once (importing.Items).
"""

import codecs

from memoryd.errors import AdminRefused

PIECE = 1 << 20
SAVE = "save it as UTF-8 and import it again; nothing was imported"
# The longer marks first: UTF-32's little-endian mark starts with UTF-16's.
MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def text_start(data: bytes) -> int:
    """Where the text of an export starts (past a UTF-8 byte order mark, which editors add);
    AdminRefused naming the encoding when data is not UTF-8."""
    for mark, name in MARKS:
        if data.startswith(mark):
            raise AdminRefused(
                f"refused: the export is not UTF-8: it starts with a {name} byte order mark "
                f'(as Notepad\'s "Unicode" and PowerShell 5 save a file); {SAVE}'
            )
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    nul = data.find(b"\x00", start)
    if nul >= 0:  # valid UTF-8, but never in JSON text: what UTF-16 without its mark is made of
        raise AdminRefused(
            f"refused: the export is not UTF-8 text: line {_line(data, nul)} holds a NUL byte, "
            f"as UTF-16 or UTF-32 does; {SAVE}"
        )
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    at = start
    try:
        while at < len(data):
            decoder.decode(view[at : at + PIECE], final=at + PIECE >= len(data))
            at += PIECE
    except UnicodeDecodeError as e:
        # e.start counts from the bytes the decoder held back from the piece before
        bad = max(start, min(at + e.start - len(decoder.getstate()[0]), len(data) - 1))
        raise AdminRefused(
            f"refused: the export is not UTF-8: line {_line(data, bad)} holds byte "
            f"0x{data[bad]:02x}, which UTF-8 has not there (an export re-saved in another "
            f"encoding?); {SAVE}"
        ) from None
    return start


def _line(data: bytes, at: int) -> int:
    return data.count(b"\n", 0, at) + 1
