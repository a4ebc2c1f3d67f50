"""scripts/local_configs.py: the settings copied for roles run as processes, every string naming
the image's home moved to the home on the host, in either of TOML's quotes and for any folder
name; a file the roles would read (a byte-order mark) is copied, one they would not is refused
in one line naming it."""

import os
import subprocess
import sys
import tomllib

import pytest

from tests.integration.stack import REPO

sys.path.insert(0, os.fspath(REPO / "scripts"))
from local_configs import ConfigCopyError, write_local_configs  # noqa: E402

LINES = """home = "/var/lib/boxmaker"   # the home
index = "/var/lib/boxmaker/index"
literal = '/var/lib/boxmaker'
literal_under = '/var/lib/boxmaker/run/a\\\\b'
relative = "soul.md"
system = "/etc/boxmaker/system.md"
grants = '/etc/boxmaker/grants'
"""


@pytest.mark.parametrize(
    "home", ["plain", "with space", 'a"quote', "o'brien", "back\\slash", "accentué"]
)
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_every_string_of_the_image_home_is_moved_to_the_home(tmp_path, home, bom):
    source, dest, there = tmp_path / "source", tmp_path / "dest", tmp_path / home
    source.mkdir()
    (source / "memoryd.toml").write_bytes(bom + LINES.encode())
    write_local_configs(source, dest, there)
    read = tomllib.loads((dest / "memoryd.toml").read_text("utf-8"))
    root = os.fspath(there.resolve())
    assert read == {
        "home": root,
        "index": f"{root}/index",
        "literal": root,
        "literal_under": f"{root}/run/a\\\\b",
        "relative": "soul.md",
        # where the containers see the settings folder: the folder itself, for a process
        "system": f"{source.absolute()}/system.md",
        "grants": f"{source.absolute()}/grants",
    }


@pytest.mark.parametrize(
    "text, said",
    [
        (b'home = "/var/lib/boxmaker\n', "memoryd.toml"),
        (b"\xff\xfe not utf-8", "memoryd.toml"),
        (b'elsewhere = "/var/lib/boxmakers"\n', "still names /var/lib/boxmaker"),
        (b"a = " + b"[" * 1000 + b"]" * 1000 + b"\n", "nested too deeply"),
    ],
)
def test_a_file_the_roles_could_not_read_is_refused_in_one_line(tmp_path, text, said):
    source = tmp_path / "source"
    source.mkdir()
    (source / "memoryd.toml").write_bytes(text)
    with pytest.raises(ConfigCopyError, match=said):
        write_local_configs(source, tmp_path / "dest", tmp_path / "home")
    done = subprocess.run(
        [sys.executable, REPO / "scripts/local_configs.py", source, tmp_path / "d2", tmp_path],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert said in done.stderr


def test_only_the_toml_files_are_read_and_the_rest_is_linked(tmp_path):
    source = tmp_path / "source"
    (source / "grants").mkdir(parents=True)
    (source / "grants" / "memory.toml").write_text('home = "/var/lib/boxmaker"\n')
    (source / "memoryd.toml").write_text(LINES)
    (source / "soul.md").write_text("The soul.\n")
    # An editor's lock, a device, a FIFO: none is a setting any role reads, none may be read.
    (source / ".#memoryd.toml").symlink_to("root@host.4242:1700000000")
    (source / "zero").symlink_to("/dev/zero")
    os.mkfifo(source / "pipe")
    dest = write_local_configs(source, tmp_path / "dest", tmp_path / "home")
    assert sorted(p.name for p in dest.iterdir()) == [
        "grants",
        "memoryd.toml",
        "pipe",
        "soul.md",
        "zero",
    ]
    assert not (dest / "memoryd.toml").is_symlink()
    assert (dest / "soul.md").read_text() == "The soul.\n"
    # Below the top, files are the owner's as they are (grants name no path of the home).
    assert (dest / "grants" / "memory.toml").read_text() == 'home = "/var/lib/boxmaker"\n'
    assert os.readlink(dest / "zero") == os.fspath(source / "zero")
