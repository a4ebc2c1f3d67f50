# scripts/stack's containers (sourced, not run): what each running role should run, what makes a
# container out of date, how it is (re)created with the limits compose.yaml states, how to tell a
# role that cannot start, and what the terminal must hear about limits that cannot hold.
# Expects PROJECT, SERVICES, HOME_DIR, SETTINGS_DIR, STATE, VENV, ROOT and IMAGE.
# shellcheck shell=bash

compose() { "$VENV/bin/podman-compose" -p "$PROJECT" -f "$ROOT/compose.yaml" "$@"; }
container_of() { printf '%s_%s_1\n' "$PROJECT" "$1"; }

# The environment compose.yaml's labels read: each role's settings hash (the files it reads from
# the settings folder) and a hash of compose.yaml with the environment it is read with. A
# container carries them from its creation; one that differs from now is out of date.
export_labels() {
    local role hash
    while read -r role hash; do
        case "$role" in
        memoryd) export BOXMAKER_SETTINGS_MEMORYD="$hash" ;;
        brokerd-shim) export BOXMAKER_SETTINGS_BROKERD="$hash" ;;
        loopd-shim) export BOXMAKER_SETTINGS_LOOPD="$hash" ;;
        esac
    done < <("$VENV/bin/python" "$ROOT/scripts/check_settings.py" --hashes "$SETTINGS_DIR")
    BOXMAKER_COMPOSE_HASH=$({
        cat "$ROOT/compose.yaml"
        printf '%s\n' "$IMAGE" "$HOME_DIR" "$SETTINGS_DIR" "${BOXMAKER_USERNS:-}"
    } | sha256sum | cut -c1-16)
    export BOXMAKER_COMPOSE_HASH
}

# container_homes [--all] NAME...: for each container, "same" or "other" (whether it serves this
# home), its name, its compose project and the home it serves, tab-separated, one a line. The
# home is read from the container's mounts (the source of one under /var/lib/boxmaker/, less the
# part below the home), which every role has, however it was made (by any scripts/stack, or by
# hand from compose.yaml): containers made before any label said their home are read as well.
# A container with no such mount is left out.
container_homes() {
    [ "$#" -gt 0 ] || return 0
    podman inspect --type container "$@" 2>/dev/null | "$VENV/bin/python" -c '
import json, os, sys
here, top = os.path.realpath(sys.argv[1]), "/var/lib/boxmaker/"
for c in json.load(sys.stdin) or []:
    labels = (c.get("Config") or {}).get("Labels") or {}
    for m in c.get("Mounts") or []:
        dest, src = m.get("Destination") or "", m.get("Source") or ""
        below = dest[len(top):]
        if dest.startswith(top) and below and src.endswith("/" + below):
            home = src[: -len(below) - 1]
            same = "same" if os.path.realpath(home) == here else "other"
            name = c.get("Name") or "?"
            print(same, name, labels.get("io.podman.compose.project", "-"), home, sep="\t")
            break
' "$HOME_DIR" || true
}

# foreign_home: one line when the containers of $PROJECT serve another home than $HOME_DIR
# (another clone's, or another BOXMAKER_HOME's, under the same project name, which every clone
# shares unless BOXMAKER_PROJECT is set): their home, and what to do; nothing otherwise. No command
# for this home may stop, remove or recreate them: they are that home's stack.
foreign_home() {
    local names same name project home other=() where=""
    mapfile -t names < <(podman ps -a --format '{{.Names}}' --filter "label=io.podman.compose.project=$PROJECT" 2>/dev/null)
    while IFS=$'\t' read -r same name project home; do
        [ "$same" = other ] || continue
        other+=("$name")
        where="${where:-$home}"
    done < <(container_homes ${names[@]+"${names[@]}"})
    [ -n "$where" ] || return 0
    echo "the containers of project $PROJECT ($(printf '%s\n' "${other[@]}" | paste -sd, - | sed 's/,/, /g')) serve the home $where, not $HOME_DIR, and are left as they are: to run a stack on this home beside them, give it a project of its own (BOXMAKER_PROJECT=NAME scripts/stack up); to stop them, BOXMAKER_HOME=$(shell_quoted "$where") BOXMAKER_PROJECT=$(shell_quoted "$PROJECT") scripts/stack down"
}

settings_label_of() {
    case "$1" in
    memoryd) echo "$BOXMAKER_SETTINGS_MEMORYD" ;;
    brokerd-shim) echo "$BOXMAKER_SETTINGS_BROKERD" ;;
    loopd-shim) echo "$BOXMAKER_SETTINGS_LOOPD" ;;
    esac
}
settings_files_of() {
    case "$1" in
    memoryd) echo "memoryd.toml, soul.md" ;;
    brokerd-shim) echo "brokerd.toml" ;;
    loopd-shim) echo "loopd.toml, system.md" ;;
    esac
}

# out_of_date ROLE: why ROLE's container must be recreated (one line), or nothing when it is
# current or does not exist. With the image gone from podman's storage (image_missing) there is
# no image to compare with: the settings and the definition still are. Needs export_labels first.
out_of_date() {
    local name="$1" c image settings defined want
    c=$(container_of "$name")
    podman container exists "$c" || return 0
    read -r image settings defined < <(podman inspect --format \
        '{{.Image}} {{index .Config.Labels "boxmaker.settings"}} {{index .Config.Labels "boxmaker.compose"}}' "$c" 2>/dev/null)
    want=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null) || want="$image"
    if [ "$image" != "$want" ]; then
        echo "it runs image ${image:0:12}, not ${want:0:12} that up just built"
    elif [ "$settings" != "$(settings_label_of "$name")" ]; then
        echo "its settings ($(settings_files_of "$name") in $SETTINGS_DIR) changed since it was created"
    elif [ "$defined" != "$BOXMAKER_COMPOSE_HASH" ]; then
        echo "compose.yaml, the image name, the home, the settings folder or the user namespace changed"
    fi
}

# image_missing: one line when $IMAGE is not in podman's storage (a prune, rmi or untag removed it;
# the containers run on from their own copy), saying what to do; nothing otherwise.
image_missing() {
    podman image exists "$IMAGE" 2>/dev/null ||
        echo "the image $IMAGE is not in podman's storage (a prune, rmi or untag removed it; the containers run on from their own copy): scripts/stack up builds it again"
}

# The memswap_limit of each service in compose.yaml ("NAME VALUE" lines): podman-compose 1.6 does
# not pass it to podman, so create_role does.
memswap_limits() {
    "$VENV/bin/python" - "$ROOT/compose.yaml" <<'PY'
import sys, yaml
for name, service in yaml.safe_load(open(sys.argv[1]))["services"].items():
    print(name, service.get("memswap_limit", ""))
PY
}

# remove_role ROLE: remove its container (a container made by an older scripts/stack may have
# others that require it: those go too, and are made again below).
remove_role() {
    local c
    c=$(container_of "$1")
    if ! podman rm -f -t 10 "$c" >/dev/null 2>&1; then
        say "$1: other containers require it (made by an earlier scripts/stack); removing them too"
        podman rm -f -t 10 --depend "$c" >/dev/null
    fi
}

# converge: recreate every role whose container is out of date (saying which and why), restart a
# current one that runs but does not answer (revive_silent), then make and start what is missing
# or stopped (saying so), each role with its own --memory-swap. Appends podman-compose's output
# to $STATE/compose-up.log.
converge() {
    local name why swap state recreated=()
    export_labels
    for name in "${SERVICES[@]}"; do
        why=$(out_of_date "$name")
        if [ -z "$why" ]; then
            revive_silent "$name"
            continue
        fi
        say "recreating $name: $why"
        remove_role "$name"
        recreated+=("$name")
    done
    : >"$STATE/compose-up.log"
    for name in "${SERVICES[@]}"; do
        state=$(podman inspect --format '{{.State.Status}}' "$(container_of "$name")" 2>/dev/null || true)
        case "$state" in
        running) ;;
        paused) unpause_role "$name" ;;
        "") [[ " ${recreated[*]} " == *" $name "* ]] || say "creating $name: it has no container $(container_of "$name")" ;;
        *) say "starting $name: its container $(container_of "$name") was $state" ;;
        esac
        start_role "$name"
    done
    [ "${#recreated[@]}" -eq 0 ] || say "recreated: ${recreated[*]}"
}

# unpause_role ROLE: its paused container (podman pause, a frozen cgroup) answers no one, and podman
# neither starts nor restarts a paused container: it is unpaused, saying so. Returns 1 when podman
# cannot, with one line.
unpause_role() {
    local c err
    c=$(container_of "$1")
    say "unpausing $1: its container $c was paused"
    err=$(timeout 60 podman unpause "$c" 2>&1 >/dev/null) && return 0
    say "$1: podman could not unpause $c: $(printf '%s\n' "$err" | grep . | tail -1) (podman rm -f $c, then scripts/stack up makes it again)"
    return 1
}

# revive_silent ROLE: a running, current ROLE that does not answer on each of its sockets (stopped,
# stuck, or a socket removed while it runs, which no start of a running container brings back) is
# restarted, saying why; one still starting is given what is left of the 90 s up gives a start.
# A role that answers no one serves no one: its restart loses nothing.
revive_silent() {
    local c why err
    c=$(container_of "$1")
    [ "$(podman inspect --format '{{.State.Running}}' "$c" 2>/dev/null)" = true ] || return 0
    why=$(sockets_silent "$1" "$(container_patience "$1")")
    [ -n "$why" ] || return 0
    if block_refused "$why"; then
        say "$1: $why; its container goes on running: $BLOCK_NOT_RESTARTED"
        UP_LEFT=1
        return 0
    fi
    say "restarting $1: $why"
    err=$(cd "$STATE" && timeout 120 podman restart -t 5 "$c" 2>&1 >/dev/null) ||
        say "$1: podman could not restart $c: $(printf '%s\n' "$err" | grep -v 'systemd connection' | grep . | tail -1) (scripts/stack logs $1 may say why)"
}

# container_patience ROLE: what is left of the 90 s up gives a start, from its container's start
# (0 after), never more: a start after now (the clock went back since, by how much is not known)
# counts as just made, not as one that has the jump still to wait.
container_patience() {
    local started age
    started=$(podman inspect --format '{{.State.StartedAt.Unix}}' "$(container_of "$1")" 2>/dev/null) || started=0
    [[ "$started" =~ ^[0-9]+$ ]] || started=0
    age=$(($(date +%s) - started))
    [ "$age" -ge 0 ] || age=0
    if [ "$age" -lt 90 ]; then echo $((90 - age)); else echo 0; fi
}

# start_role ROLE: make its container if missing (with compose.yaml's memswap_limit as
# --memory-swap), and start it. No dependency is made or started with it, and an existing
# container is never replaced here: converge and restart decide that. Needs export_labels first.
start_role() {
    local swap
    swap=$(memswap_limits | awk -v n="$1" '$1 == n {print $2}')
    # From the state folder: the container's conmon keeps podman's folder as its own, and drops
    # a file "oom" there at each kill at the memory limit, which must not land in the owner's clone.
    (cd "$STATE" && timeout 300 "$VENV/bin/podman-compose" -p "$PROJECT" -f "$ROOT/compose.yaml" \
        ${swap:+"--podman-run-args=--memory-swap=$swap"} \
        up -d --no-recreate --no-deps "$1") >>"$STATE/compose-up.log" 2>&1 ||
        { tail -20 "$STATE/compose-up.log" >&2; die "podman-compose up $1 failed (log: $STATE/compose-up.log)"; }
}

# Sockets each role serves, relative to the home.
sockets_of() {
    case "$1" in
    memoryd) echo run/loop-memory/memory.sock run/broker-memory/memory.sock run/owner-memory/admin.sock ;;
    brokerd-shim) echo run/loop-broker/broker.sock ;;
    loopd-shim) echo run/loop-control/control.sock ;;
    esac
}

# ended_how ROLE: how its container last ended, in words, or nothing when it never exited: its
# exit code, podman's restarts of it, and for 137 (SIGKILL) its memory limit, the likely cause:
# podman's OOMKilled stays false on cgroups v1, so the code is all there is to tell it by.
ended_how() {
    local code oom memory restarts how
    read -r code oom memory restarts < <(podman inspect --format \
        '{{.State.ExitCode}} {{.State.OOMKilled}} {{.HostConfig.Memory}} {{.RestartCount}}' \
        "$(container_of "$1")" 2>/dev/null) || return 0
    [[ "$code" =~ ^[0-9]+$ ]] || return 0
    local limit="its memory limit"
    [[ ! "$memory" =~ ^[1-9][0-9]*$ ]] || limit+=" of $((memory / 1048576)) MiB"
    if [ "$code" = 0 ] && [ "$oom" != true ]; then
        # Podman forgets the exit code when it starts the container again: the count is all
        # that is left while it runs.
        [ "${restarts:-0}" != 0 ] || return 0
        echo "podman restarted it $restarts times since it was made (each after it ended; a log that breaks off with no error of its own was killed, most likely at $limit, compose.yaml's mem_limit)"
        return 0
    fi
    how="it last exited with code $code"
    [ "$code" != 137 ] && [ "$oom" != true ] ||
        how+=" (killed by SIGKILL: most likely at $limit, compose.yaml's mem_limit)"
    [ "${restarts:-0}" = 0 ] || how+="; podman restarted it $restarts times"
    echo "$how"
}

# restarts_of ROLE: how often podman restarted its container (0 in process mode).
restarts_of() {
    [ "$(cat "$STATE/mode" 2>/dev/null)" = container ] || { echo 0; return; }
    podman inspect --format '{{.RestartCount}}' "$(container_of "$1")" 2>/dev/null || echo 0
}

# own_error ROLE: the role's own last word, from its log: the one line a role writes when it
# cannot start ("memoryd: cannot start: ..."), else its last line.
own_error() {
    local log
    if [ "$(cat "$STATE/mode" 2>/dev/null)" = container ]; then
        log=$(podman logs --tail 40 "$(container_of "$1")" 2>&1 || true)
    else
        log=$(tail -n 40 "$STATE/$1.log" 2>/dev/null || true)
    fi
    log="${log//\/var\/lib\/boxmaker\//$HOME_DIR/}"
    log="${log//\/etc\/boxmaker\//$SETTINGS_DIR/}"
    printf '%s\n' "$log" | grep "^$1: " | tail -1 | grep . || printf '%s\n' "$log" | grep . | tail -1
}

# has_failed ROLE BASELINE: the role stopped with an error, or podman restarted it since BASELINE.
has_failed() {
    local name="$1" status code count
    if [ "$(cat "$STATE/mode" 2>/dev/null)" = container ]; then
        read -r status code count < <(podman inspect --format \
            '{{.State.Status}} {{.State.ExitCode}} {{.RestartCount}}' "$(container_of "$name")" 2>/dev/null ||
            echo missing 1 0)
        [ "$count" -gt "$2" ] && return 0
        [ "$status" != running ] && [ "$status" != created ] && [ "$status" != configured ] &&
            [ "$code" != 0 ]
    else
        ! running_pid "$name" >/dev/null
    fi
}

# stop_for_good CONTAINER: stopped, and still stopped a second later. A container that has just
# exited is restarted by podman's cleanup a moment after (restart on-failure): a stop that came
# before that was a no-op, so it is stopped again until its state and restart count hold still.
stop_for_good() {
    local last="" now tries=0
    while [ "$tries" -lt 10 ]; do
        podman stop -t 2 "$1" >/dev/null 2>&1 || true
        sleep 1
        now=$(podman inspect --format '{{.State.Status}} {{.RestartCount}}' "$1" 2>/dev/null ||
            echo missing)
        case "$now" in
        running* | restarting*) ;;
        *) [ "$now" = "$last" ] && return 0 ;;
        esac
        last=$now
        tries=$((tries + 1))
    done
}

# wait_for_roles LIMIT ROLE...: wait until each role's sockets answer a request (ask_sockets, each
# ask bounded, so that a listener that never accepts cannot hold this past LIMIT). A role that
# fails meanwhile is stopped, so that it does not restart in a loop, and its own error is printed;
# the others are still watched until each answers or fails too (a role that fails a moment after
# another gets its own line as well). Returns 1 when one failed, or when LIMIT seconds pass.
wait_for_roles() {
    local limit="$1" name line sockets failed=0 deadline pending=()
    shift
    local -A baseline
    for name; do baseline[$name]=$(restarts_of "$name"); done
    pending=("$@")
    deadline=$((SECONDS + limit))
    while :; do
        sockets=()
        for name in ${pending[@]+"${pending[@]}"}; do
            read -r -a more <<<"$(sockets_of "$name")"
            sockets+=("${more[@]}")
        done
        if [ "${#sockets[@]}" -eq 0 ] || ask_sockets silent "${sockets[@]}" >/dev/null; then
            # A process that died at its start leaves its sockets to whoever answered them before:
            # in process mode each role's own pid must be alive too.
            if [ "$(cat "$STATE/mode" 2>/dev/null)" != container ]; then
                for name in ${pending[@]+"${pending[@]}"}; do
                    has_failed "$name" 0 || continue
                    failed=1
                    report_failed "$name"
                done
            fi
            return "$failed"
        fi
        local still=()
        for name in "${pending[@]}"; do
            if has_failed "$name" "${baseline[$name]}"; then
                failed=1
                report_failed "$name"
            else
                still+=("$name")
            fi
        done
        pending=(${still[@]+"${still[@]}"})
        if [ "$SECONDS" -ge "$deadline" ]; then
            [ "${#pending[@]}" -eq 0 ] || say "no answer after ${limit}s on: $(ask_sockets silent "${sockets[@]}" | paste -sd' ')"
            for name in ${pending[@]+"${pending[@]}"}; do say "$name's last log line: $(own_error "$name")"; done
            return 1
        fi
        sleep 0.3
    done
}

# report_failed ROLE: its own one-line error, and in containers its container stopped for good.
report_failed() {
    local line
    line=$(own_error "$1")
    case "$line" in
    "$1: "*) say "$line" ;;
    *) say "$1 cannot start: ${line:-its log is empty}" ;;
    esac
    if [ "$(cat "$STATE/mode" 2>/dev/null)" = container ]; then
        stop_for_good "$(container_of "$1")"
        say "stopped $(container_of "$1") so that it does not restart in a loop; fix the cause, then scripts/stack up"
    fi
}

# limits_warning: one line when the engine cannot enforce compose.yaml's limits (rootless podman
# on cgroups v1, which says so only in its own log file); nothing otherwise.
limits_warning() {
    local version
    is_root && return 0
    version=$(podman info --format '{{.Host.CgroupsVersion}}' 2>/dev/null || true)
    [ "$version" = v1 ] || return 0
    say "warning: rootless podman on cgroups v1 cannot hold the containers' limits: memory and processes are unlimited here (compose.yaml: memoryd 1 GiB and 128 processes, each shim 256 MiB and 64); run as root, or boot with cgroups v2 (systemd.unified_cgroup_hierarchy=1), for limits that hold"
}
