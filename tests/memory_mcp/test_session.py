"""Session ids built from whatever name a client gives, and the state that only gets stricter."""

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from memory_mcp.session import SessionState, session_id, start_time
from proto.labels import Label
from proto.messages import is_session_id

WHEN = datetime(2026, 11, 30, 6, 13, 16, 482_913, tzinfo=UTC)


def test_a_plain_name_reads_as_it_is():
    assert session_id("claude-desktop", WHEN) == "mcp-claude-desktop-20261130T061316-482Z"


def test_start_time_is_utc_whatever_the_zone():
    paris = WHEN.astimezone(timezone(timedelta(hours=1)))
    assert start_time(paris) == "20261130T061316-482Z"


def test_names_outside_the_alphabet_are_cut_to_it():
    assert session_id("Claude Desktop/0.9 (beta)", WHEN).startswith("mcp-Claude-Desktop-0-9-beta-")
    assert session_id("../../etc/passwd", WHEN).startswith("mcp-etc-passwd-")
    assert session_id("", WHEN) == "mcp-client-20261130T061316-482Z"
    assert session_id(None, WHEN) == "mcp-client-20261130T061316-482Z"
    assert session_id("\u202e\u200b/", WHEN) == "mcp-client-20261130T061316-482Z"


@given(st.text(max_size=400), st.datetimes(timezones=st.just(UTC)))
def test_any_client_name_gives_a_valid_session_id_ending_in_its_start_time(name, when):
    session = session_id(name, when)
    assert is_session_id(session)
    assert session.startswith("mcp-")
    assert session.endswith("-" + start_time(when))


def test_two_connections_a_millisecond_apart_are_two_sessions():
    later = WHEN + timedelta(milliseconds=1)
    assert session_id("c", WHEN) != session_id("c", later)


def test_state_only_gets_stricter():
    state = SessionState(klass="private", untrusted=False)
    state.raise_to(Label(klass="public", untrusted=False))
    assert (state.klass, state.untrusted) == ("private", False)
    state.raise_to(Label(klass="secret", untrusted=True))
    state.raise_to(Label(klass="private", untrusted=False))
    assert (state.klass, state.untrusted) == ("secret", True)
