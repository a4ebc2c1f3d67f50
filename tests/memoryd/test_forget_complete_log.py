"""The journal line of a forget that changed no memory file (a session record, a text only the index
or the recall log held) is listed by log, log --json and show in words: what was forgotten (the id
given, never the text) and that no memory file held it, never the Python word None."""

import json
import shutil

import pytest

from tests.memoryd.owner_data_harness import Memoryd


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()
    shutil.rmtree(tmp_path / "home", ignore_errors=True)


@pytest.mark.parametrize("ref", ["session:one:0", "The door code is 5521."])
def test_log_and_show_say_in_words_what_a_forget_of_no_file_took(md, ref):
    md.say("one", "The door code is 5521.", "ok")
    md.data("forget", id=ref)
    line = md.admin("log", "1").splitlines()[-1]
    edit_id = line.split()[0]
    item = json.loads(md.admin("log", {"n": 1, "json": True}))["edits"][-1]
    show = md.admin("show", {"id": edit_id})
    for said in (line, item["where"], show):
        assert "None" not in said, said
    assert line.endswith(item["where"])
    assert "held in no memory file" in item["where"]
    named = "record 0 of session one (session:one:0)" if ref.startswith("session") else "a text"
    assert named in item["where"]
    assert f"forgot    {item['where']}" in show.splitlines()
    assert "file      none" in show.splitlines()
