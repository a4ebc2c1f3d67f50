"""A recall says notes.md is being caught up when it was as the search began: the last part of
notes.md may be committed, and notes_behind cleared, between the search's snapshot and a look
after the search, which would leave an answer without the last notes and without the line."""

from memoryd.index.index import Index
from tests.memoryd.test_index_reread_swap import _home
from tests.recalling import recall_on


def test_a_recall_says_notes_md_is_caught_up_when_it_was_as_the_search_began(tmp_path, monkeypatch):
    home = _home(tmp_path)
    index = Index(home)
    index.open()
    try:
        index.catch_up_session("long")
        index.notes_behind = (10, 100)

        def cleared_during(live_search):
            def run(conn, parsed, k):
                index.notes_behind = None  # the last part committed during the search
                return live_search(conn, parsed, k)

            return run

        live = index.live
        monkeypatch.setattr(live, "search", cleared_during(live.search))
        out = recall_on(index, "marmalade", 5, session="probe").text
        assert "catching up with memory/notes.md" in out
    finally:
        index.close()
