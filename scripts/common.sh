# Shared by the scripts in this folder (sourced, not run): where things are, how a phase is
# timed, and how to tell whether a container engine is here or can be set up.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
IMAGE="${BOXMAKER_IMAGE:-localhost/boxmaker-memory:dev}"
BASE_IMAGE_LOCAL="localhost/boxmaker-base:bookworm"
BASE_IMAGE_REMOTE="docker.io/library/python:3.11-slim"
LOCAL_DIR="$ROOT/.local"
export BOXMAKER_IMAGE="$IMAGE"

say() { printf '%s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# shell_quoted WORD: WORD as one shell word, for a command printed for the owner to paste: as is
# when every character is one no shell treats specially, as printf %q gives it ($'...') when it
# holds a control character such as a newline, and otherwise in single quotes (a ' becomes '\''),
# which keep spaces, $, quotes and non-ASCII letters as they are in bash, zsh and sh alike.
shell_quoted() {
    case "$1" in
    *[[:cntrl:]]*) printf '%q' "$1" ;;
    "" | *[!abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+,=-]*)
        printf "'%s'" "${1//\'/\'\\\'\'}" ;;
    *) printf '%s' "$1" ;;
    esac
}

# phase NAME CMD...: run CMD, then print how long it took.
phase() {
    local name="$1" start rc=0
    shift
    start=$(date +%s)
    say "==> $name"
    "$@" || rc=$?
    say "<== $name: $(($(date +%s) - start))s$([ "$rc" -eq 0 ] || echo " (failed, exit $rc)")"
    return "$rc"
}

is_root() { [ "$(id -u)" -eq 0 ]; }
can_apt() { is_root && command -v apt-get >/dev/null 2>&1; }
have_podman() { command -v podman >/dev/null 2>&1; }

# On machines like our CI (Debian 12, root, cgroups v1 hybrid) crun refuses to start containers
# and the default ulimits are above what the machine allows; deploy/containers.conf fixes both.
# Podman reads it from CONTAINERS_CONF, so /etc/containers stays untouched. Only used when runc
# is installed, since the file names it as the runtime.
use_containers_conf() {
    if [ -z "${CONTAINERS_CONF:-}" ] && command -v runc >/dev/null 2>&1; then
        export CONTAINERS_CONF="$ROOT/deploy/containers.conf"
    fi
}

# Rootless podman maps the owner's uid to the image's user 10001, so files in {home} stay the
# owner's; rootful podman needs no user namespace and the folders are chowned to 10001 instead.
set_userns() {
    if is_root; then
        export BOXMAKER_USERNS="${BOXMAKER_USERNS:-host}"
    else
        export BOXMAKER_USERNS="${BOXMAKER_USERNS:-keep-id:uid=10001,gid=10001}"
    fi
}

# Rootless podman for root's CI: an unprivileged user that scripts/setup-rootless creates, with
# its own storage (vfs), runtime folder and containers.conf. rootless_podman runs podman as that
# user; with no systemd/logind here, XDG_RUNTIME_DIR is a folder we make under /run/user.
ROOTLESS_USER="${BOXMAKER_ROOTLESS_USER:-boxmaker-podman}"
ROOTLESS_HOME="${BOXMAKER_ROOTLESS_HOME:-/var/lib/$ROOTLESS_USER}"
rootless_uid() { id -u "$ROOTLESS_USER"; }
rootless_runtime_dir() { printf '/run/user/%s\n' "$(rootless_uid)"; }
# ROOTLESS_AS: the command prefix that runs what follows as the rootless user, with its
# environment (setpriv execs, so a background job's $! is the command's own pid).
rootless_prefix() {
    local uid
    uid=$(rootless_uid)
    ROOTLESS_AS=(setpriv --reuid="$uid" --regid="$(id -g "$ROOTLESS_USER")" --init-groups
        env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$ROOTLESS_HOME" USER="$ROOTLESS_USER"
        LOGNAME="$ROOTLESS_USER" XDG_RUNTIME_DIR="/run/user/$uid")
}
rootless_run() { # CMD...: run CMD as the rootless user, in its home
    rootless_prefix
    (cd "$ROOTLESS_HOME" && exec "${ROOTLESS_AS[@]}" "$@")
}
rootless_podman() { rootless_run podman "$@"; }

venv_python() { printf '%s\n' "$VENV/bin/python"; }

# left_from_before_boot FILE: FILE exists and is older than this boot. Podman marks each boot's
# first use with an "alive" file under /run; where /run is not a tmpfs (or a machine image was
# taken with it) that file, and the state beside it, outlive a restart and describe processes
# that are gone.
left_from_before_boot() {
    local booted
    [ -e "$1" ] || return 1
    booted=$(awk '/^btime/ {print $2}' /proc/stat 2>/dev/null) || return 1
    [ -n "$booted" ] && [ "$(stat -c %Y "$1")" -lt "$booted" ]
}

# clear_run_state MARKER DIR...: empty each DIR when MARKER is left from before this boot, as the
# restart would have done on a tmpfs.
clear_run_state() {
    local marker="$1" dir
    shift
    left_from_before_boot "$marker" || return 0
    say "podman's state under /run is older than this boot; clearing it ($*)"
    for dir in "$@"; do
        [ -d "$dir" ] && find "$dir" -mindepth 1 -delete
    done
    return 0
}
