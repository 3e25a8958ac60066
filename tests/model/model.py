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

Each run drives one width of codes (--width): simhash64, hash128 or hash256, in a database
of its own. Wide codes come as random ones, near copies of a few centres and of recent codes
(bits flipped anywhere, or within one window, so that the first agreeing substring is not
always the first), exact duplicates and shared prefixes; they are probed at radii up to and
past any max_distance the index is built with. ALTER INDEX SET changes max_distance and
blocks too (frozen at build: inert until a REINDEX, with a NOTICE), in valid combinations.
Merges are stopped at every pause point (src/am/pause.rs: after_seal, before_publish,
before_recycle, merge_table, vacuum_pass) of a VACUUM in the acting session, by the ERROR of
neardup.error_at, or paused there (neardup.pause_at, advisory lock 4711 held by a control
connection) and then cancelled by pg_cancel_backend, stopped by statement_timeout, or let go
on while the other sessions insert and compare answers; a merge table by table is brought
about by a REINDEX, a second run and most of the first run's rows deleted (step_interrupt).
The run fails unless each point's ERROR, a cancel, a timeout and a paused merge let go on
occurred.

The model is only what each query must return, taken from a forced sequential scan in the
same session right then: after every step, in the acting session and in one other, each
probe fingerprint's `fp <@ hamming_ball(q, r)` (r in 0, 1, 3, 5, 10; on wide codes WIDTHS lists them) through a forced index
scan, a forced bitmap scan and, with parallel on, both under Gather with workers really
launched, and `ORDER BY fp <~> q LIMIT k` through the index under a random
neardup.ring_budget (same distances; the same ids at
every distance but the last, where the index may break ties otherwise), are compared with
the sequential scan. Every so often, with no transaction open, hamming_index_check must
pass and count every row. The first difference prints the seed, the step, the last steps
and both answers, and exits 1. Plans are checked with EXPLAIN; the run fails if a kind of
plan (or a parallel plan with launched workers) was never seen.

Needs a cluster with neardup preloaded, max_prepared_transactions >= 4 and room for
parallel workers (tests/integration/check_model.sh starts one), psycopg 3, and PGHOST /
PGPORT / PGUSER (a superuser) in the environment. Usage:
    python3 tests/model/model.py --seed 1 --steps 2000 [--sessions 3] [--width 64|128|256]
        [--tablespace-dir DIR (empty, owned by postgres)] [--disable parallel,prepare,...]
Exit status: 0 ok, 1 a wrong answer or an unexpected error, 2 a harness problem.
"""

import argparse
import collections
import math
import threading
import os
import random
import re
import sys
import time

import psycopg

# Per width: the column's type, the radii every probe asks (for wide codes some past any
# max_distance the model builds with, where a lookup reads more than its tables are cut for),
# and how the steps choose max_distance and blocks (valid combinations only: a build refuses
# others with ERROR 22023).
WIDTHS = {
    64: dict(type="simhash64", radii=(0, 1, 3, 5, 10), distances=(3, 3, 1, 5), blocks=(0, 0, 4, 5, 6, 8),
             default_distance=3),
    128: dict(type="hash128", radii=(0, 2, 7, 15, 16, 24, 40), distances=(15, 15, 7, 10, 20),
              blocks=(0, 0, 4, 6, 8, 12), default_distance=15),
    256: dict(type="hash256", radii=(0, 3, 15, 31, 32, 48, 80), distances=(31, 31, 15, 20, 40),
              blocks=(0, 0, 8, 12, 16, 20), default_distance=31),
}
# The named points of a merge (and VACUUM's pass) where neardup.error_at raises a cancel's
# ERROR and neardup.pause_at waits for advisory lock 4711 (src/am/pause.rs).
POINTS = ("after_seal", "before_publish", "before_recycle", "merge_table", "vacuum_pass")
PAUSE_KEY = 4711
KNN_LIMITS = (1, 3, 10, 50, 300, 100000)
# neardup.ring_budget for an ORDER BY's index scan: the default; never by rings; rings where a
# uniform table of these sizes would need rings 5 (1,500) or up to 8 (20,000) of 4 tables'
# 16-bit prefixes, a run read whole once they cost more. (At any cost, a layout of 5 blocks,
# whose 10 tables lead with 26 bits, would take minutes for one query.)
RING_BUDGETS = ("0.5", "0", "1500", "20000")
# Errors a step may meet by design; anything else is a failure.
EXPECTED = {
    "55P03": "lock_not_available",
    "40001": "serialization_failure",
    "40P01": "deadlock_detected",
}
STRONG_KINDS = {"ddl_in_savepoint", "truncate", "reindex", "reindex_conc", "alter_ts", "cluster", "vacuum_full",
                "recreate_index", "recreate_table", "heap_ts", "alter_option"}
ALL_KINDS = sorted(STRONG_KINDS | {
    "begin", "insert", "update", "delete", "savepoint", "rollback_to", "release", "commit",
    "rollback", "prepare", "resolve_prepared", "vacuum", "alter_limit", "parallel", "cursor",
    "check", "analyze", "ddl_in_savepoint", "interrupt"})

PLAN_FORCE = {
    "seq": dict(enable_seqscan="on", enable_indexscan="off", enable_bitmapscan="off",
                enable_indexonlyscan="off"),
    "index": {"enable_seqscan": "off", "enable_indexscan": "on", "enable_bitmapscan": "off",
              "enable_indexonlyscan": "off", "neardup.ring_budget": "0.5"},
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


class Unusable(Exception):
    """The index cannot be used in this transaction (indcheckxmin: it was rebuilt in this
    transaction over broken HOT chains, and PostgreSQL plans without it until then)."""


class Expected(Exception):
    """A statement failed with one of the EXPECTED errors (the step is a no-op)."""

    def __init__(self, sqlstate, message):
        super().__init__(message)
        self.sqlstate = sqlstate


# The width of the codes this run drives (--width): set once in main.
BITS = 64
TYPE = "simhash64"


def fp_hex(v):
    return None if v is None else "%0*x" % (BITS // 4, v)


def lit(v):
    # wide literals carry their type: hamming_ball and the batch functions exist for each width
    if v is None:
        return "NULL"
    return "'%s'" % fp_hex(v) if BITS == 64 else "'%s'::%s" % (fp_hex(v), TYPE)


def flip(rng, v, n):
    for b in rng.sample(range(BITS), n):
        v ^= 1 << b
    return v


def flip_within(rng, v, n):
    """v with n bits flipped inside one window of the code (a near copy whose first
    substrings differ while later ones agree, or the reverse)."""
    width = min(BITS, max(n, rng.choice((16, 32, 48))))
    start = rng.randrange(BITS - width + 1)
    for b in rng.sample(range(start, start + width), n):
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
        self.w = WIDTHS[BITS]
        self.radii = self.w["radii"]
        self.centres = [self.rng.getrandbits(BITS) for _ in range(12)]
        prefix_bits = (16, 24, 32) if BITS == 64 else (16, 32, BITS // 4, BITS // 2, BITS * 3 // 4)
        self.prefixes = [(self.rng.getrandbits(BITS), self.rng.choice(prefix_bits)) for _ in range(4)]
        self.stats = collections.Counter()
        self.plans_seen = collections.Counter()
        self.plan_checks = collections.Counter()
        self.workers_launched = collections.Counter()
        self.index_opts = "pending_limit = 50, max_distance = %d" % self.w["default_distance"]
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
            print("%.3f %s" % (time.time(), line[:400]), flush=True)

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
        conn.execute("SET client_min_messages = notice")
        conn.add_notice_handler(self.notice)
        return conn

    def notice(self, diag):
        """Counts what the index says of frozen options (options::report_frozen)."""
        text = diag.message_primary or ""
        if "keeps max_distance" in text:
            self.stats["shape: NOTICE max_distance waits for a REINDEX"] += 1
        elif "does not fit max_distance" in text:
            self.stats["shape: WARNING blocks set aside"] += 1

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
        c.execute("CREATE TABLE t (id int, fp %s, note int)" % TYPE)
        c.execute("CREATE INDEX t_id ON t (id)")
        c.execute("CREATE INDEX t_fp ON t USING hamming (fp) WITH (%s)" % self.index_opts)
        c.close()
        self.sessions = [Session(i, self.connect(db)) for i in range(self.args.sessions)]
        self.ctl = self.connect(db)  # holds advisory lock 4711 while a merge is paused
        for s in self.sessions:
            s.parallel = self.rng.random() < 0.5 and "parallel" not in self.disabled

    # ---------------------------------------------------------------- fingerprints
    def near_flips(self):
        """Bits a near copy differs by: 1 to 4 on 64 bits; on wide codes as often within a
        small radius as around and past max_distance."""
        if BITS == 64:
            return self.rng.randint(1, 4)
        md = self.w["default_distance"]
        return self.rng.choice((1, 2, 3, self.rng.randint(4, md // 2), self.rng.randint(md // 2, md + 8),
                                self.rng.randint(md, 2 * md + 4)))

    def new_fp(self):
        if BITS != 64:
            return self.new_wide()
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

    def new_wide(self):
        """A wide code: random ones, near copies of a few centres and of recent codes (bits
        flipped anywhere, or within one window), exact duplicates, shared prefixes."""
        r = self.rng.random()
        if r < 0.04:
            v = None
        elif r < 0.20 or not self.recent:
            v = self.rng.getrandbits(BITS)
        elif r < 0.40:
            v = flip(self.rng, self.rng.choice(self.centres), self.near_flips())
        elif r < 0.50:
            v = flip_within(self.rng, self.rng.choice(self.centres), self.near_flips())
        elif r < 0.62:
            v = self.rng.choice(self.recent)  # an exact duplicate
        elif r < 0.77:
            p, bits = self.rng.choice(self.prefixes)
            low = (1 << (BITS - bits)) - 1
            v = (p & ~low & ((1 << BITS) - 1)) | (self.rng.getrandbits(BITS) & low)
        elif r < 0.90:
            v = flip(self.rng, self.rng.choice(self.recent), self.near_flips())
        else:
            v = flip_within(self.rng, self.rng.choice(self.recent), self.near_flips())
        if v is not None:
            self.recent.append(v)
        return v

    def probe_fps(self):
        out = []
        small = (lambda: self.rng.randint(0, 4)) if BITS == 64 else \
            (lambda: self.rng.choice((0, self.rng.randint(0, 4), self.near_flips())))
        for _ in range(self.args.probes - 1):
            base = self.rng.choice(self.recent) if self.recent else self.rng.getrandbits(BITS)
            out.append(flip(self.rng, base, small()))
        out.append(self.rng.getrandbits(BITS) if self.rng.random() < 0.5
                   else flip(self.rng, self.rng.choice(self.centres), self.rng.randint(0, 2)))
        return out

    def some_ids(self, n):
        lo = max(1, self.next_id - 3000)
        return sorted({self.rng.randrange(lo, self.next_id + 1) for _ in range(n)})

    # ---------------------------------------------------------------- comparing answers
    def ball_sql(self, probes):
        parts = []
        for i, q in enumerate(probes):
            for j, r in enumerate(self.radii):
                # both spellings of the ball: the function and the untyped literal
                ball = ("'(%s,%d)'" % (fp_hex(q), r)) if j == 3 else "hamming_ball(%s, %d)" % (lit(q), r)
                parts.append("SELECT %d AS k, id FROM t WHERE fp <@ %s" % (i * 1000 + r, ball))
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
        if not ok and kind != "seq" and s.in_tx and s.conn.execute(
                "SELECT indcheckxmin FROM pg_index WHERE indexrelid = 't_fp'::regclass").fetchone()[0]:
            raise Unusable()
        if not ok:
            raise Failure("the plan forced as %s in session %d is not one:\n%s\nfor: %s" % (label, s.n, plan, sql[:500]))
        self.plans_seen[label] += 1
        if parallel:
            launched = sum(int(n) for n in re.findall(r"Workers Launched: (\d+)", plan))
            if launched:
                self.workers_launched[label] += 1
                self.workers_launched["%s in %s" % (label, "tx" if s.in_tx else "autocommit")] += 1

    def query(self, s, kind, parallel, sql, verify, extra=None):
        gucs = dict(PLAN_FORCE[kind])
        gucs.update(PARALLEL if parallel else SERIAL)
        gucs.update(extra or {})
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
                    q, r = probes[k // 1000], k % 1000
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
            budget = self.rng.choice(RING_BUDGETS)
            self.stats["knn ring budget " + budget] += 1
            for kind, par in kinds:
                got = self.query(s, kind, par, idx_sql, verify_par if par else verify,
                                 {"neardup.ring_budget": budget})
                self.compare_knn(s, q, k, idx_sql, got, ref, par)
                self.stats["compared knn%s" % ("/parallel" if par else "")] += 1

    def compare_knn(self, s, q, k, sql, got, ref, par):
        what = "ORDER BY fp <~> '%s' LIMIT %d through a%s index scan" % (fp_hex(q), k, " parallel" if par else "")
        gd, ed = [d for _, d in got], [d for _, d in ref]
        if gd != ed:
            self.mismatch(s, what + " (distances)", sql, got[:60], ref[:60])
        # a row twice is an id more often than the seq scan has it (ids are unique but for a
        # heap that holds a row twice: see step_check)
        ids = collections.Counter(i for i, _ in got)
        ref_ids = collections.Counter(i for i, _ in ref)
        if any(n > max(1, ref_ids[i]) for i, n in ids.items()):
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
            try:
                self.probe(s, why)
            except Unusable:
                self.log(s, "  -> the index is not usable in this transaction (indcheckxmin): no probe")
                self.stats["probes skipped: index unusable in its transaction (indcheckxmin)"] += 1
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
            self.run(s, "UPDATE t SET fp = v.fp::%s FROM (VALUES %s) v(id, fp) WHERE t.id = v.id" % (TYPE, vals))
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
            self.run(s, "DELETE FROM t WHERE fp <@ hamming_ball(%s, %d)" % (
                lit(q), self.rng.randint(0, 4) if BITS == 64 else self.rng.randint(0, self.w["default_distance"] // 2)))

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
        dist = self.rng.choice(self.w["distances"])
        blocks = self.rng.choice([b for b in self.w["blocks"] if self.fits(dist, b)])
        return "CREATE INDEX t_fp ON t USING hamming (fp) WITH (pending_limit = %d, max_distance = %d%s)" % (
            limit, dist, ", blocks = %d" % blocks if blocks else "")

    def fits(self, dist, blocks):
        """Whether a build takes max_distance dist with blocks (build::choose_layout)."""
        if blocks == 0:
            return BITS > 64 or dist <= 8
        if BITS == 64:
            return dist < blocks <= 16 and math.comb(blocks, dist) <= 64
        return dist < BITS and -(-BITS // blocks) <= 32 and blocks <= BITS

    def options(self, s):
        """The index's max_distance and blocks options as session s sees them (defaults filled in)."""
        rows = self.run(s, "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 't_fp'::regclass",
                        log=False, fetch=True)
        opts = dict(o.split("=", 1) for o in rows[0][0])
        return int(opts.get("max_distance", self.w["default_distance"])), int(opts.get("blocks", 0))

    def step_alter_option(self, s):
        """ALTER INDEX ... SET or RESET of max_distance or blocks (AccessExclusiveLock): a
        max_distance frozen at build waits for a REINDEX (a NOTICE when a run is written), a
        blocks option applies to the runs written from then on if it fits the frozen
        distance (else a WARNING). Only combinations a build takes, so that TRUNCATE, REINDEX
        and the rest still work."""
        dist, blocks = self.options(s)
        if self.rng.random() < 0.5:
            new = self.rng.choice(self.w["distances"] + (None,))
            d = self.w["default_distance"] if new is None else new
            if not self.fits(d, blocks):
                return self.step_alter_limit(s)
            self.run(s, "ALTER INDEX t_fp RESET (max_distance)" if new is None
                     else "ALTER INDEX t_fp SET (max_distance = %d)" % new)
            self.stats["alter max_distance"] += 1
        else:
            new = self.rng.choice(self.w["blocks"])
            if not self.fits(dist, new):
                return self.step_alter_limit(s)
            self.run(s, "ALTER INDEX t_fp RESET (blocks)" if new == 0 and self.rng.random() < 0.5
                     else "ALTER INDEX t_fp SET (blocks = %d)" % new)
            self.stats["alter blocks"] += 1
        self.take_strong(s)

    def step_recreate_index(self, s):
        self.run(s, "DROP INDEX t_fp")
        self.take_strong(s)
        self.run(s, self.index_ddl())

    def step_recreate_table(self, s):
        self.run(s, "DROP TABLE t")
        self.take_strong(s)
        self.rows_estimate = 0
        self.run(s, "CREATE TABLE t (id int, fp %s, note int)" % TYPE)
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

    # ---------------------------------------------------------------- interrupted merges
    def interrupt_target(self):
        """What to interrupt next: the ERROR of neardup.error_at at each point, and a merge
        paused at a point (neardup.pause_at) then cancelled by pg_cancel_backend, stopped by
        statement_timeout, or let go on while the other sessions probe. The least-met first."""
        targets = [("error", p) for p in POINTS] + [("cancel", None), ("timeout", None), ("continue", None)]
        met = [self.stats[self.target_name(t)] for t in targets]
        weights = [1.0 / (1 + m) ** 3 for m in met]
        mode, point = self.rng.choices(targets, weights)[0]
        if point is None:
            point = self.rng.choice(POINTS + ("merge_table", "merge_table"))
        return mode, point

    @staticmethod
    def target_name(t):
        mode, point = t
        return {"error": "shape: ERROR at %s" % point, "cancel": "shape: paused merge cancelled",
                "timeout": "shape: paused merge hit statement_timeout",
                "continue": "shape: paused merge went on"}[mode]

    def prepare_interrupt(self, s, point):
        """Brings the index to a state in which a VACUUM reaches `point`: pending rows (a seal
        and a merge that writes them), dead rows (VACUUM's pass), or, for a merge table by
        table, two runs of one layout, the larger mostly deleted, and no pending rows: VACUUM
        then shrinks the larger run, and the policy merges the runs without a pending list."""
        if point == "merge_table":
            dist, blocks = self.options(s)
            if BITS > 64 and blocks == 0:
                # wide runs are cut for the index's rows unless blocks fixes the cut
                blocks = self.rng.choice([b for b in self.w["blocks"] if b and self.fits(dist, b)])
                self.run(s, "ALTER INDEX t_fp SET (blocks = %d)" % blocks)
            # Enough rows that the new run's table 0 spans more leaves than a lookup at a
            # small radius probes: it is then probed, not read whole, and the rows whose first
            # agreeing substring is in a later table are found only in the inputs' tables.
            total = self.run(s, "SELECT count(*) FROM t", fetch=True)[0][0]
            if total < 2000:
                self.insert_rows(s, 2000 - total + self.rng.randint(0, 500))
            self.run(s, "REINDEX INDEX t_fp")
            total = self.run(s, "SELECT count(*) FROM t", fetch=True)[0][0]
            first_new = self.next_id
            self.insert_rows(s, max(10, total // 8))
            self.run(s, "VACUUM t")
            # 55 % of the first run's rows: it shrinks to less than 4 times the others
            self.run(s, "DELETE FROM t WHERE id < %d AND id %% 20 >= 9" % first_new)
        elif point == "vacuum_pass":
            self.insert_rows(s, self.rng.randint(1, 30))
            ids = self.some_ids(self.rng.randint(5, 40))
            self.run(s, "DELETE FROM t WHERE id IN (%s)" % ",".join(map(str, ids)))
        else:
            self.insert_rows(s, self.rng.randint(1, 30))

    def insert_rows(self, s, n):
        for i in range(0, n, 500):
            rows = []
            for _ in range(min(500, n - i)):
                rows.append("(%d, %s)" % (self.next_id, lit(self.new_fp())))
                self.next_id += 1
            self.run(s, "INSERT INTO t (id, fp) VALUES " + ", ".join(rows))
        self.rows_estimate += n

    def step_interrupt(self, s):
        """A merge (a VACUUM's, in this session) stopped at a named point: by the ERROR of
        neardup.error_at, or paused there (neardup.pause_at, while a control session holds
        advisory lock 4711) and then cancelled (pg_cancel_backend), timed out
        (statement_timeout) or let go on, the other sessions comparing answers while it waits.
        The index must answer exactly in every state this leaves (the probes after each step
        and hamming_index_check)."""
        mode, point = self.interrupt_target()
        self.log(s, "-- interrupt: %s at %s" % (mode, point))
        self.prepare_interrupt(s, point)
        pid = s.conn.info.backend_pid
        if mode == "error":
            self.run(s, "SET neardup.error_at = '%s'" % point)
            self.log(s, "VACUUM t")
            try:
                s.conn.execute("VACUUM t")
                self.stats["interrupt: %s not reached" % point] += 1
            except psycopg.Error as e:
                if e.sqlstate == "55P03":  # the merge lock, held by a merge worker
                    self.log(s, "  -> expected error 55P03")
                    self.stats["interrupt: merge lock busy"] += 1
                elif e.sqlstate != "57014" or point not in str(e):
                    raise Failure("VACUUM with neardup.error_at = '%s' failed otherwise: %s %s"
                                  % (point, e.sqlstate, e)) from None
                else:
                    self.log(s, "  -> %s" % str(e).strip().splitlines()[0])
                    self.stats[self.target_name((mode, point))] += 1
            self.run(s, "RESET neardup.error_at")
            self.step_check(s)
            return
        ctl = self.ctl
        ctl.execute("SELECT pg_advisory_lock(%d)" % PAUSE_KEY)
        self.run(s, "SET neardup.pause_at = '%s'" % point)
        self.run(s, "SET lock_timeout = 0")
        if mode == "timeout":
            self.run(s, "SET statement_timeout = '%dms'" % self.rng.choice((100, 300)))
        outcome = {}

        def vacuum():
            try:
                s.conn.execute("VACUUM t")
                outcome["ok"] = True
            except psycopg.Error as e:
                outcome["error"] = e

        self.log(s, "VACUUM t   (in a thread)")
        thread = threading.Thread(target=vacuum)
        thread.start()
        paused = False
        deadline = time.time() + 30
        while thread.is_alive() and time.time() < deadline:
            if ctl.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype = 'advisory' AND NOT granted"
                           " AND objid = %s", (pid, PAUSE_KEY)).fetchone()[0]:
                paused = True
                break
            time.sleep(0.003)
        if paused:
            self.log(s, "  -> paused at %s" % point)
            self.stats["paused at %s" % point] += 1
            if mode != "timeout":
                # the others look rows up (and insert) while the merge waits at the point
                for o in self.sessions:
                    if o is not s:
                        if self.rng.random() < 0.4:
                            try:
                                self.step_insert(o)
                            except Expected:
                                self.recover(o)
                        self.safe_probe(o, "while paused at %s" % point)
                        self.stats["probes while a merge is paused"] += 1
            if mode == "cancel":
                self.log(None, "SELECT pg_cancel_backend(%d)" % pid)
                ctl.execute("SELECT pg_cancel_backend(%s)", (pid,))
            elif mode == "timeout":
                thread.join(30)
        ctl.execute("SELECT pg_advisory_unlock(%d)" % PAUSE_KEY)
        thread.join(60)
        if thread.is_alive():
            raise Failure("a VACUUM paused at %s did not end within 60 s once let go" % point)
        self.run(s, "RESET neardup.pause_at")
        self.run(s, "SET lock_timeout = '%dms'" % self.args.lock_timeout_ms)
        self.run(s, "SET statement_timeout = '120s'")
        err = outcome.get("error")
        if err is not None and mode == "timeout" and not paused and err.sqlstate == "57014":
            self.stats["interrupt: statement_timeout before %s" % point] += 1
        elif err is not None:
            if err.sqlstate != "57014" or mode == "continue" or not paused:
                raise Failure("VACUUM paused at %s (%s) failed with %s: %s" % (point, mode, err.sqlstate, err))
            self.log(s, "  -> %s" % str(err).strip().splitlines()[0])
            self.stats[self.target_name((mode, point))] += 1
        elif paused:
            if mode != "continue":
                raise Failure("VACUUM paused at %s was not stopped by %s" % (point, mode))
            self.stats[self.target_name((mode, point))] += 1
        else:
            self.stats["interrupt: %s not reached" % point] += 1
        self.step_check(s)

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
        total, distinct = self.run(s, "SELECT count(*), count(DISTINCT id) FROM t", fetch=True)[0]
        if distinct != total and not self.stats["shape: an id twice in the table"]:
            # Not the index's doing, nor the model's (each id is inserted once): CLUSTER t USING
            # t_id copied a row twice through a btree entry left by the PostgreSQL bug that
            # choices() steers clear of (heap_ts in a transaction). Reported, not failed.
            self.log(s, "  -> the table holds %d rows and %d ids" % (total, distinct))
        if distinct != total:
            self.stats["shape: an id twice in the table"] += 1
        self.rows_estimate = total
        self.stats["index checks"] += 1
        self.since_check = 0
        # The check counts the rows the table would index, the recently dead ones too: rows
        # deleted just before still count while a snapshot taken before holds the horizon (a
        # merge worker's: 3 rows over count(*) after a DELETE and VACUUM, seed 1 of hash256).
        # Checked again for a while; a count that stays off fails.
        for _ in range(25):
            if n == total:
                break
            self.stats["shape: check count off count(*), checked again"] += 1
            self.log(s, "  -> hamming_index_check counts %d rows, count(*) %d: again in 0.2 s" % (n, total))
            time.sleep(0.2)
            n = self.run(s, "SELECT hamming_index_check('t_fp')", fetch=True)[0][0]
            total = self.run(s, "SELECT count(*) FROM t", fetch=True)[0][0]
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
                sql = ref_sql = "SELECT id, NULL::int FROM t WHERE fp <@ hamming_ball(%s, %d)" % (lit(q), self.rng.choice(self.radii))
                kind = self.rng.choice(("index", "bitmap"))
            self.set_gucs(s, dict(PLAN_FORCE[kind], **SERIAL))
            self.run(s, "DECLARE ci NO SCROLL CURSOR FOR " + sql)
            self.set_gucs(s, dict(PLAN_FORCE["seq"], **SERIAL))
            self.run(s, "DECLARE cs NO SCROLL CURSOR FOR " + ref_sql)
            s.cursor = dict(sql=sql, knn=knn, kind=kind, got=[], fetches=0)
            return
        done = c["fetches"] >= 3 or self.rng.random() < 0.3
        self.default_ring_budget(s)
        rows = self.run(s, "FETCH %s FROM ci" % ("ALL" if done else self.rng.randint(1, 40)), fetch=True)
        c["got"] += rows
        c["fetches"] += 1
        if done:
            self.finish_cursor(s)

    def default_ring_budget(self, s):
        """A cursor's scan reads on at the setting of each FETCH: the default, not the last
        nearest-neighbour probe's budget (at any cost, a full order takes minutes)."""
        self.run(s, "SELECT set_config('neardup.ring_budget', '%s', false)" % PLAN_FORCE["index"]["neardup.ring_budget"])

    def finish_cursor(self, s):
        c = s.cursor
        if c is None:
            return
        self.default_ring_budget(s)
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
                  ("truncate", strong_w(3 if big else 0.7)), ("vacuum_full", strong_w(1.0)),
                  ("alter_option", strong_w(0.7)), ("interrupt", self.args.interrupt_weight if quiet else 0),
                  ("reindex", strong_w(1)), ("reindex_conc", 1.2 if quiet else 0),
                  ("alter_ts", strong_w(1)), ("heap_ts", strong_w(1.2)), ("cluster", strong_w(0.7)),
                  ("recreate_index", strong_w(0.4)), ("recreate_table", strong_w(0.25))]
            if self.prepared:
                c.append(("resolve_prepared", 6))
            if self.all_idle():
                c.append(("check", 0.5 + (3 if self.since_check > self.args.check_every else 0)))
        else:
            c += [("insert", 6 if big else 12), ("update", 5), ("delete", 8 if big else 4),
                  ("savepoint", 6), ("commit", 4.5), ("rollback", 1.5), ("parallel", 1.5),
                  ("alter_limit", 1), ("cursor", 3 if s.cursor is None else 8), ("alter_option", strong_w(0.5)),
                  ("truncate", strong_w(2.5 if big else 1.5)), ("reindex", strong_w(1.2)),
                  # not heap_ts: a PostgreSQL bug (15.20) leaves the rows inserted after ALTER
                  # TABLE SET TABLESPACE in a transaction rolled back in its indexes, pointing at
                  # TIDs the old heap gives the next rows (a btree's `id = 1000` returned the row
                  # of id 2000; CLUSTER USING it copied that row twice)
                  ("alter_ts", strong_w(1)), ("cluster", strong_w(0.5)),
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
        c = [(k, w) for k, w in c if w > 0 and k.removesuffix("_in_tx") not in self.disabled]
        # In the last quarter of the run, a kind never taken yet is made likely, so that a rare
        # kind (analyze: 0.3) is met whatever the draws before (seed 23's 256-bit run once
        # took no ANALYZE in 2,000 steps)
        if self.step_no > self.args.steps * 3 // 4:
            c = [(k, w if self.stats["step " + k] else max(w, 10)) for k, w in c]
        return c

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
            print("model: FAILED at step %d of seed %d (%s, %d sessions)" % (self.step_no, self.args.seed, TYPE, self.args.sessions))
            print("model: reproduce with: python3 tests/model/model.py --width %d --seed %d --steps %d --sessions %d%s"
                  % (BITS, self.args.seed, self.step_no, self.args.sessions,
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
        if "interrupt" not in self.disabled:
            for point in POINTS:
                if not self.stats[self.target_name(("error", point))]:
                    problems.append("no merge was stopped by an ERROR at %s" % point)
            for mode in ("cancel", "timeout", "continue"):
                if not self.stats[self.target_name((mode, None))]:
                    problems.append("no %s" % self.target_name((mode, None))[len("shape: "):])
            if not self.stats["probes while a merge is paused"]:
                problems.append("no probe while a merge was paused")
        for label in ("seq", "index", "bitmap"):
            if not self.plans_seen[label]:
                problems.append("no %s plan was ever checked" % label)
        if "parallel" not in self.disabled:
            for label in ("index/parallel", "bitmap/parallel"):
                if not self.workers_launched[label]:
                    problems.append("no parallel %s scan ever launched a worker (%d checked)"
                                    % (label.split("/")[0], self.plan_checks[label]))
        dt = time.time() - t0
        print("model: %s, seed %d, %d steps, %d sessions, %.0f s" % (TYPE, self.args.seed, self.args.steps, self.args.sessions, dt))
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
    ap.add_argument("--width", type=int, default=64, choices=sorted(WIDTHS),
                    help="the codes' width: simhash64, hash128 or hash256 (database neardup_model[_WIDTH])")
    ap.add_argument("--interrupt-weight", type=float, default=6.0,
                    help="weight of a merge interrupted at a pause point among the steps of a quiet session")
    ap.add_argument("--probes", type=int, default=3, help="probe fingerprints per comparison")
    ap.add_argument("--db", default=None)
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
    global BITS, TYPE
    BITS, TYPE = args.width, WIDTHS[args.width]["type"]
    if args.db is None:
        args.db = "neardup_model" + ("" if BITS == 64 else "_%d" % BITS)
    sys.exit(Model(args).main())


if __name__ == "__main__":
    main()
