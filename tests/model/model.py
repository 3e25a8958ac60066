#!/usr/bin/env python3
"""Model-based test of the `hamming` index (issue 23): an index answer must equal a
sequential scan's answer in every session and every transaction state.

One driver thread runs random steps from 2-3 sessions (connections), interleaved
deterministically (between two statements nothing else happens): INSERTs of random,
clustered (1-3 bits from a centre), duplicate, shared-prefix and NULL fingerprints, UPDATEs
(of fp, and HOT updates of a non-indexed column), DELETEs, TRUNCATE, SAVEPOINT / ROLLBACK TO /
RELEASE, COMMIT / ROLLBACK, PREPARE TRANSACTION / COMMIT PREPARED / ROLLBACK PREPARED,
VACUUM (also parallel and FULL), REINDEX (also CONCURRENTLY), ALTER INDEX SET (pending_limit
= 5..2000, so that seals and merges happen all the time), ALTER INDEX SET TABLESPACE,
CLUSTER, the index or the whole table dropped and created again (in a transaction too),
cursors read piecewise across other steps, and parallel query on and off.

The model is only what each query must return, taken from a forced sequential scan in the
same session right then: after every step, in the acting session and in one other, each
probe fingerprint's `fp <@ hamming_ball(q, r)` (r in 0, 1, 3, 5, 10) through a forced index
scan, a forced bitmap scan and, with parallel on, both under Gather with workers really
launched, and `ORDER BY fp <~> q LIMIT k` through the index (same distances; the same ids at
every distance but the last, where the index may break ties otherwise), are compared with
the sequential scan. Every so often, with no transaction open, hamming_index_check must
pass and count every row. The first difference prints the seed, the step, the last steps
and both answers, and exits 1. Plans are checked with EXPLAIN; the run fails if a kind of
plan (or a parallel plan with launched workers) was never seen.

Needs a cluster with neardup preloaded, max_prepared_transactions >= 4 and room for
parallel workers (tests/integration/check_model.sh starts one), psycopg 3, and PGHOST /
PGPORT / PGUSER (a superuser) in the environment. Usage:
    python3 tests/model/model.py --seed 1 --steps 2000 [--sessions 3]
        [--tablespace-dir DIR (empty, owned by postgres)] [--disable parallel,prepare,...]
Exit status: 0 ok, 1 a wrong answer or an unexpected error, 2 a harness problem.
"""

import argparse
import collections
import os
import random
import re
import sys
import time

import psycopg

RADII = (0, 1, 3, 5, 10)
KNN_LIMITS = (1, 3, 10, 50, 300, 100000)
# Errors a step may meet by design; anything else is a failure.
EXPECTED = {
    "55P03": "lock_not_available",
    "40001": "serialization_failure",
    "40P01": "deadlock_detected",
}
STRONG_KINDS = {"ddl_in_savepoint", "truncate", "reindex", "reindex_conc", "alter_ts", "cluster", "vacuum_full",
                "recreate_index", "recreate_table", "heap_ts"}
ALL_KINDS = sorted(STRONG_KINDS | {
    "begin", "insert", "update", "delete", "savepoint", "rollback_to", "release", "commit",
    "rollback", "prepare", "resolve_prepared", "vacuum", "alter_limit", "parallel", "cursor",
    "check", "analyze", "ddl_in_savepoint"})

PLAN_FORCE = {
    "seq": dict(enable_seqscan="on", enable_indexscan="off", enable_bitmapscan="off",
                enable_indexonlyscan="off"),
    "index": dict(enable_seqscan="off", enable_indexscan="on", enable_bitmapscan="off",
                  enable_indexonlyscan="off"),
    "bitmap": dict(enable_seqscan="off", enable_indexscan="off", enable_bitmapscan="on",
                   enable_indexonlyscan="off"),
}
# the setting that pushes queries into parallel workers, renamed in PostgreSQL 16
FORCE_PARALLEL = os.environ.get("NEARDUP_FORCE_PARALLEL", "force_parallel_mode")
SERIAL = {FORCE_PARALLEL: "off", "max_parallel_workers_per_gather": "0"}
PARALLEL = {FORCE_PARALLEL: "on", "parallel_setup_cost": "0", "parallel_tuple_cost": "0",
            "min_parallel_table_scan_size": "0", "min_parallel_index_scan_size": "0",
            "max_parallel_workers_per_gather": "2"}


class Failure(Exception):
    """A wrong answer or an unexpected error: the test fails."""


class Expected(Exception):
    """A statement failed with one of the EXPECTED errors (the step is a no-op)."""

    def __init__(self, sqlstate, message):
        super().__init__(message)
        self.sqlstate = sqlstate


def fp_hex(v):
    return None if v is None else "%016x" % v


def lit(v):
    return "NULL" if v is None else "'%016x'" % v


def flip(rng, v, n):
    for b in rng.sample(range(64), n):
        v ^= 1 << b
    return v


class Session:
    def __init__(self, n, conn):
        self.n = n
        self.conn = conn
        self.in_tx = False
        self.iso = None
        self.savepoints = []
        self.strong_level = None  # savepoint depth at which a strong lock was taken
        self.parallel = False
        self.cursor = None  # an open cursor pair (see step_cursor)
        self.sp_counter = 0

    @property
    def strong(self):
        return self.strong_level is not None

    def state(self):
        if not self.in_tx:
            return "idle"
        s = "tx(%s)" % self.iso
        if self.savepoints:
            s += " sp=%s" % ",".join(self.savepoints)
        if self.strong:
            s += " strong"
        return s


class Model:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.disabled = set(filter(None, args.disable.split(",")))
        unknown = self.disabled - set(ALL_KINDS)
        if unknown:
            sys.exit("unknown step kinds: %s (known: %s)" % (",".join(unknown), ",".join(ALL_KINDS)))
        self.history = collections.deque(maxlen=args.history)
        self.step_no = 0
        self.next_id = 1
        self.prepared = []  # dicts: gid, strong
        self.gid_counter = 0
        self.rows_estimate = 0
        self.recent = collections.deque(maxlen=400)
        self.centres = [self.rng.getrandbits(64) for _ in range(12)]
        self.prefixes = [(self.rng.getrandbits(64), self.rng.choice((16, 24, 32))) for _ in range(4)]
        self.stats = collections.Counter()
        self.plans_seen = collections.Counter()
        self.plan_checks = collections.Counter()
        self.workers_launched = collections.Counter()
        self.index_opts = "pending_limit = 50, max_distance = 3"
        self.probe_rounds = 0
        self.since_check = 0
        self.phase = None
        self.last_query = None

    # ---------------------------------------------------------------- plumbing
    def log(self, s, text):
        tag = "s%d" % s.n if s is not None else "--"
        line = "%6d %s [%s] %s" % (self.step_no, tag, s.state() if s else "", text)
        self.history.append(line)
        if self.args.trace:
            print(line[:400], flush=True)

    def run(self, s, sql, log=True, fetch=False):
        """Runs sql in session s; returns rows if fetch. Raises Expected or Failure."""
        if log:
            self.log(s, sql if len(sql) < 300 else sql[:300] + " ...")
        try:
            cur = s.conn.execute(sql)
            return cur.fetchall() if fetch else None
        except psycopg.Error as e:
            state = e.sqlstate or "?????"
            if state in EXPECTED:
                self.log(s, "  -> expected error %s: %s" % (state, str(e).strip().splitlines()[0]))
                self.stats["error " + EXPECTED[state]] += 1
                raise Expected(state, str(e)) from None
            raise Failure("unexpected error %s in session %d running:\n  %s\n%s"
                          % (state, s.n, sql[:2000], str(e).strip())) from None

    def set_gucs(self, s, gucs):
        sql = "SELECT " + ", ".join("set_config('%s', '%s', false)" % kv for kv in gucs.items())
        s.conn.execute(sql)

    def connect(self, dbname):
        conn = psycopg.connect(dbname=dbname, autocommit=True)
        conn.execute("SET lock_timeout = '%dms'" % self.args.lock_timeout_ms)
        conn.execute("SET statement_timeout = '120s'")
        conn.execute("SET client_min_messages = warning")
        return conn

    # ---------------------------------------------------------------- setup
    def setup(self):
        admin = psycopg.connect(dbname="postgres", autocommit=True)
        db = self.args.db
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,)).fetchone():
            # prepared transactions left by an earlier run keep the database busy
            c = psycopg.connect(dbname=db, autocommit=True)
            for (gid,) in c.execute("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()").fetchall():
                c.execute("ROLLBACK PREPARED '%s'" % gid)
            c.close()
            admin.execute('DROP DATABASE "%s" WITH (FORCE)' % db)
        admin.execute('CREATE DATABASE "%s"' % db)
        self.tablespace = None
        if self.args.tablespace_dir and "alter_ts" not in self.disabled:
            ts = "neardup_model_ts"
            if not admin.execute("SELECT 1 FROM pg_tablespace WHERE spcname = %s", (ts,)).fetchone():
                admin.execute("CREATE TABLESPACE %s LOCATION '%s'" % (ts, self.args.tablespace_dir))
            self.tablespace = ts
        else:
            self.disabled |= {"alter_ts", "heap_ts"}
        admin.close()
        c = self.connect(db)
        c.execute("CREATE EXTENSION neardup")
        c.execute("CREATE TABLE t (id int, fp simhash64, note int)")
        c.execute("CREATE INDEX t_id ON t (id)")
        c.execute("CREATE INDEX t_fp ON t USING hamming (fp) WITH (%s)" % self.index_opts)
        c.close()
        self.sessions = [Session(i, self.connect(db)) for i in range(self.args.sessions)]
        for s in self.sessions:
            s.parallel = self.rng.random() < 0.5 and "parallel" not in self.disabled

    # ---------------------------------------------------------------- fingerprints
    def new_fp(self):
        r = self.rng.random()
        if r < 0.04:
            v = None
        elif r < 0.30 or not self.recent:
            v = self.rng.getrandbits(64)
        elif r < 0.55:
            v = flip(self.rng, self.rng.choice(self.centres), self.rng.randint(1, 3))
        elif r < 0.70:
            v = self.rng.choice(self.recent)  # an exact duplicate
        elif r < 0.85:
            p, bits = self.rng.choice(self.prefixes)
            low = (1 << (64 - bits)) - 1
            v = (p & ~low & (2**64 - 1)) | (self.rng.getrandbits(64) & low)
        else:
            v = flip(self.rng, self.rng.choice(self.recent), self.rng.randint(1, 4))
        if v is not None:
            self.recent.append(v)
        return v

    def probe_fps(self):
        out = []
        for _ in range(self.args.probes - 1):
            base = self.rng.choice(self.recent) if self.recent else self.rng.getrandbits(64)
            out.append(flip(self.rng, base, self.rng.randint(0, 4)))
        out.append(self.rng.getrandbits(64) if self.rng.random() < 0.5
                   else flip(self.rng, self.rng.choice(self.centres), self.rng.randint(0, 2)))
        return out

    def some_ids(self, n):
        lo = max(1, self.next_id - 3000)
        return sorted({self.rng.randrange(lo, self.next_id + 1) for _ in range(n)})

    # ---------------------------------------------------------------- comparing answers
    def ball_sql(self, probes):
        parts = []
        for i, q in enumerate(probes):
            for r in RADII:
                # both spellings of the ball: the function and the untyped literal
                ball = ("'(%s,%d)'" % (fp_hex(q), r)) if r == 5 else "hamming_ball(%s, %d)" % (lit(q), r)
                parts.append("SELECT %d AS k, id FROM t WHERE fp <@ %s" % (i * 100 + r, ball))
        return " UNION ALL ".join(parts)

    def knn_sql(self, q, k, tiebreak):
        # one statement per probe: a subquery with LIMIT under UNION ALL is never run in
        # parallel, so the parallel variant would silently be serial
        order = "fp <~> %s" % lit(q) + (", id" if tiebreak else "")
        return "SELECT id, fp <~> %s AS d FROM t ORDER BY %s LIMIT %d" % (lit(q), order, k)

    def check_plan(self, s, kind, parallel, sql):
        """EXPLAIN the query as forced; counts plans seen and launched workers."""
        label = kind + ("/parallel" if parallel else "")
        self.plan_checks[label] += 1
        analyze = "ANALYZE, TIMING OFF, SUMMARY OFF, " if parallel else ""
        plan = "\n".join(r[0] for r in s.conn.execute("EXPLAIN (%sCOSTS OFF) %s" % (analyze, sql)).fetchall())
        ok = {
            "seq": "Seq Scan on t" in plan and "t_fp" not in plan,
            "index": "Index Scan using t_fp" in plan and "Seq Scan on t" not in plan and "Bitmap" not in plan,
            "bitmap": "Bitmap Index Scan on t_fp" in plan and "Seq Scan on t" not in plan
                      and "Index Scan using t_fp" not in plan,
        }[kind]
        if parallel:
            ok = ok and "Gather" in plan
        if not ok:
            raise Failure("the plan forced as %s in session %d is not one:\n%s\nfor: %s" % (label, s.n, plan, sql[:500]))
        self.plans_seen[label] += 1
        if parallel:
            launched = sum(int(n) for n in re.findall(r"Workers Launched: (\d+)", plan))
            if launched:
                self.workers_launched[label] += 1
                self.workers_launched["%s in %s" % (label, "tx" if s.in_tx else "autocommit")] += 1

    def query(self, s, kind, parallel, sql, verify):
        gucs = dict(PLAN_FORCE[kind])
        gucs.update(PARALLEL if parallel else SERIAL)
        self.set_gucs(s, gucs)
        self.last_query = "%s%s: %s" % (kind, " (parallel)" if parallel else "", sql)
        if verify:
            self.check_plan(s, kind, parallel, sql)
        return s.conn.execute(sql).fetchall()

    def mismatch(self, s, what, sql, got, expected, note=""):
        raise Failure("WRONG ANSWER in session %d (%s) for %s%s\nquery: %s\nindex answer: %s\nseq scan:     %s"
                      % (s.n, s.state(), what, note, sql[:3000], got, expected))

    def describe_ids(self, s, ids):
        if not ids:
            return ""
        try:
            self.set_gucs(s, dict(PLAN_FORCE["seq"], **SERIAL))
            rows = s.conn.execute("SELECT id, fp::text, ctid::text FROM t WHERE id = ANY(%s) ORDER BY id",
                                  (sorted(ids)[:50],)).fetchall()
            return "\n  rows (id, fp, ctid) as the seq scan sees them: %s" % rows
        except psycopg.Error as e:
            return "\n  (could not read the rows: %s)" % e

    def probe(self, s, why):
        """Compares index answers with the seq scan's in session s."""
        self.probe_rounds += 1
        probes = self.probe_fps()
        sql = self.ball_sql(probes)
        n = self.probe_rounds
        verify = n <= 6 or n % self.args.verify_every == 0
        verify_par = n <= 6 or n % max(1, self.args.verify_every // 3) == 0
        ref = self.query(s, "seq", False, sql, verify)
        expected = collections.defaultdict(list)
        for k, i in ref:
            expected[k].append(i)
        kinds = [("index", False), ("bitmap", False)]
        if s.parallel:
            kinds += [("index", True), ("bitmap", True)]
        for kind, par in kinds:
            got = collections.defaultdict(list)
            for k, i in self.query(s, kind, par, sql, verify_par if par else verify):
                got[k].append(i)
            for k in sorted(set(got) | set(expected)):
                a, b = sorted(got[k]), sorted(expected[k])
                if a != b:
                    q, r = probes[k // 100], k % 100
                    extra, missing = set(a) - set(b), set(b) - set(a)
                    self.mismatch(s, "fp <@ hamming_ball('%s', %d) by a%s %s scan" % (
                        fp_hex(q), r, " parallel" if par else "", kind),
                        sql, "%d rows; extra ids %s; missing ids %s%s" % (
                            len(a), sorted(extra)[:30], sorted(missing)[:30],
                            "; duplicates" if len(set(a)) != len(a) else ""),
                        "%d rows" % len(b), self.describe_ids(s, extra | missing))
            self.stats["compared %s%s" % (kind, "/parallel" if par else "")] += 1
        self.stats["matches compared"] += len(ref)

        # nearest neighbours
        for q in probes[: max(1, len(probes) - 1)]:
            k = self.rng.choice(KNN_LIMITS)
            idx_sql = self.knn_sql(q, k, False)
            ref = self.query(s, "seq", False, self.knn_sql(q, k, True), verify)
            kinds = [("index", False)] + ([("index", True)] if s.parallel else [])
            for kind, par in kinds:
                got = self.query(s, kind, par, idx_sql, verify_par if par else verify)
                self.compare_knn(s, q, k, idx_sql, got, ref, par)
                self.stats["compared knn%s" % ("/parallel" if par else "")] += 1

    def compare_knn(self, s, q, k, sql, got, ref, par):
        what = "ORDER BY fp <~> '%s' LIMIT %d through a%s index scan" % (fp_hex(q), k, " parallel" if par else "")
        gd, ed = [d for _, d in got], [d for _, d in ref]
        if gd != ed:
            self.mismatch(s, what + " (distances)", sql, got[:60], ref[:60])
        ids = [i for i, _ in got]
        if len(set(ids)) != len(ids):
            self.mismatch(s, what + " (a row twice)", sql, got[:60], ref[:60])
        if not gd:
            return
        last = gd[-1]
        for dist in sorted(set(d for d in gd if d != last), key=lambda d: (d is None, d)):
            a = sorted(i for i, d in got if d == dist)
            b = sorted(i for i, d in ref if d == dist)
            if a != b:
                self.mismatch(s, what + " (rows at distance %s)" % dist, sql, a, b)
        a = sorted(i for i, d in got if d == last)
        b = sorted(i for i, d in ref if d == last)
        if a != b:
            # ties at the cut-off: the index's rows must be rows at that distance
            cond = "fp IS NULL" if last is None else "fp <~> %s = %d" % (lit(q), last)
            self.set_gucs(s, dict(PLAN_FORCE["seq"], **SERIAL))
            allrows = {r[0] for r in s.conn.execute("SELECT id FROM t WHERE %s" % cond).fetchall()}
            if not set(a) <= allrows:
                self.mismatch(s, what + " (rows at the last distance %s)" % last, sql, a,
                              "any %d of %s" % (len(b), sorted(allrows)[:60]))

    def safe_probe(self, s, why, count=False):
        try:
            self.probe(s, why)
            if count:
                self.set_gucs(s, dict(PLAN_FORCE["seq"], **SERIAL))
                self.rows_estimate = s.conn.execute("SELECT count(*) FROM t").fetchone()[0]
        except psycopg.Error as e:
            # Only a lock wait may fail a read.
            if e.sqlstate != "55P03":
                raise Failure("unexpected error %s in session %d while probing: %s\nthe query, forced as %s"
                              % (e.sqlstate, s.n, e, self.last_query)) from None
            self.log(s, "  -> probe hit lock_timeout")
            self.stats["probes that hit lock_timeout"] += 1
            self.recover(s)

    def probe_all(self, acting, why):
        self.safe_probe(acting, why, count=self.step_no % 5 == 0)
        holder = self.strong_holder()
        others = [o for o in self.sessions if o is not acting and (holder is None or holder is o)]
        if others:
            self.safe_probe(self.rng.choice(others), why + " (observer)")

    # ---------------------------------------------------------------- session state
    def strong_holder(self):
        for s in self.sessions:
            if s.in_tx and s.strong:
                return s
        for p in self.prepared:
            if p["strong"]:
                return p
        return None

    def quiet_for(self, s):
        """No other session in a transaction, nothing prepared: a strong lock is free."""
        return not self.prepared and all(not o.in_tx for o in self.sessions if o is not s)

    def all_idle(self):
        return not self.prepared and all(not o.in_tx for o in self.sessions)

    def recover(self, s):
        """After an expected error: roll back to the innermost savepoint, or the whole transaction."""
        had_cursor, s.cursor = s.cursor is not None, None
        if not s.in_tx:
            return
        if s.savepoints:
            sp = s.savepoints[-1]
            self.run(s, "ROLLBACK TO SAVEPOINT %s" % sp)
            if had_cursor:  # declared before the savepoint, it may survive, in an undefined state
                self.run(s, "CLOSE ALL")
            depth = len(s.savepoints)
            if s.strong_level is not None and s.strong_level >= depth:
                s.strong_level = None
        else:
            self.run(s, "ROLLBACK")
            self.end_tx(s)

    def end_tx(self, s):
        s.in_tx = False
        s.iso = None
        s.savepoints = []
        s.strong_level = None
        s.cursor = None

    def take_strong(self, s):
        if s.in_tx and s.strong_level is None:
            s.strong_level = len(s.savepoints)

    # ---------------------------------------------------------------- steps
    def step_begin(self, s):
        iso = "REPEATABLE READ" if self.rng.random() < 0.35 else "READ COMMITTED"
        self.run(s, "BEGIN ISOLATION LEVEL %s" % iso)
        s.in_tx, s.iso = True, "rr" if iso.startswith("REPEATABLE") else "rc"

    def step_insert(self, s):
        r = self.rng.random()
        n = 1 if r < 0.35 else self.rng.randint(2, 20) if r < 0.75 else self.rng.randint(20, 200) if r < 0.93 \
            else self.rng.randint(300, 1300)
        rows = []
        for _ in range(n):
            rows.append("(%d, %s)" % (self.next_id, lit(self.new_fp())))
            self.next_id += 1
        self.run(s, "INSERT INTO t (id, fp) VALUES " + ", ".join(rows))
        self.rows_estimate += n

    def step_update(self, s):
        r = self.rng.random()
        if r < 0.55:
            vals = ", ".join("(%d, %s)" % (i, lit(self.new_fp())) for i in self.some_ids(self.rng.randint(1, 12)))
            self.run(s, "UPDATE t SET fp = v.fp::simhash64 FROM (VALUES %s) v(id, fp) WHERE t.id = v.id" % vals)
        elif r < 0.8:  # HOT: no indexed column changes
            ids = self.some_ids(self.rng.randint(1, 30))
            self.run(s, "UPDATE t SET note = coalesce(note, 0) + 1 WHERE id IN (%s)" % ",".join(map(str, ids)))
        elif r < 0.92:
            m = self.rng.randint(5, 40)
            self.run(s, "UPDATE t SET fp = %s WHERE id %% %d = %d" % (lit(self.new_fp()), m, self.rng.randrange(m)))
        else:
            q = self.rng.choice(self.recent) if self.recent else 0
            self.run(s, "UPDATE t SET fp = NULL WHERE fp <@ hamming_ball(%s, 1)" % lit(q))

    def step_delete(self, s):
        r = self.rng.random()
        big = self.rows_estimate > self.args.max_rows
        if r < 0.5 and not big:
            ids = self.some_ids(self.rng.randint(1, 25))
            self.run(s, "DELETE FROM t WHERE id IN (%s)" % ",".join(map(str, ids)))
        elif r < 0.8 or big:
            m = self.rng.randint(2, 10) if big else self.rng.randint(5, 50)
            self.run(s, "DELETE FROM t WHERE id %% %d = %d" % (m, self.rng.randrange(m)))
        else:
            q = self.rng.choice(self.recent) if self.recent else 0
            self.run(s, "DELETE FROM t WHERE fp <@ hamming_ball(%s, %d)" % (lit(q), self.rng.randint(0, 4)))

    def step_truncate(self, s):
        self.run(s, "TRUNCATE t")
        if s.savepoints:
            self.stats["shape: truncate in a savepoint"] += 1
        self.take_strong(s)
        self.rows_estimate = 0

    def step_savepoint(self, s):
        s.sp_counter += 1
        name = "sp%d" % s.sp_counter
        self.run(s, "SAVEPOINT " + name)
        s.savepoints.append(name)

    def step_rollback_to(self, s):
        i = self.rng.randrange(len(s.savepoints))
        self.run(s, "ROLLBACK TO SAVEPOINT " + s.savepoints[i])
        del s.savepoints[i + 1:]
        if s.strong_level is not None and s.strong_level >= i + 1:
            self.stats["shape: strong lock rolled back to a savepoint"] += 1
            s.strong_level = None

    def step_release(self, s):
        i = self.rng.randrange(len(s.savepoints))
        self.run(s, "RELEASE SAVEPOINT " + s.savepoints[i])
        del s.savepoints[i:]
        if s.strong_level is not None and s.strong_level > i:
            s.strong_level = i

    def step_commit(self, s):
        try:
            self.run(s, "COMMIT")
        finally:
            self.end_tx(s)

    def step_rollback(self, s):
        self.run(s, "ROLLBACK")
        self.end_tx(s)

    def step_prepare(self, s):
        self.gid_counter += 1
        gid = "model_%d_%d" % (self.args.seed, self.gid_counter)
        strong = s.strong
        try:
            self.run(s, "PREPARE TRANSACTION '%s'" % gid)
        finally:
            self.end_tx(s)
        self.prepared.append(dict(gid=gid, strong=strong))

    def step_resolve_prepared(self, s):
        p = self.rng.choice(self.prepared)
        verb = "COMMIT" if self.rng.random() < 0.6 else "ROLLBACK"
        self.run(s, "%s PREPARED '%s'" % (verb, p["gid"]))
        self.prepared.remove(p)

    def step_vacuum(self, s):
        r = self.rng.random()
        if r < 0.3:
            self.set_gucs(s, dict(min_parallel_index_scan_size="0"))
            self.run(s, "VACUUM (PARALLEL 2) t")
        elif r < 0.4:
            self.run(s, "VACUUM (INDEX_CLEANUP ON, TRUNCATE ON) t")
        else:
            self.run(s, "VACUUM t")

    def step_analyze(self, s):
        self.run(s, "ANALYZE t")

    def step_vacuum_full(self, s):
        self.run(s, "VACUUM FULL t")

    def step_reindex(self, s):
        self.run(s, self.rng.choice(("REINDEX INDEX t_fp", "REINDEX TABLE t")))
        self.take_strong(s)

    def step_reindex_conc(self, s):
        self.run(s, self.rng.choice(("REINDEX INDEX CONCURRENTLY t_fp", "REINDEX TABLE CONCURRENTLY t")))

    def step_alter_limit(self, s):
        if self.rng.random() < 0.1:
            self.run(s, "ALTER INDEX t_fp RESET (pending_limit)")
        else:
            n = self.rng.choice((5, 10, 20, 50, 100, 200, 600, 2000))
            self.run(s, "ALTER INDEX t_fp SET (pending_limit = %d)" % n)

    def step_alter_ts(self, s):
        ts = self.rng.choice((self.tablespace, "pg_default"))
        self.run(s, "ALTER INDEX t_fp SET TABLESPACE %s" % ts)
        self.take_strong(s)

    def step_heap_ts(self, s):
        ts = self.rng.choice((self.tablespace, "pg_default"))
        self.run(s, "ALTER TABLE t SET TABLESPACE %s" % ts)
        self.take_strong(s)

    def step_cluster(self, s):
        self.run(s, "CLUSTER t USING t_id")
        self.take_strong(s)

    def index_ddl(self):
        limit = self.rng.choice((5, 20, 50, 200, 1000))
        dist = self.rng.choice((3, 3, 1, 5))
        return "CREATE INDEX t_fp ON t USING hamming (fp) WITH (pending_limit = %d, max_distance = %d)" % (limit, dist)

    def step_recreate_index(self, s):
        self.run(s, "DROP INDEX t_fp")
        self.take_strong(s)
        self.run(s, self.index_ddl())

    def step_recreate_table(self, s):
        self.run(s, "DROP TABLE t")
        self.take_strong(s)
        self.rows_estimate = 0
        self.run(s, "CREATE TABLE t (id int, fp simhash64, note int)")
        self.run(s, "CREATE INDEX t_id ON t (id)")
        if self.rng.random() < 0.5:
            self.run(s, self.index_ddl())
        else:  # the index built over rows already there
            self.step_insert(s)
            self.run(s, self.index_ddl())

    def step_ddl_in_savepoint(self, s):
        """A savepoint, a rewrite of the table or the index in it, then more rows: the
        savepoint may later be rolled back to or released by the ordinary steps."""
        self.step_savepoint(s)
        ddl = self.rng.choice([k for k in ("truncate", "truncate", "reindex", "cluster", "recreate_index", "alter_ts")
                               if k not in self.disabled] or ["savepoint"])
        getattr(self, "step_" + ddl)(s)
        self.step_insert(s)

    def step_parallel(self, s):
        s.parallel = not s.parallel
        self.log(s, "-- parallel probes %s" % ("on" if s.parallel else "off"))

    def step_check(self, s):
        """hamming_index_check with nothing open: passes and counts every row."""
        self.set_gucs(s, dict(PLAN_FORCE["seq"], **SERIAL))
        try:
            n = self.run(s, "SELECT hamming_index_check('t_fp')", fetch=True)[0][0]
        except Failure as f:
            raise Failure("hamming_index_check failed: %s" % f) from None
        total = self.run(s, "SELECT count(*) FROM t", fetch=True)[0][0]
        self.rows_estimate = total
        self.stats["index checks"] += 1
        self.since_check = 0
        if n != total:
            raise Failure("hamming_index_check counts %d rows, the table has %d" % (n, total))

    def step_check_in_tx(self, s):
        """hamming_index_check inside s's transaction (its own uncommitted rows must be indexed)."""
        try:
            self.run(s, "SELECT hamming_index_check('t_fp')", fetch=True)
        except Failure as f:
            raise Failure("hamming_index_check in a transaction failed: %s" % f) from None
        self.stats["index checks in a transaction"] += 1

    def step_cursor(self, s):
        """Opens a pair of cursors (index, seq) on one query, or fetches from the open pair;
        the index cursor's rows, read in pieces across other steps, must be the seq one's."""
        c = s.cursor
        if c is None:
            q = self.probe_fps()[0]
            knn = self.rng.random() < 0.4
            if knn:
                sql = "SELECT id, fp <~> %s FROM t ORDER BY fp <~> %s" % (lit(q), lit(q))
                ref_sql = sql + ", id"
                kind = "index"
            else:
                sql = ref_sql = "SELECT id, NULL::int FROM t WHERE fp <@ hamming_ball(%s, %d)" % (lit(q), self.rng.choice(RADII))
                kind = self.rng.choice(("index", "bitmap"))
            self.set_gucs(s, dict(PLAN_FORCE[kind], **SERIAL))
            self.run(s, "DECLARE ci NO SCROLL CURSOR FOR " + sql)
            self.set_gucs(s, dict(PLAN_FORCE["seq"], **SERIAL))
            self.run(s, "DECLARE cs NO SCROLL CURSOR FOR " + ref_sql)
            s.cursor = dict(sql=sql, knn=knn, kind=kind, got=[], fetches=0)
            return
        done = c["fetches"] >= 3 or self.rng.random() < 0.3
        rows = self.run(s, "FETCH %s FROM ci" % ("ALL" if done else self.rng.randint(1, 40)), fetch=True)
        c["got"] += rows
        c["fetches"] += 1
        if done:
            self.finish_cursor(s)

    def finish_cursor(self, s):
        c = s.cursor
        if c is None:
            return
        c["got"] += self.run(s, "FETCH ALL FROM ci", fetch=True)
        ref = self.run(s, "FETCH ALL FROM cs", fetch=True)
        self.run(s, "CLOSE ci")
        self.run(s, "CLOSE cs")
        s.cursor = None
        got = c["got"]
        self.stats["cursors compared"] += 1
        what = "a cursor (%s scan) read in %d pieces" % (c["kind"], c["fetches"] + 1)
        if c["knn"]:
            if [d for _, d in got] != [d for _, d in ref] or sorted(got) != sorted(ref):
                self.mismatch(s, what, c["sql"], got[:80], ref[:80])
        elif sorted(got) != sorted(ref):
            self.mismatch(s, what, c["sql"], sorted(got)[:80], sorted(ref)[:80])

    # ---------------------------------------------------------------- the driver
    def choices(self, s):
        """(kind, weight) of the steps legal for s now."""
        quiet = self.quiet_for(s)
        big = self.rows_estimate > self.args.max_rows
        # a strong lock when others may hold locks: sometimes, to meet lock_timeout
        def strong_w(w):
            return w if quiet else w * 0.03
        c = []
        if not s.in_tx:
            c += [("begin", 14), ("insert", 6 if big else 10), ("update", 4), ("delete", 8 if big else 3),
                  ("vacuum", 3), ("analyze", 0.3), ("alter_limit", 1.5), ("parallel", 1.5),
                  ("truncate", strong_w(3 if big else 0.7)), ("vacuum_full", strong_w(0.4)),
                  ("reindex", strong_w(1)), ("reindex_conc", 1.2 if quiet else 0),
                  ("alter_ts", strong_w(1)), ("heap_ts", strong_w(0.3)), ("cluster", strong_w(0.7)),
                  ("recreate_index", strong_w(0.4)), ("recreate_table", strong_w(0.25))]
            if self.prepared:
                c.append(("resolve_prepared", 6))
            if self.all_idle():
                c.append(("check", 0.5 + (3 if self.since_check > self.args.check_every else 0)))
        else:
            c += [("insert", 6 if big else 12), ("update", 5), ("delete", 8 if big else 4),
                  ("savepoint", 6), ("commit", 4.5), ("rollback", 1.5), ("parallel", 1.5),
                  ("alter_limit", 1), ("cursor", 3 if s.cursor is None else 8),
                  ("truncate", strong_w(2.5 if big else 1.5)), ("reindex", strong_w(1.2)),
                  ("alter_ts", strong_w(1)), ("heap_ts", strong_w(0.3)), ("cluster", strong_w(0.5)),
                  ("recreate_index", strong_w(0.4)), ("recreate_table", strong_w(0.8)),
                  ("ddl_in_savepoint", strong_w(2))]
            if s.savepoints:
                c += [("rollback_to", 5), ("release", 2)]
            if len(self.prepared) < 2:
                c.append(("prepare", 1.5))
            if quiet:
                c.append(("check_in_tx", 0.3))
            if self.args.no_ddl_in_tx:
                c = [(k, w) for k, w in c if k not in STRONG_KINDS]
        return [(k, w) for k, w in c if w > 0 and k.removesuffix("_in_tx") not in self.disabled]

    def pick(self):
        holder = self.strong_holder()
        if isinstance(holder, dict):  # a prepared transaction holds a strong lock: resolve it
            idle = [s for s in self.sessions if not s.in_tx]
            if idle:
                return self.rng.choice(idle), "resolve_prepared"
            return self.rng.choice(self.sessions), "commit"
        if holder is not None:
            return holder, self.weighted(holder)
        # Now and then one session acts alone for a while (the others first end their
        # transactions and the prepared ones are resolved): only then may it take strong
        # locks freely, so transactions mixing DML, savepoints and DDL happen often.
        ph = self.phase
        if ph is None and self.rng.random() < self.args.solo_rate:
            ph = self.phase = dict(solo=self.rng.choice(self.sessions), left=self.rng.randint(15, 60))
            self.log(None, "-- s%d to act alone for %d steps" % (ph["solo"].n, ph["left"]))
        if ph is not None:
            solo = ph["solo"]
            busy = [o for o in self.sessions if o is not solo and o.in_tx]
            if busy:
                o = self.rng.choice(busy)
                return o, ("commit" if self.rng.random() < 0.7 else "rollback")
            if self.prepared:
                idle = [o for o in self.sessions if not o.in_tx]
                return self.rng.choice(idle), "resolve_prepared"
            ph["left"] -= 1
            if ph["left"] <= 0:
                self.phase = None
            return solo, self.weighted(solo)
        s = self.rng.choice(self.sessions)
        return s, self.weighted(s)

    def weighted(self, s):
        kinds = self.choices(s)
        total = sum(w for _, w in kinds)
        x = self.rng.random() * total
        for k, w in kinds:
            x -= w
            if x < 0:
                return k
        return kinds[-1][0]

    def one_step(self):
        s, kind = self.pick()
        if s.cursor is not None and kind not in ("insert", "update", "delete", "savepoint", "cursor", "parallel"):
            self.finish_cursor(s)  # DDL is refused while the session has the table open in a cursor
        self.stats["step " + kind] += 1
        try:
            getattr(self, "step_" + kind)(s)
        except Expected:
            self.stats["failed step " + kind] += 1
            if kind == "reindex_conc":
                raise Failure("REINDEX CONCURRENTLY failed with no other transaction open")
            self.recover(s)
        self.since_check += 1
        self.probe_all(s, kind)

    def finish(self):
        """Ends every transaction (commits), resolves the prepared ones, and checks."""
        for s in self.sessions:
            if s.in_tx:
                self.finish_cursor(s)
                try:
                    self.step_commit(s)
                except Expected:
                    self.end_tx(s)
        for p in list(self.prepared):
            self.run(self.sessions[0], "COMMIT PREPARED '%s'" % p["gid"])
            self.prepared.remove(p)
        self.probe_all(self.sessions[0], "final")
        self.step_check(self.sessions[0])

    def main(self):
        t0 = time.time()
        self.setup()
        try:
            while self.step_no < self.args.steps:
                self.step_no += 1
                self.one_step()
            self.step_no += 1
            self.finish()
        except Failure as f:
            print("model: FAILED at step %d of seed %d (%d sessions)" % (self.step_no, self.args.seed, self.args.sessions))
            print("model: reproduce with: python3 tests/model/model.py --seed %d --steps %d --sessions %d%s"
                  % (self.args.seed, self.step_no, self.args.sessions,
                     (" --disable " + ",".join(sorted(self.disabled)) if self.args.disable else "")
                     + (" --no-ddl-in-tx" if self.args.no_ddl_in_tx else "")))
            print("model: the last %d steps (step, session, its state before, statement):" % len(self.history))
            for h in self.history:
                print("  " + h)
            print(str(f))
            return 1
        problems = []
        # every kind of step that is not disabled was taken at least once
        for kind in ALL_KINDS:
            if kind not in self.disabled and not self.stats["step " + kind]:
                problems.append("no %s step was taken" % kind)
        for label in ("seq", "index", "bitmap"):
            if not self.plans_seen[label]:
                problems.append("no %s plan was ever checked" % label)
        if "parallel" not in self.disabled:
            for label in ("index/parallel", "bitmap/parallel"):
                if not self.workers_launched[label]:
                    problems.append("no parallel %s scan ever launched a worker (%d checked)"
                                    % (label.split("/")[0], self.plan_checks[label]))
        dt = time.time() - t0
        print("model: seed %d, %d steps, %d sessions, %.0f s" % (self.args.seed, self.args.steps, self.args.sessions, dt))
        print("model: " + ", ".join("%s %d" % kv for kv in sorted(self.stats.items())))
        print("model: plans checked: " + ", ".join("%s %d" % kv for kv in sorted(self.plans_seen.items())))
        print("model: parallel plans with workers launched: "
              + ", ".join("%s %d" % kv for kv in sorted(self.workers_launched.items())))
        if problems:
            print("model: FAILED: " + "; ".join(problems))
            return 2
        print("model: ok")
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=3, choices=(2, 3, 4))
    ap.add_argument("--probes", type=int, default=3, help="probe fingerprints per comparison")
    ap.add_argument("--db", default="neardup_model")
    ap.add_argument("--tablespace-dir", default=os.environ.get("MODEL_TABLESPACE_DIR"),
                    help="an empty directory owned by postgres (else no SET TABLESPACE steps)")
    ap.add_argument("--disable", default="", help="comma-separated step kinds not to run: " + ",".join(ALL_KINDS))
    ap.add_argument("--no-ddl-in-tx", action="store_true",
                    help="TRUNCATE, REINDEX, CLUSTER, SET TABLESPACE... only outside transactions")
    ap.add_argument("--max-rows", type=int, default=3000, help="past this, deletes outweigh inserts")
    ap.add_argument("--check-every", type=int, default=25, help="steps between hamming_index_check runs")
    ap.add_argument("--verify-every", type=int, default=30, help="probe rounds between EXPLAIN checks")
    ap.add_argument("--solo-rate", type=float, default=0.03,
                    help="chance per step that one session starts acting alone for a while")
    ap.add_argument("--lock-timeout-ms", type=int, default=50)
    ap.add_argument("--history", type=int, default=30, help="steps shown on failure")
    ap.add_argument("--trace", action="store_true", help="print every statement as it runs")
    args = ap.parse_args()
    sys.exit(Model(args).main())


if __name__ == "__main__":
    main()
