"""The wheel the container image installs holds every package of the tree: an editable install
finds a subpackage that pyproject.toml forgot, the image does not."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_in_pyproject():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(tool["packages"])
    folders = {ROOT / folder: name for name, folder in tool["package-dir"].items()}
    found = set()
    for folder, name in folders.items():
        for init in folder.rglob("__init__.py"):
            if "__pycache__" in init.parts:
                continue
            inner = init.parent.relative_to(folder).parts
            found.add(".".join((name, *inner)))
    assert found == listed, (
        f"not listed: {sorted(found - listed)}; listed, missing: {sorted(listed - found)}"
    )
