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

# proc_mark PID: this boot's id and the process's start time (clock ticks after boot), which
# together name one process for good: a pid is reused, this pair never is.
proc_mark() {
    local boot stat fields
    boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null) || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # The command's name (field 2) may hold spaces and parentheses: count after its last ")";
    # the start time is field 22.
    read -r -a fields <<<"${stat##*) }"
    [ -n "${fields[19]:-}" ] && [ -n "$boot" ] || return 1
    printf '%s:%s\n' "$boot" "${fields[19]}"
}

# proc_age PID: how many seconds the process has run, from its start (clock ticks after boot,
# field 22 of /proc/PID/stat) and the seconds since boot (/proc/uptime): no step of the wall
# clock moves either. Nothing, and 1, without them.
proc_age() {
    local stat fields up hz
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    read -r -a fields <<<"${stat##*) }"
    { read -r up _ </proc/uptime; } 2>/dev/null || return 1
    hz=$(getconf CLK_TCK 2>/dev/null) || return 1
    up="${up%%.*}"
    [[ "${fields[19]:-}" =~ ^[0-9]+$ && "$up" =~ ^[0-9]+$ && "$hz" =~ ^[1-9][0-9]*$ ]] || return 1
    echo $((up - fields[19] / hz))
}

# is_role ROLE PID: PID is the process scripts/stack started as ROLE, not whatever holds that pid
# now: after a reboot or a crash the pid file outlives the role, and its pid may be any other
# program's, which must never be reported as the role nor signalled. Where the start recorded
# PID's mark (proc_mark), the mark must be the same. A role whose record is not PID's (record_of:
# started by an earlier scripts/stack, which keeps none, from an older checkout say, beside the
# record of the process it replaced) must run ROLE's command with `serve --config` on the
# settings up wrote for it. Without /proc there is nothing to tell by, and a live pid is all
# there is.
is_role() {
    local name="$1" pid="$2" recorded="" key value
    [ -r /proc/self/stat ] || return 0
    while read -r key value; do
        [ "$key" != proc ] || recorded="$value"
    done < <(record_of "$name" "$pid")
    if [ -n "$recorded" ]; then
        [ "$recorded" = "$(proc_mark "$pid")" ]
        return
    fi
    runs_on_here_settings "$name" "$pid" # its command line (unrecorded.sh)
}

# record_of ROLE PID: the lines of ROLE's start record ($STATE/ROLE.started) when it was kept for
# the process PID, nothing otherwise. A scripts/stack from before the records (an older checkout)
# rewrites ROLE.pid and leaves the record of the process it replaced, which says nothing of the
# one that runs now. A record names its pid; one kept before records named it is PID's when
# the pid file is not newer than it (up writes the pid file, then the record).
record_of() {
    local file="$STATE/$1.started" key value for=""
    [ -f "$file" ] || return 0
    while read -r key value; do
        [ "$key" != pid ] || for="$value"
    done <"$file"
    if [ -n "$for" ]; then
        [ "$for" = "$2" ] || return 0
    elif [ "$STATE/$1.pid" -nt "$file" ]; then
        return 0
    fi
    cat "$file"
}

# record_pid ROLE: the pid ROLE's pid file names, for record_of (nothing when it names none).
record_pid() { pid_in "$STATE/$1.pid" || true; }

# conf_of ROLE: the settings file the role is started with (memoryd.toml, brokerd.toml, loopd.toml).
conf_of() { printf '%s.toml\n' "${1%-shim}"; }

# pid_in PIDFILE: the pid the file holds, when it holds one (a number above 1: kill -- -1 or 0
# would signal far more than one process).
pid_in() {
    local pid
    [ -f "$1" ] || return 1
    pid=$(head -c 32 "$1" 2>/dev/null | tr -d '[:space:]')
    [[ "$pid" =~ ^[0-9]+$ ]] && [ "$pid" -gt 1 ] && echo "$pid"
}

running_pid() { # the pid of a service we started in process mode, if it still runs
    local pid
    pid=$(pid_in "$STATE/$1.pid") || return 1
    alive "$pid" && is_role "$1" "$pid" && echo "$pid"
}

# home_holder MODE: one line when something this state folder did not start holds memoryd's lock
# on the home: a memoryd (a stack on the same home from another state folder, another clone, in
# containers, or one started by hand), whose sockets would answer for the one started here while
# that one exited at once, or another program (an owner's script), which memoryd would find in its
# way. Nothing otherwise. A memoryd on the host holds the lock on the home folder itself and on
# index/memoryd.lock (memoryd/server.py); one in a container holds only index/memoryd.lock, the
# home's root being the container's own tmpfs there. In MODE container that second lock is left
# unasked: the project's own memoryd holds it (other containers are told by their mounts).
# /proc/locks names the holder by device and inode.
home_holder() {
    running_pid memoryd >/dev/null && return 0
    local where="" lock="$HOME_DIR/index/memoryd.lock"
    if held "$HOME_DIR"; then
        where="$HOME_DIR"
    elif [ "$1" = process ] && [ -f "$lock" ] && [ ! -L "$lock" ] && held "$lock"; then
        where="$lock"
    fi
    [ -n "$where" ] || return 0
    local dev inode at pid args="" in=""
    read -r dev inode < <(stat -c '%d %i' "$where")
    at=$(printf '%02x:%02x:%s' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$inode")
    pid=$(awk -v at="$at" '$2 == "FLOCK" && $6 == at { print $5; exit }' /proc/locks 2>/dev/null)
    [ -z "$pid" ] || args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)
    [ "$where" != "$lock" ] || ! have_podman || in=$(home_containers)
    if [ -n "$in" ]; then
        # "NAME PROJECT" of the running containers on this home: podman names them.
        echo "a stack in containers already serves $HOME_DIR: ${in% *} (project ${in##* }), not started from $STATE; use that stack, or stop it (BOXMAKER_PROJECT=$(shell_quoted "${in##* }") scripts/stack down, with this BOXMAKER_HOME), then scripts/stack up"
        return 0
    fi
    case "$args" in
    *memoryd*serve*/etc/boxmaker/*)
        echo "another memoryd (pid $pid) already runs on $HOME_DIR, in a container this user's podman does not list (another user's, or root's), not started from $STATE; stop that stack (scripts/stack down as its user), then scripts/stack up" ;;
    *memoryd*serve*) memoryd_holder_line "$pid" ;;
    *)
        echo "$([ "$where" != "$HOME_DIR" ] || echo "the home folder ")$where is locked by another program${pid:+ (pid $pid${args:+: ${args% }})}, and memoryd takes that lock to run; end that program, then scripts/stack up" ;;
    esac
}

# held PATH: another process holds a lock on PATH (flock -n: 1 when the lock is taken; a PATH
# that cannot be opened here says nothing of its lock).
held() {
    local rc=0
    flock -n -s "$1" true 2>/dev/null || rc=$?
    [ "$rc" -eq 1 ]
}

# home_containers: the running containers that serve this home, of any project, as "NAMES PROJECT"
# (the names comma-separated; the first project's), or nothing.
home_containers() {
    local names same name project home found=() of=""
    mapfile -t names < <(podman ps --format '{{.Names}}' 2>/dev/null)
    while IFS=$'\t' read -r same name project home; do
        [ "$same" = same ] || continue
        found+=("$name")
        of="${of:-$project}"
    done < <(container_homes ${names[@]+"${names[@]}"})
    [ "${#found[@]}" -eq 0 ] || echo "$(printf '%s\n' "${found[@]}" | paste -sd, - | sed 's/,/, /g') $of"
}

# served_elsewhere: one line when a socket of a role that does not run from $STATE already
# answers: another process serves it (a stack from another state folder or clone, or in
# containers), and each role refuses a socket another live process serves, so the one started
# here would exit at once while that other answered for it. Nothing otherwise.
served_elsewhere() {
    local name sockets silent sock
    for name in "${SERVICES[@]}"; do
        ! running_pid "$name" >/dev/null || continue
        read -r -a sockets <<<"$(sockets_of "$name")"
        silent=$(ask_sockets silent "${sockets[@]}") || true
        for sock in "${sockets[@]}"; do
            ! grep -qxF -- "$sock" <<<"$silent" || continue
            served_line "$name" "$sock"
            return 0
        done
    done
}

# not_the_role ROLE: one line when ROLE's pid file names a live process that is not the role
# (left from before a reboot or a crash, the pid now another program's); nothing otherwise.
not_the_role() {
    local pid
    pid=$(pid_in "$STATE/$1.pid") || return 0
    alive "$pid" && ! is_role "$1" "$pid" || return 0
    echo "its pid file $STATE/$1.pid names pid $pid, which is another program now (the pid file is left from before a reboot or a crash); that program is not signalled"
}

# stop_pid ROLE PID: end the role's process: TERM, then KILL after 10 s, so that a stuck role does
# not keep its sockets from the one started in its place. Each signal goes only to the role
# itself (is_role), never to a program that got its pid once it ended.
stop_pid() {
    local name="$1" pid="$2"
    role_runs "$name" "$pid" || return 0
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do role_runs "$name" "$pid" || return 0; sleep 0.1; done
    say "$name (pid $pid) did not stop within 10 s of SIGTERM; killing it"
    role_runs "$name" "$pid" || return 0
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 20); do alive "$pid" || return 0; sleep 0.1; done
}
role_runs() { alive "$2" && is_role "$1" "$2"; }

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

# record_start ROLE VERSION PID: keep what ROLE starts with beside its pid, the pid itself (a
# record is only of that process: record_of) and the process's mark (proc_mark), by which is_role
# tells it from a program that gets its pid later (written whole,
# then renamed, so that a reader never sees half of it).
record_start() {
    local tmp="$STATE/.$1.started.tmp" mark
    mark=$(proc_mark "$3") || mark=""
    {
        printf '%s\n' "${WANT[$1]}"
        printf 'version %s\nsince %s\n' "$2" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        printf 'pid %s\n' "$3"
        [ -z "$mark" ] || printf 'proc %s\n' "$mark"
    } >"$tmp"
    mv -f "$tmp" "$STATE/$1.started"
}

# stale ROLE: why the running ROLE must be restarted (one line), or nothing when it runs with the
# settings and code there are now. Needs want_records first.
stale() {
    local name="$1" key value why="" record
    local -A had=()
    record=$(record_of "$name" "$(record_pid "$name")")
    if [ -z "$record" ]; then
        echo "it was started by an earlier scripts/stack, which kept no record of its settings and code"
        return 0
    fi
    while read -r key value; do
        [ -z "$key" ] || had[$key]="$value"
    done <<<"$record"
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
    while read -r key value; do
        case "$key" in
        version) version="$value" ;;
        since) since="$value" ;;
        esac
    done < <(record_of "$1" "$(record_pid "$1")")
    echo "runs ${version:-an unknown version}${since:+ since $since}, installed $2"
}
