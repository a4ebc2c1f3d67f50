"""A grant file is read in one open, never through a symbolic link and never waiting on a FIFO: a
FIFO in grants/ would hold the grants thread, and every call with it. Either is one problem line
(grants-invalid), and the shim goes on."""

import os
from pathlib import Path

import pytest

from brokerd_shim.grants import load_grants
from tests.proto.nowait import without_waiting

from .conftest import add_grant
from .test_broker_grants import GOOD
from .test_broker_service import FETCH

# how: (make the entry at path, given a folder outside grants/ to use; the problem line's end)
KINDS = {
    "a FIFO": (lambda path, outside: os.mkfifo(path), "a FIFO, not a regular file"),
    "a link to a good grant": (
        lambda path, outside: path.symlink_to(_good(outside)),
        "a symbolic link, which is not followed",
    ),
    "a link to a FIFO": (
        lambda path, outside: path.symlink_to(_fifo(outside)),
        "a symbolic link, which is not followed",
    ),
    "a link to nothing": (
        lambda path, outside: path.symlink_to(outside / "missing.toml"),
        "a symbolic link, which is not followed",
    ),
    "a folder": (lambda path, outside: path.mkdir(), "not a file"),
}


def _good(outside: Path) -> Path:
    (outside / "good.toml").write_text(GOOD)
    return outside / "good.toml"


def _fifo(outside: Path) -> Path:
    os.mkfifo(outside / "pipe")
    return outside / "pipe"


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_grant_file_that_is_no_regular_file_is_one_problem(tmp_path, kind):
    make, problem = KINDS[kind]
    grants = tmp_path / "grants"
    grants.mkdir()
    (grants / "good.toml").write_text(GOOD)
    path = grants / "odd.toml"
    make(path, tmp_path)
    grant_set = without_waiting(lambda: load_grants(grants), path)
    assert not grant_set.valid
    assert grant_set.problems == (f"odd.toml: {problem}",)
    assert [g.id for g in grant_set.grants] == ["good"]


def test_the_grants_folder_may_be_a_link(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "web.toml").write_text(GOOD)
    (tmp_path / "grants").symlink_to(real)
    grant_set = load_grants(tmp_path / "grants")
    assert grant_set.valid, grant_set.problems
    assert [g.id for g in grant_set.grants] == ["web"]


@pytest.fixture
def stale_listing(monkeypatch):
    """stale_listing(folder): from now on, listing folder gives what it held at this call, so a
    file changed after that is met by a reader that listed it before (the race, made certain)."""

    def freeze(folder: Path) -> None:
        listed = list(os.scandir(folder))
        real = os.path.realpath(folder)
        scandir = os.scandir

        def listing(path=".", /):
            if isinstance(path, str | os.PathLike) and os.path.realpath(path) == real:
                return iter(listed)
            return scandir(path)

        monkeypatch.setattr(os, "scandir", listing)

    return freeze


def test_a_grant_file_that_vanished_after_the_listing_is_a_problem(tmp_path, stale_listing):
    (tmp_path / "web.toml").write_text(GOOD)
    stale_listing(tmp_path)
    (tmp_path / "web.toml").unlink()
    assert load_grants(tmp_path).problems == (
        "web.toml: cannot be read: No such file or directory",
    )


@pytest.mark.parametrize("kind", ["a FIFO", "a link to a good grant", "a link to a FIFO"])
def test_a_grant_file_swapped_after_the_listing_is_refused(tmp_path, stale_listing, kind):
    """Listed as a regular file, then replaced: the one open sees what is there now."""
    make, problem = KINDS[kind]
    grants = tmp_path / "grants"
    grants.mkdir()
    path = grants / "odd.toml"
    path.write_text(GOOD)
    stale_listing(grants)
    path.unlink()
    make(path, tmp_path)
    grant_set = without_waiting(lambda: load_grants(grants), path)
    assert grant_set.problems == (f"odd.toml: {problem}",)


@pytest.mark.parametrize("kind", ["a FIFO", "a link to a FIFO"])
def test_a_fifo_in_grants_denies_calls_at_once_and_the_shim_goes_on(stack, stale_listing, kind):
    make, problem = KINDS[kind]
    path = add_grant(stack.home, "odd.toml", GOOD)
    stale_listing(path.parent)
    path.unlink()
    make(path, stack.home)
    reply = without_waiting(lambda: stack.call("http_fetch", FETCH), path)
    assert not reply.ok
    assert "runbook: grants-invalid" in reply.output and f"odd.toml: {problem}" in reply.output
    assert "\n" not in reply.output
    path.unlink()
    add_grant(stack.home, "odd.toml", GOOD)
    assert stack.call("http_fetch", FETCH, call_id="c2").ok
