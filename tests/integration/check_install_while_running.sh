#!/usr/bin/env bash
# Installing over a running server is harmless: with a cluster that preloads neardup and a
# session that has used it, scripts/install.sh runs again (the build is up to date, as
# run.sh has just installed it, so nothing is recompiled) while new sessions keep querying;
# then the library file is a new inode (renamed into place, not rewritten under the mapped
# old one), the postmaster still maps the old inode, the server has not restarted (same
# postmaster pid and start time, no backend killed by a signal), the old session still
# answers through neardup, a new one does too, every query made during the install
# succeeded, and the installed files are the staged ones with no temporary file left.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/scripts/cluster.sh"
DIR=/tmp/neardup-install-running
STAGE=$ROOT/target/release/neardup-pg15
LIB=${CARGO_TARGET_DIR:-$ROOT/target}/pg15/release/libneardup.so

fail() { echo "check_install_while_running: $*" >&2; exit 1; }
q() { psql -XqAt -v ON_ERROR_STOP=1 -h "$DIR" -p 5432 -U postgres -d postgres "$@"; }
QUERY="SELECT simhash('the quick brown fox jumps over the lazy dog')::text || ' ' || hamming(simhash('a b c'), simhash('a b d'))"

LOOP_PID=
cleanup() {
    [[ -z $LOOP_PID ]] || kill "$LOOP_PID" 2>/dev/null || true
    [[ -z ${OLD_PID:-} ]] || kill "$OLD_PID" 2>/dev/null || true
    cluster_stop "$DIR"
}
trap cleanup EXIT
cluster_start "$DIR" "log_min_messages = warning"
q -c "CREATE EXTENSION neardup"
expected=$(q -c "$QUERY")

# the old session: one psql kept open, fed a query at a time through a coprocess
coproc OLD { stdbuf -oL psql -XqAt -h "$DIR" -p 5432 -U postgres -d postgres 2>&1; }
# ask_old SQL: sets ANSWER to a line of the old session's answer (bash does not pass the
# coprocess's descriptors to a $(...) subshell, hence no plain function result)
ask_old() {
    echo "$1;" >&"${OLD[1]}"
    read -r -t 30 ANSWER <&"${OLD[0]}" || fail "the old session did not answer '$1'"
}
ask_old "SELECT pg_backend_pid()"
old_backend=$ANSWER
ask_old "$QUERY"
[[ $ANSWER == "$expected" ]] || fail "the old session gives a different answer before the install: $ANSWER"
pid=$(head -1 "$DIR/data/postmaster.pid")
started=$(q -c "SELECT pg_postmaster_start_time()")
so=$(/usr/lib/postgresql/15/bin/pg_config --pkglibdir)/neardup.so
old_inode=$(stat -c %i "$so")
# mapped_inodes: the inodes of neardup.so the postmaster has mapped
mapped_inodes() { awk '$6 ~ /\/neardup\.so$/ { print $5 }' "/proc/$pid/maps" | sort -u; }
[[ $(mapped_inodes) == "$old_inode" ]] || fail "the postmaster has not mapped $so (inode $old_inode): $(mapped_inodes)"
[[ -f $LIB ]] || fail "$LIB is missing: run scripts/install.sh first (run.sh does)"
lib_mtime=$(stat -c %Y "$LIB")

# new sessions during the install, each one query; any failure is recorded
errors=$(mktemp)
asked=$(mktemp)
(
    while :; do
        got=$(q -c "$QUERY" 2>&1) || true
        [[ $got == "$expected" ]] || echo "during the install a new session answered: $got" >>"$errors"
        echo >>"$asked"
        sleep 0.05
    done
) &
LOOP_PID=$!

T0=$SECONDS
"$ROOT/scripts/install.sh" >"$DIR/install.log" 2>&1 || { cat "$DIR/install.log"; fail "scripts/install.sh failed"; }
took=$((SECONDS - T0))
sleep 0.5
kill "$LOOP_PID"
wait "$LOOP_PID" 2>/dev/null || true
LOOP_PID=

[[ $(stat -c %Y "$LIB") == "$lib_mtime" ]] || fail "the up-to-date install rebuilt the library ($took s)"
[[ ! -s $errors ]] || fail "$(sort -u "$errors" | head -5)"
[[ -s $asked ]] || fail "no new session was opened during the install"
sessions=$(wc -l <"$asked")
rm -f "$errors" "$asked"
# replaced by a rename, not rewritten in place: a new inode, the server still on the old one
[[ $(stat -c %i "$so") != "$old_inode" ]] || fail "$so was rewritten in place (same inode $old_inode)"
[[ $(mapped_inodes) == "$old_inode" ]] || fail "the postmaster's mapping of neardup.so changed: $(mapped_inodes)"
[[ $(head -1 "$DIR/data/postmaster.pid") == "$pid" ]] || fail "the postmaster pid changed: the server restarted"
[[ $(q -c "SELECT pg_postmaster_start_time()") == "$started" ]] || fail "the postmaster start time changed: the server restarted"
! grep -E "terminated by signal|was terminated|server process .* exited|all server processes terminated" "$DIR/server.log" ||
    fail "a backend died during the install (server.log above)"
ask_old "SELECT pg_backend_pid()"
[[ $ANSWER == "$old_backend" ]] || fail "the old session lost its backend: $ANSWER"
ask_old "$QUERY"
[[ $ANSWER == "$expected" ]] || fail "the old session no longer answers through neardup: $ANSWER"
[[ $(q -c "$QUERY") == "$expected" ]] || fail "a new session does not answer through neardup"

# what is installed is what was staged, and no temporary name is left beside it
while IFS= read -r staged; do
    cmp -s "$staged" "${staged#"$STAGE"}" || fail "${staged#"$STAGE"} differs from the staged $staged"
done < <(find "$STAGE" -type f)
libdir=$(/usr/lib/postgresql/15/bin/pg_config --pkglibdir)
extdir=$(/usr/lib/postgresql/15/bin/pg_config --sharedir)/extension
leftovers=$(find "$libdir" "$extdir" -maxdepth 1 -name '*.neardup-install.*')
[[ -z $leftovers ]] || fail "temporary files left behind: $leftovers"
echo "check_install_while_running: install over a running server in $took s, $sessions new sessions meanwhile, server and sessions unharmed"
