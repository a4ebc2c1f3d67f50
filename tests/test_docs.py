"""The docs a newcomer reads first stay true to the code: the README's layout of memoryd's rooms
names every module there and no other, and docs/settings.md lists every key each role accepts,
with the defaults the code uses.
"""

import re
from pathlib import Path

import pytest

import brokerd_shim.config
import loopd_shim.config
import memoryd
import memoryd.config
from memoryd.index.indexer import RECORD_BYTES

ROOT = Path(__file__).resolve().parents[1]
MEMORYD = Path(memoryd.__file__).parent


def _layout_rooms() -> dict[str, set[str]]:
    """From the README's Layout block: memoryd's folders (relative) and the modules each names."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("## Layout") :]
    texts: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        head = re.match(r"^    (services/memoryd/|  [a-z_]+/)\s+(.*)$", line)
        if head:
            current = "" if head.group(1).startswith("services") else head.group(1).strip()
            texts[current] = head.group(2)
        elif current is not None and re.match(r"^ {20,}\S", line):
            texts[current] += " " + line.strip()
        else:
            current = None
    rooms = {}
    for room, text in texts.items():
        names = text.split(":", 1)[1] if ":" in text else text
        names = re.sub(r"\([^)]*\)", "", names)
        rooms[room] = set(re.findall(r"[a-z_][a-z_0-9]*", names))
    return rooms


def _modules(folder: Path) -> set[str]:
    return {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}


def test_the_readme_layout_names_every_memoryd_room_and_module():
    rooms = _layout_rooms()
    folders = {
        p.name + "/" for p in MEMORYD.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }
    assert set(rooms) - {""} == folders
    for room, named in rooms.items():
        assert named == _modules(MEMORYD / room), room or "services/memoryd/"


def _settings_table(role_file: str) -> dict[str, str]:
    """`[section] key` -> default, from the table under the heading naming role_file."""
    text = (ROOT / "docs/settings.md").read_text()
    part = text[text.index(f"## {role_file}") :]
    part = part[: part.find("\n## ", 4)] if "\n## " in part[4:] else part
    rows = re.findall(r"^\| `\[([a-z_]+)\] ([a-z_]+)` \| ([^|]*) \|", part, re.M)
    return {f"[{section}] {key}": default.strip() for section, key, default in rows}


@pytest.mark.parametrize(
    "role_file, sections",
    [
        ("memoryd.toml", memoryd.config.SECTIONS),
        ("loopd.toml", loopd_shim.config._SECTIONS),
        ("brokerd.toml", brokerd_shim.config.SECTIONS),
    ],
)
def test_the_settings_reference_lists_every_key_a_role_accepts(role_file, sections):
    documented = set(_settings_table(role_file))
    accepted = {f"[{section}] {key}" for section, keys in sections.items() for key in keys}
    assert documented == accepted


def test_the_settings_reference_states_the_defaults_the_code_uses():
    table = _settings_table("memoryd.toml")
    limits = memoryd.config.Limits()
    expected = {
        "[memory] write_deadline": memoryd.config.WRITE_DEADLINE,
        "[index] max_record_bytes": RECORD_BYTES,
        "[limits] loop_connections": limits.loop_connections,
        "[limits] broker_connections": limits.broker_connections,
        "[limits] admin_connections": limits.admin_connections,
        "[limits] request_seconds": limits.request_seconds,
        "[limits] reply_seconds": limits.reply_seconds,
    }
    for key, value in expected.items():
        assert float(table[key].strip("`")) == value, key
    broker = _settings_table("brokerd.toml")
    assert (
        float(broker["[memory] timeout_seconds"].strip("`")) == brokerd_shim.config.MEMORY_TIMEOUT
    )


def test_every_readme_section_the_docs_point_to_is_there():
    """The runbook, the docs and the shipped settings send the owner to `README "SECTION"`: each
    such section is a heading of the README (a missing one leaves the owner with nowhere to go)."""
    headings = set(re.findall(r"^#+ +(.+?) *$", (ROOT / "README.md").read_text(), re.M))
    missing = []
    for folder in ("README.md", "docs", "runbook", "config"):
        place = ROOT / folder
        for path in [place] if place.is_file() else sorted(place.rglob("*")):
            if path.suffix not in (".md", ".toml"):
                continue
            for title in re.findall(r'README "([^"]+)"', path.read_text(encoding="utf-8")):
                if title not in headings:
                    missing.append(f"{path.relative_to(ROOT)}: README {title!r}")
    assert missing == []
