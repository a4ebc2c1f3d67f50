"""With recall, a rebuilt index and a restore taking forgotten rows as the indexer does
(keptout.hiding, keptout.rows_condition): a new log of a forgotten record's session name is
found by search and recall, and stays through a reindex; the forgotten text stays out."""

import shutil

import pytest

from tests.memoryd.owner_data_harness import Memoryd

OLD = "My old locker code is 1234."
NEW = "The garden needs watering every Sunday evening."


@pytest.fixture
def md(tmp_path):
    m = Memoryd(tmp_path / "home")
    yield m
    m.close()


def test_a_new_log_under_a_forgotten_number_is_recalled_and_survives_a_reindex(md):
    md.say("monday", OLD, "Noted.")
    md.data("forget", id="session:monday:0")
    shutil.rmtree(md.home.session_log("monday").parent)
    md.service._writer.submit(0, md.index.drop_removed, []).result()
    md.say("monday", NEW, "I will remind you about the garden.")
    for _ in range(2):
        assert "the owner said" in md.admin("search", {"query": "garden watering", "k": 10})
        assert NEW in md.recall("garden watering")
        md.say("tuesday", OLD, "Noted.")
        assert md.recall("locker").startswith("(no matches")
        md.index.reindex()
