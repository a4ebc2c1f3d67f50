# scripts/stack's roles that serve the home with no record in the state folder (sourced, not run).
# The state folder (.local/stack: the mode, the pid files, the logs) may be removed while the
# roles run, by a tidy-up of .local/ or a failing disk, or one pid file alone. status, down and up
# then ask the home itself: the process that answers on a role's sockets is found by the sockets'
# inodes, and one whose command line names this state folder's settings copy is this stack's own
# (down stops it); any other is named with its pid and a step that reaches it.
# Expects SERVICES, HOME_DIR and STATE, and pid_in, alive, conf_of, running_pid (processes.sh),
# sockets_of (converge.sh) and shell_quoted (common.sh).
# shellcheck shell=bash

# config_arg ROLE PID: in CONFIG_ARG, the settings file PID runs ROLE with (`ROLE serve --config
# FILE`), made absolute, and in ROLE_EXE the role's program as the command line names it; 1 when
# PID is not ROLE serving (or cannot be read). The role's program is the command itself or the
# script its interpreter runs (argv 0 or 1, as `VENV/bin/ROLE serve` starts): the same words
# later on a command line are some other program's arguments, never a role. A variable, not
# output: it is asked of every process, and a subshell each would take seconds.
CONFIG_ARG=""
ROLE_EXE=""
config_arg() {
    local args=() i
    CONFIG_ARG=""
    ROLE_EXE=""
    mapfile -d '' -t args 2>/dev/null <"/proc/$2/cmdline" || return 1
    for ((i = 0; i <= 1 && i + 3 < ${#args[@]}; i++)); do
        [ "${args[i]##*/}" = "$1" ] && [ "${args[i + 1]}" = serve ] &&
            [ "${args[i + 2]}" = --config ] || continue
        ROLE_EXE="${args[i]}"
        [ "${ROLE_EXE#/}" != "$ROLE_EXE" ] || ROLE_EXE="/proc/$2/cwd/$ROLE_EXE"
        CONFIG_ARG="${args[i + 3]}"
        # A relative path was relative to the folder the role was started in.
        [ "${CONFIG_ARG#/}" != "$CONFIG_ARG" ] || CONFIG_ARG="/proc/$2/cwd/$CONFIG_ARG"
        return 0
    done
    return 1
}

# unrecorded_pid ROLE: the pid of a live ROLE that runs this clone's program for it
# ($VENV/bin/ROLE) on the settings this state folder's up copied for it ($STATE/config/ROLE's
# file) but that the folder's pid file does not name (the file, or the whole folder, removed while
# it ran); nothing, and 1, otherwise. down stops what this finds, so both must be this stack's.
unrecorded_pid() {
    local dir pid recorded want exe
    recorded=$(pid_in "$STATE/$1.pid") || recorded=""
    want=$(readlink -m -- "$STATE/config/$(conf_of "$1")")
    exe=$(readlink -m -- "$VENV/bin/$1")
    for dir in /proc/[0-9]*; do
        pid="${dir#/proc/}"
        [ "$pid" != "$recorded" ] && config_arg "$1" "$pid" || continue
        [ "$(readlink -m -- "$CONFIG_ARG")" = "$want" ] || continue
        [ "$(readlink -m -- "$ROLE_EXE")" = "$exe" ] && alive "$pid" || continue
        echo "$pid"
        return 0
    done
    return 1
}

# socket_server SOCKET: the pid of a process of this user that listens on SOCKET (relative to the
# home), found by the socket's inode (/proc/net/unix) among the processes' open files; nothing
# when none is found (no such socket, or a process this user cannot look into).
socket_server() {
    local path="$HOME_DIR/$1" inode link
    inode=$(awk -v p="$path" '$8 == p && $4 == "00010000" { print $7; exit }' /proc/net/unix 2>/dev/null)
    [ -n "$inode" ] || return 0
    link=$(find /proc/[0-9]*/fd -maxdepth 1 -lname "socket:\[$inode\]" -print -quit 2>/dev/null)
    [ -z "$link" ] || { link="${link#/proc/}" && echo "${link%%/*}"; }
}

# role_server ROLE: the pid that serves the first of ROLE's sockets that one serves, or nothing.
role_server() {
    local sock pid
    for sock in $(sockets_of "$1"); do
        pid=$(socket_server "$sock")
        [ -z "$pid" ] || { echo "$pid" && return 0; }
    done
}

# stop_step ROLE PID: how the owner stops PID, which serves ROLE's sockets but that this state
# folder did not start: the state folder whose pid file names it, when its command line leads to
# one, and `kill PID` otherwise (down with this state folder cannot reach it).
stop_step() {
    local other
    if config_arg "$1" "$2"; then
        other=$(dirname -- "$(dirname -- "$CONFIG_ARG")")
        if [ "$(pid_in "$other/$1.pid" 2>/dev/null)" = "$2" ]; then
            echo "BOXMAKER_STACK_STATE=$(shell_quoted "$other") scripts/stack down"
            return 0
        fi
    fi
    echo "kill $2"
}

# missing_record ROLE: what of this state folder's record of ROLE is gone, in words.
missing_record() {
    if [ ! -e "$STATE/mode" ] && [ ! -e "$STATE/$1.pid" ]; then
        echo "neither its $1.pid nor the mode is there: the state folder removed while the stack ran?"
    elif [ ! -e "$STATE/$1.pid" ]; then
        echo "its pid file $STATE/$1.pid is missing, removed while it ran?"
    else
        echo "its pid file $STATE/$1.pid names another pid"
    fi
}

# memoryd_holder_line PID: up's refusal of a home the memoryd PID serves though this state folder
# does not run it: this folder's own (its record gone: down stops it), or another's, with the step
# that stops it.
memoryd_holder_line() {
    if runs_on_here_settings memoryd "$1"; then
        echo "memoryd (pid $1) already runs on $HOME_DIR on the settings $STATE holds for it, but $STATE has no record of it ($(missing_record memoryd)); stop it (scripts/stack down), then scripts/stack up"
    else
        echo "another memoryd (pid $1) already runs on $HOME_DIR, not started from $STATE (another state folder, another clone, or by hand); stop it ($(stop_step memoryd "$1")), then scripts/stack up"
    fi
}

# served_line ROLE SOCKET: up's refusal of ROLE's SOCKET that answers though ROLE does not run
# from this state folder, told apart as memoryd_holder_line does.
served_line() {
    local pid
    if pid=$(unrecorded_pid "$1"); then
        echo "$HOME_DIR/$2 already answers, and $1 (pid $pid) serves it on the settings $STATE holds for it, but $STATE has no record of it ($(missing_record "$1")); stop it (scripts/stack down), then scripts/stack up"
        return 0
    fi
    pid=$(socket_server "$2")
    echo "$HOME_DIR/$2 already answers, yet $1 does not run from $STATE: another process${pid:+ (pid $pid)} serves it (a stack from another state folder or clone, or in containers: scripts/stack status there); stop that one${pid:+ ($(stop_step "$1" "$pid"))}, then scripts/stack up"
}

# served_by_other ROLE: when ROLE's sockets are served by a process that is neither this state
# folder's ROLE nor one it started, that process's pid and how to stop it (one line); nothing
# otherwise.
served_by_other() {
    local pid
    pid=$(role_server "$1")
    [ -n "$pid" ] && [ "$pid" != "$(running_pid "$1")" ] || return 0
    runs_on_here_settings "$1" "$pid" && return 0
    echo "its sockets are served by pid $pid, which was not started from $STATE (another state folder, another clone, or by hand); stop it: $(stop_step "$1" "$pid")"
}

# runs_on_here_settings ROLE PID: PID runs ROLE on the settings this state folder holds for it.
runs_on_here_settings() {
    config_arg "$1" "$2" &&
        [ "$(readlink -m -- "$CONFIG_ARG")" = "$(readlink -m -- "$STATE/config/$(conf_of "$1")")" ]
}

# unrecorded_any: some role runs on this state folder's settings with no record here.
unrecorded_any() {
    local name
    for name in "${SERVICES[@]}"; do
        unrecorded_pid "$name" >/dev/null && return 0
    done
    return 1
}

# served_lines: for a stack that is down here, each role whose sockets another process serves,
# with its pid and how to stop it (served_by_other), one line each.
served_lines() {
    local name why
    for name in "${SERVICES[@]}"; do
        why=$(served_by_other "$name")
        [ -z "$why" ] || echo "$name: $why"
    done
}
