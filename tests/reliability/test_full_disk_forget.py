"""forget on a real full disk (a small tmpfs, the whole home on it): with 0, 1, 2 ... pages free
until it applies, each refusal says whether anything was forgotten, and says it truly. "nothing
was forgotten" leaves every file under memory/ byte for byte as it was; "stopped part way" is
finished by the same forget once there is room, after which the text is in no memory file and
recall does not return it. memoryd serves a write after every refusal."""

import shutil

import pytest

from memoryd.errors import AdminRefused
from tests.memoryd.owner_data_harness import Memoryd

from .small_disk import PAGE, fill_leaving, small_tmpfs, unfill

SECRET = "The router codename is qz1."
TARGETS = {"a note": "note:0", "an entry": "memory.md:1", "a session record": "session:s-one:0"}


def _memory_files(m: Memoryd) -> dict[str, bytes]:
    root = m.home.memory
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _home(root) -> Memoryd:
    m = Memoryd(root)
    m.call({"action": "note", "text": SECRET})
    m.call({"action": "add", "file": "memory", "text": SECRET})
    m.say("s-one", SECRET, "Noted, the codename.")
    return m


@pytest.mark.parametrize("target", list(TARGETS))
def test_a_forget_refused_on_a_full_disk_says_truly_what_it_did(target):
    ref = TARGETS[target]
    said = []
    with small_tmpfs(400 * PAGE) as disk:
        for pages in range(0, 48):
            m = _home(disk / f"home{pages}")
            try:
                if _refused(m, disk, pages, ref, said):
                    continue
            finally:
                unfill(disk)
                m.close()
                shutil.rmtree(disk / f"home{pages}")
            break
        else:
            pytest.fail(f"forget {ref} never applied: {said}")
    assert said and said[0] == "nothing", said


def _refused(m: Memoryd, disk, pages: int, ref: str, said: list[str]) -> bool:
    """The forget with pages pages free: False when it applied; else its refusal checked."""
    before = _memory_files(m)
    fill_leaving(disk, pages)
    try:
        m.admin("forget", {"id": ref})
    except AdminRefused as e:
        text = str(e)
    else:
        return False
    unfill(disk)
    if "nothing was forgotten" in text:
        said.append("nothing")
        assert _memory_files(m) == before, f"{pages} pages free: {text}"
    else:
        said.append("part way")
        assert "stopped part way" in text, text
        _again(m, ref)
        assert not any(
            SECRET.encode() in data for name, data in _memory_files(m).items() if name != "soul.md"
        ), f"{pages} pages free: the text is still in memory/ after the re-run"
        assert "qz1" not in m.recall("router codename")
    m.call({"action": "note", "text": f"still serving after {pages} pages"})
    return True


def _again(m: Memoryd, ref: str) -> None:
    """What the refusal advises, with room: the same id, or else the text's exact words, until
    memoryd says there is nothing left of it to forget."""
    for name in (ref, SECRET):
        try:
            m.admin("forget", {"id": name})
            return
        except AdminRefused as e:
            left = str(e)
    assert "names nothing to forget" in left or "already forgotten" in left, left
