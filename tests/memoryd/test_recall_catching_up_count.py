"""The note a recall adds while the start's catch-up runs writes its counts as stats and status do
("1,234 of 5,000 session logs read"): the owner and the model read the same figure the same way.
Real home, real SQLite."""

from pathlib import Path

from memoryd.owner import indexstate
from tests.memoryd.owner_data_harness import Memoryd


def test_the_catching_up_note_has_thousands_separators(tmp_path: Path):
    m = Memoryd(tmp_path / "home")
    try:
        m.say("alpha", "the lighthouse keeper")
        m.index.catching_up = (1234, 5000)
        said = m.recall("lighthouse")
        assert (
            said.splitlines()[-1] == "(the index is catching up: 1,234 of 5,000 session logs read)"
        )
        # the same figure as stats says it
        found = indexstate.state(m.index, [])
        assert indexstate.lines(found) == ["index: catching up, 1,234 of 5,000 session logs read"]
    finally:
        m.index.catching_up = None
        m.close()
