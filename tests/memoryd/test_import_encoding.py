"""An import file that is not UTF-8 is refused naming its encoding, before any line is read as
JSON; one with a UTF-8 byte order mark (as editors save) imports as any other."""

import codecs
import json

import pytest

from memoryd.data import importtext
from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

HEAD = {"format": "boxmaker-memory-export", "version": 1}
PROV = {
    "file": "user.md",
    "session": "s1",
    "edit": None,
    "time": "2026-12-01T15:33:39Z",
    "class": "private",
    "untrusted": False,
}
ENTRY = {"kind": "entry", "file": "user.md", "text": "Owner likes green tea.", "provenance": PROV}
TEXT = "\r\n".join(json.dumps(x, ensure_ascii=False) for x in (HEAD, ENTRY)) + "\r\n"


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def hand(m: Memoryd, data: bytes) -> str:
    (m.home.root / "backups" / "in.jsonl").write_bytes(data)
    return "in.jsonl"


def files(m: Memoryd) -> dict:
    return {p: p.read_bytes() for p in m.home.memory.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("encoding", "said"),
    [
        ("utf-16", "it starts with a UTF-16 byte order mark"),
        ("utf-16-be", "line 1 holds a NUL byte, as UTF-16 or UTF-32 does"),
        ("utf-32", "it starts with a UTF-32 byte order mark"),
    ],
)
def test_an_export_saved_in_another_unicode_encoding_is_refused_naming_it(md, encoding, said):
    data = TEXT.encode(encoding)
    if encoding == "utf-16":  # Windows writes the little-endian mark
        data = codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le")
    before = files(md)
    for dry_run in (True, False):
        with pytest.raises(AdminRefused) as refused:
            md.admin("import", {"name": hand(md, data), "dry_run": dry_run})
        line = str(refused.value)
        assert line.startswith("refused: the export is not UTF-8") and said in line, line
        assert line.endswith("save it as UTF-8 and import it again; nothing was imported")
        assert "\n" not in line
    assert files(md) == before


def test_an_export_in_latin_1_is_refused_naming_the_line_and_byte(md):
    text = TEXT.replace("green tea", "th\u00e9 vert")
    with pytest.raises(AdminRefused, match=r"not UTF-8: line 2 holds byte 0xe9, which UTF-8"):
        md.admin("import", {"name": hand(md, text.encode("latin-1"))})


def test_an_export_with_a_utf8_byte_order_mark_imports(md):
    md.admin("import", {"name": hand(md, codecs.BOM_UTF8 + TEXT.encode())})
    assert "Owner likes green tea." in md.home.memory_file("user.md").read_text()


@pytest.mark.parametrize("piece", [1, 2, 3, 5])
def test_a_bad_byte_is_found_where_it_is_whatever_the_pieces(monkeypatch, piece):
    monkeypatch.setattr(importtext, "PIECE", piece)
    good = "h\u00e9\u4f1a\U0001f5d3\n".encode()
    assert importtext.text_start(codecs.BOM_UTF8 + good * 3) == 3
    for bad in (b"\xff", b"\xe4\xbc", b"\xc3("):
        data = good + good + b"x" + bad + good
        with pytest.raises(AdminRefused, match=f"line 3 holds byte 0x{bad[0]:02x}"):
            importtext.text_start(data)
