#!/usr/bin/env bash
# Sourced by checks and benchmarks that bound a backend's memory.
#   peak_private_mb DB SETTINGS SQL: runs SETTINGS then SQL in one new session of DB and
#   prints "<MB> <last output line>": how far the backend's RssAnon (private memory, not
#   the shared buffers it touches) rose above its level before SQL, sampled every 20 ms.
#   Returns non-zero, printing the session's output, if the session fails.
peak_private_mb() {
    local db=$1 settings=$2 sql=$3 app="peak_$RANDOM$RANDOM" pid="" before peak=0 now out client
    out=$(mktemp)
    PGAPPNAME=$app psql -qAtX -d "$db" -v ON_ERROR_STOP=1 -c "$settings" -c "SELECT pg_sleep(0.5)" -c "$sql" >"$out" 2>&1 &
    client=$!
    while [[ -z $pid ]]; do
        pid=$(psql -qAtX -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'")
    done
    before=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status")
    while kill -0 "$client" 2>/dev/null; do
        now=$(awk '/^RssAnon/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        if ((now > peak)); then peak=$now; fi
        sleep 0.02
    done
    if ! wait "$client"; then
        cat "$out"
        rm -f "$out"
        return 1
    fi
    echo "$(((peak - before) / 1024)) $(tail -1 "$out")"
    rm -f "$out"
}
