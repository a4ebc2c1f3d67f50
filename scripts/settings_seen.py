"""Whether the roles' containers see a settings file as the host does.

check_settings.py reads each role's settings on the host, following any link and with the rights
of whoever runs it (root, often). In a container the settings folder is all there is of the host,
bind-mounted at /etc/boxmaker, and the role runs as uid 10001 with no capabilities: a link whose
target is an absolute host path, or one that leaves the folder, names nothing there, and a file
only root may read cannot be read. Either passed the host's check, then the role could not
start. This module resolves a file as the container does and says, in one line, why the
container would not see it.
"""

import os
from pathlib import Path, PurePosixPath

SETTINGS_MOUNT = PurePosixPath("/etc/boxmaker")
# The user each role runs as in its container (the image's); under rootful podman the host's uid
# 10001 is that user, and scripts/stack gives the settings folder to it.
CONTAINER_UID = CONTAINER_GID = 10001
# As many links as the kernel follows in one path before it gives up (ELOOP).
MAX_LINKS = 40


def _todo(settings: Path, name: str) -> str:
    return (
        f"copy the file into {settings}, or make {name} a relative link to a file in that folder"
        f" (ln -sf FILE {name}, run in it)"
    )


def resolved(settings: Path, name: str) -> tuple[PurePosixPath | None, str | None]:
    """Where settings/name is inside the settings folder once its links are followed as the
    container follows them, and None; or None and why the container does not see it there.
    (None, None) when it is not there at all: the role's own check says so."""
    todo = list(PurePosixPath(name).parts)
    at: list[str] = []
    links = 0
    outside = ""
    while todo:
        part = todo.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            if not at:  # out of the folder through the links followed so far
                return None, outside + _todo(settings, name)
            at.pop()
            continue
        host = settings.joinpath(*at, part)
        if not host.is_symlink():
            if not os.path.lexists(host):
                return None, None
            at.append(part)
            continue
        links += 1
        if links > MAX_LINKS:
            return None, None  # the role's own reading says: too many levels of links
        try:
            target = os.readlink(host)
        except OSError:
            return None, None
        link = host if host == settings / name else f"{settings / name}: {host}"
        if target.startswith("/"):
            return None, (
                f"{link} is a link to {target}, an absolute path, which the containers do not"
                f" see (they see the settings folder alone, at {SETTINGS_MOUNT}); "
                + _todo(settings, name)
            )
        outside = (
            f"{link} is a link to {target}, outside the settings folder, which the containers"
            f" do not see (they see the settings folder alone, at {SETTINGS_MOUNT}); "
        )
        where = PurePosixPath(os.path.normpath(PurePosixPath(*at, target)))
        if where.parts[:1] == ("..",):
            return None, outside + _todo(settings, name)
        todo = list(PurePosixPath(target).parts) + todo
    return PurePosixPath(*at), None


def unreadable(settings: Path, relative: PurePosixPath, uid: int, gid: int) -> str | None:
    """Why uid:gid (no other group, no capability: the container's user) cannot open
    settings/relative for reading, or None. Opened from the settings folder itself, as the
    container reaches it: the folders above it on the host do not count."""
    folder = os.open(settings, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only opens the file and says how it went
            code = 0
            try:
                os.setgroups([])
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
                os.close(os.open(relative, os.O_RDONLY | os.O_NONBLOCK, dir_fd=folder))
            except OSError as e:
                code = e.errno or 255
            finally:
                os._exit(min(code, 255))
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(folder)
    code = os.waitstatus_to_exitcode(status)
    return None if code == 0 else os.strerror(code) if 0 < code < 255 else "it cannot be opened"


def unseen(settings: Path, names: list[str], as_root: bool) -> list[str]:
    """One line for each of names (files of the settings folder a role reads) that its container
    would not see as the host does: a link out of the folder, or, where the check runs as root
    (rootful podman: the role is uid 10001 there, with no capability), a file that user cannot
    read. Run as the owner (rootless podman maps the owner to that user) the host's own reading
    already tells."""
    problems = []
    for name in dict.fromkeys(names):
        inside, why = resolved(settings, name)
        if why:
            problems.append(why)
        elif inside is not None and as_root:
            cannot = unreadable(settings, inside, CONTAINER_UID, CONTAINER_GID)
            if cannot:
                problems.append(
                    f"{settings / name}: the roles' user in the containers (uid {CONTAINER_UID})"
                    f" cannot read it: {cannot}; let its owner read it"
                    f" (chmod u+r {settings / name}): scripts/stack gives the folder to that user"
                )
    return problems


def unreadable_grants(folder: Path) -> list[str]:
    """One line for the grants folder, or for each grant file in it (as brokerd-shim takes them:
    *.toml, not hidden), that the roles' user in the containers cannot open; only asked where the
    check runs as root (rootful podman), whose reading of the grants proves nothing for that user.
    brokerd-shim would deny every call for such a file, while root's reading found it valid."""
    where = os.path.realpath(folder)
    cannot = unreadable(Path(where), PurePosixPath("."), CONTAINER_UID, CONTAINER_GID)
    if cannot:
        return [
            f"{folder}: the roles' user in the containers (uid {CONTAINER_UID}) cannot list it:"
            f" {cannot}; give it to that user (chown {CONTAINER_UID}:{CONTAINER_GID} {folder})"
        ]
    problems = []
    for entry in sorted(os.scandir(where), key=lambda e: e.name):
        if not entry.name.endswith(".toml") or entry.name.startswith("."):
            continue
        if not entry.is_file(follow_symlinks=False):
            continue  # a link or no regular file: brokerd-shim's own check names it
        cannot = unreadable(Path(where), PurePosixPath(entry.name), CONTAINER_UID, CONTAINER_GID)
        if cannot:
            problems.append(
                f"{folder / entry.name}: the roles' user in the containers (uid {CONTAINER_UID})"
                f" cannot read it: {cannot}, so brokerd-shim would deny every call; give it to"
                f" that user (chown {CONTAINER_UID}:{CONTAINER_GID} {folder / entry.name})"
            )
    return problems
