"""A socket's folder: made 0700 when missing, left as it is when it already exists (a socket may be
configured into a shared folder such as /tmp, which is not the role's to chmod)."""

import asyncio
import os
import stat

import pytest

from proto.files import NotRegular, ensure_dir
from proto.server import SocketInUse, prepare_socket_path, serve_unix


def mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def handler(_message):
    return None


@pytest.fixture
def shared(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


def test_an_existing_socket_folder_keeps_its_mode(shared):
    path = shared / "admin.sock"

    async def serve_and_close():
        server = await serve_unix(path, handler, {"memory_admin"}, name="test")
        server.close()
        await server.wait_closed()

    asyncio.run(serve_and_close())
    assert mode(shared) == 0o1777
    assert stat.S_ISSOCK(os.lstat(path).st_mode) and mode(path) == 0o600


@pytest.mark.parametrize("depth", [1, 3])
def test_missing_socket_folders_are_made_0700_and_their_existing_parent_kept(shared, depth):
    folder = shared.joinpath(*[f"f{i}" for i in range(depth)])
    prepare_socket_path(str(folder / "x.sock"))
    assert mode(shared) == 0o1777
    for i in range(depth):
        assert mode(shared.joinpath(*[f"f{j}" for j in range(i + 1)])) == 0o700


def test_a_socket_path_that_is_a_folder_chmods_nothing(shared):
    # /tmp as a socket path must not make / 0700.
    inner = shared / "inner"
    inner.mkdir(mode=0o755)
    with pytest.raises(SocketInUse, match="not a socket"):
        prepare_socket_path(str(inner))
    assert mode(shared) == 0o1777 and mode(inner) == 0o755


def test_a_linked_socket_folder_is_still_refused(tmp_path, shared):
    (tmp_path / "link").symlink_to(shared)
    with pytest.raises(NotRegular, match="symbolic link"):
        prepare_socket_path(str(tmp_path / "link" / "x.sock"))
    assert mode(shared) == 0o1777


def test_ensure_dir_tightens_a_folder_of_the_roles_own_unless_told_not_to(tmp_path):
    own = tmp_path / "home"
    own.mkdir(mode=0o755)
    ensure_dir(own, tighten=False)
    assert mode(own) == 0o755
    ensure_dir(own)
    assert mode(own) == 0o700
