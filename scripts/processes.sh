# scripts/stack's processes (sourced, not run): each role runs as a background process of the venv,
# its pid in $STATE/ROLE.pid and what it started with in $STATE/ROLE.started, so that up restarts
# a role whose settings or code changed since it started (as converge.sh recreates a container
# whose labels differ) and says which and why, and status tells a role that runs out of date.
# Expects SERVICES, HOME_DIR, SETTINGS_DIR, STATE, VENV and ROOT, and settings_files_of
# (converge.sh).
# shellcheck shell=bash

# alive PID: the process runs (a zombie, left where nothing reaps it, does not).
alive() {
    local state
    kill -0 "$1" 2>/dev/null || return 1
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
    [ "$state" != Z ]
}

running_pid() { # the pid of a service we started in process mode, if it still runs
    local pidfile="$STATE/$1.pid" pid
    [ -f "$pidfile" ] || return 1
    pid=$(cat "$pidfile")
    alive "$pid" && echo "$pid"
}

# stop_pid ROLE PID: end the role's process: TERM, then KILL after 10 s, so that a stuck role does
# not keep its sockets from the one started in its place.
stop_pid() {
    local name="$1" pid="$2"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do alive "$pid" || return 0; sleep 0.1; done
    say "$name (pid $pid) did not stop within 10 s of SIGTERM; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 20); do alive "$pid" || return 0; sleep 0.1; done
}

# code_hash ROLE: a hash of the code ROLE runs. The venv holds the project installed editable, so
# a role runs the files under services/ROLE and libs/proto as they were at its start;
# pyproject.toml names the version and the dependencies the venv is made with.
code_hash() {
    (cd "$ROOT" && find "services/$1" libs/proto pyproject.toml -type f ! -path '*/__pycache__/*' -print0 |
        LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
}

# want_records: in WANT[ROLE], the record a start of ROLE would keep now, one "KEY VALUE" line
# each: settings (the hash of the files it reads from the settings folder, as container mode
# labels it), place (the home and the settings folder it is pointed at) and code (code_hash).
declare -A WANT=()
want_records() {
    local hashes role hash place
    hashes=$("$VENV/bin/python" "$ROOT/scripts/check_settings.py" --hashes "$SETTINGS_DIR") ||
        die "the settings in $SETTINGS_DIR cannot be hashed (above: why)"
    place=$(printf '%s\0' "$HOME_DIR" "$SETTINGS_DIR" | sha256sum | cut -c1-16)
    while read -r role hash; do
        WANT[$role]=$(printf 'settings %s\nplace %s\ncode %s' "$hash" "$place" "$(code_hash "$role")")
    done <<<"$hashes"
}

# installed_version: the version of the project the venv holds (what a role started now runs).
installed_version() {
    "$VENV/bin/python" -c 'from proto.version import package_version; print(package_version())' \
        2>/dev/null || echo unknown
}

# record_start ROLE VERSION: keep what ROLE starts with beside its pid (written whole, then
# renamed, so that a reader never sees half of it).
record_start() {
    local tmp="$STATE/.$1.started.tmp"
    {
        printf '%s\n' "${WANT[$1]}"
        printf 'version %s\nsince %s\n' "$2" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    } >"$tmp"
    mv -f "$tmp" "$STATE/$1.started"
}

# stale ROLE: why the running ROLE must be restarted (one line), or nothing when it runs with the
# settings and code there are now. Needs want_records first.
stale() {
    local name="$1" key value why=""
    local -A had=()
    if [ ! -f "$STATE/$name.started" ]; then
        echo "it was started by an earlier scripts/stack, which kept no record of its settings and code"
        return 0
    fi
    while read -r key value; do
        [ -z "$key" ] || had[$key]="$value"
    done <"$STATE/$name.started"
    while read -r key value; do
        [ -n "$key" ] && [ "${had[$key]:-}" != "$value" ] || continue
        [ -z "$why" ] || why+=" and "
        case "$key" in
        settings) why+="its settings ($(settings_files_of "$name") in $SETTINGS_DIR)" ;;
        place) why+="its home or settings folder (BOXMAKER_HOME, BOXMAKER_CONFIG)" ;;
        code) why+="its code (services/$name, libs/proto, pyproject.toml)" ;;
        esac
    done <<<"${WANT[$name]:-}"
    [ -z "$why" ] || echo "$why changed since it started"
}

# started_line ROLE INSTALLED: what the running ROLE runs, from its record, beside the version
# the venv holds now.
started_line() {
    local key value version="" since=""
    if [ -f "$STATE/$1.started" ]; then
        while read -r key value; do
            case "$key" in
            version) version="$value" ;;
            since) since="$value" ;;
            esac
        done <"$STATE/$1.started"
    fi
    echo "runs ${version:-an unknown version}${since:+ since $since}, installed $2"
}
