#!/usr/bin/env python3
"""datasketch's MinHashLSH as the baseline of bench/lsh.sh (issue 12): quality against the
exact ground truth, beside neardup's minhash_pairs, and end-to-end dedup speed.

Usage:
  python3 bench/lsh_datasketch.py quality SHINGLES.bin TRUTH.tsv OURS_DIR [--num-perm 128]
      [--thresholds 0.5,0.7,0.8,0.9]
  python3 bench/lsh_datasketch.py speed CORPUS.tsv [--num-perm 128] [--threshold 0.8] [--passes 1]

quality: SHINGLES.bin and TRUTH.tsv come from `neardup-quality --lsh-truth` (the 64-bit
hashes of neardup's 8-word shingles per row, and every id pair with exact Jaccard >= the
lowest threshold). datasketch is fed those very shingles, each as its 8 little-endian bytes,
so both methods see identical sets. One MinHash(num_perm) per row (MinHash.bulk, which
runs update_batch), reused at every threshold; per threshold a MinHashLSH(threshold,
num_perm) (datasketch's default weights 0.5/0.5) gets every row inserted and queried, and
its pairs are what query() returns, unverified, as users use it. Also counted: the
candidates whose MinHash estimate reaches the threshold (what verification would keep).
neardup's pairs are read from OURS_DIR/ours_T.tsv (a, b, jaccard; minhash_pairs' output).
Precision and recall are against the exact Jaccard, over all id pairs and over the pairs
whose two shingle sets differ (J < 1: rows with identical sets are found by both methods
alike and are most of the pairs at high thresholds).

speed: the whole-table dedup from text in this one process, timed from the decoded texts:
tokenizing as bench/minhash_python.py does (lower-case, runs of Unicode alphanumerics),
8-word shingles (fewer words: one shingle of all of them), MinHash.bulk(num_perm) (one
update_batch per text), MinHashLSH(threshold, num_perm), inserting every row (insertion
session) and querying every row; the pair count is printed. With --passes, the median pass
counts.

Lines `figure NAME VALUE` are for bench/lsh.sh; the rest is for a reader.
"""

import argparse
import os
import struct
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from minhash_python import read_texts, shingles  # noqa: E402  (same tokenizer and shingles)


def figure(name, value):
    print(f"figure {name} {value}")


def read_shingles(path):
    """(ids, sets): per row its id and its shingles as 8-byte little-endian strings."""
    data = open(path, "rb").read()
    ids, sets, pos = [], [], 0
    while pos < len(data):
        row_id, n = struct.unpack_from("<QI", data, pos)
        pos += 12
        chunk = data[pos : pos + 8 * n]
        pos += 8 * n
        ids.append(row_id)
        sets.append([chunk[i : i + 8] for i in range(0, len(chunk), 8)])
    return ids, sets


def pair_keys(a, b):
    """One int64 per unordered pair (ids are below 2^31)."""
    a, b = np.minimum(a, b), np.maximum(a, b)
    return (a.astype(np.int64) << 32) | b.astype(np.int64)


def read_pairs(path):
    """(keys, jaccards) of a TSV `a <TAB> b <TAB> jaccard`."""
    if os.path.getsize(path) == 0:
        return np.zeros(0, np.int64), np.zeros(0)
    t = np.loadtxt(path, delimiter="\t", ndmin=2)
    return pair_keys(t[:, 0].astype(np.int64), t[:, 1].astype(np.int64)), t[:, 2]


def lsh_pairs(lsh, ids, minhashes):
    """Every pair one row's query() returns, once (a < b), as keys."""
    out = []
    for row_id, m in zip(ids, minhashes):
        found = [k for k in lsh.query(m) if k > row_id]
        if found:
            out.append(pair_keys(np.full(len(found), row_id), np.array(found)))
    return np.unique(np.concatenate(out)) if out else np.zeros(0, np.int64)


def estimates(keys, row_of, hashvalues):
    """The MinHash Jaccard estimate (fraction of equal hash values) of each pair."""
    a = np.array([row_of[k] for k in (keys >> 32).tolist()], dtype=np.int64)
    b = np.array([row_of[k] for k in (keys & 0xFFFFFFFF).tolist()], dtype=np.int64)
    out = np.empty(len(keys))
    for s in range(0, len(keys), 200_000):
        eq = hashvalues[a[s : s + 200_000]] == hashvalues[b[s : s + 200_000]]
        out[s : s + 200_000] = eq.mean(axis=1)
    return out


def quality(args):
    from datasketch import MinHash, MinHashLSH

    thresholds = [float(t) for t in args.thresholds.split(",")]
    start = time.perf_counter()
    ids, sets = read_shingles(args.shingles)
    keep = [i for i, s in enumerate(sets) if s]
    ids, sets = [ids[i] for i in keep], [sets[i] for i in keep]
    minhashes = MinHash.bulk(sets, num_perm=args.num_perm)
    hashvalues = np.stack([m.hashvalues for m in minhashes])
    row_of = {row_id: i for i, row_id in enumerate(ids)}
    print(f"datasketch: {len(ids)} rows with shingles, MinHash(num_perm={args.num_perm}) each "
          f"in {time.perf_counter() - start:.1f} s")
    truth_keys, truth_j = read_pairs(args.truth)

    for t in thresholds:
        lap = time.perf_counter()
        lsh = MinHashLSH(threshold=t, num_perm=args.num_perm)
        with lsh.insertion_session() as session:
            for row_id, m in zip(ids, minhashes):
                session.insert(row_id, m)
        ds = lsh_pairs(lsh, ids, minhashes)
        ds_verified = ds[estimates(ds, row_of, hashvalues) >= t]
        ds_seconds = time.perf_counter() - lap
        ours_raw, ours_j = read_pairs(os.path.join(args.ours, f"ours_{t}.tsv"))
        ours = np.unique(ours_raw)

        at_t = truth_j >= t - 1e-12
        true_all = truth_keys[at_t]
        true_diff = truth_keys[at_t & (truth_j < 1.0)]
        identical = truth_keys[truth_j == 1.0]
        print(f"t = {t}: {len(true_all)} true id pairs ({len(true_diff)} with J < 1); "
              f"datasketch bands x rows = {lsh.b} x {lsh.r} ({ds_seconds:.1f} s)")
        figure(f"truth_{t}", len(true_all))
        figure(f"truth_diff_{t}", len(true_diff))
        figure(f"ds_bands_{t}", f"{lsh.b}x{lsh.r}")
        figure(f"ours_duplicates_{t}", len(ours_raw) - len(ours))
        figure(f"ours_not_ordered_{t}", int(np.count_nonzero((ours_raw >> 32) >= (ours_raw & 0xFFFFFFFF))))
        figure(f"ours_below_t_{t}", int(np.count_nonzero(ours_j < t)))
        for name, found in [("ours", ours), ("ds", ds), ("dsv", ds_verified)]:
            correct = np.isin(found, true_all, assume_unique=True)
            diff = ~np.isin(found, identical, assume_unique=True)
            reported, hits = len(found), int(np.count_nonzero(correct))
            hits_diff = int(np.count_nonzero(correct & diff))
            reported_diff = int(np.count_nonzero(diff))
            figure(f"{name}_pairs_{t}", reported)
            figure(f"{name}_correct_{t}", hits)
            figure(f"{name}_precision_{t}", f"{hits / reported if reported else 0:.4f}")
            figure(f"{name}_recall_{t}", f"{hits / max(len(true_all), 1):.4f}")
            figure(f"{name}_precision_diff_{t}", f"{hits_diff / reported_diff if reported_diff else 0:.4f}")
            figure(f"{name}_recall_diff_{t}", f"{hits_diff / max(len(true_diff), 1):.4f}")
        missed = true_all[~np.isin(true_all, ours, assume_unique=True)]
        ds_only = np.count_nonzero(np.isin(missed, ds, assume_unique=True))
        figure(f"ours_missed_{t}", len(missed))
        figure(f"ours_missed_ds_found_{t}", int(ds_only))
    print(f"datasketch quality pass: {time.perf_counter() - start:.1f} s")


def speed(args):
    from datasketch import MinHash, MinHashLSH

    texts = read_texts(args.corpus, None)
    MinHash.bulk([[b"warm"]], num_perm=args.num_perm)  # imports and numpy warm-up off the clock
    runs = []
    for _ in range(args.passes):
        start = time.perf_counter()
        shingled = [[s.encode("utf-8") for s in shingles(text)] for text in texts]
        t_shingles = time.perf_counter()
        minhashes = MinHash.bulk(shingled, num_perm=args.num_perm)
        t_minhash = time.perf_counter()
        lsh = MinHashLSH(threshold=args.threshold, num_perm=args.num_perm)
        with lsh.insertion_session() as session:
            for key, m in enumerate(minhashes):
                session.insert(key, m)
        t_insert = time.perf_counter()
        pairs = sum(sum(1 for k in lsh.query(m) if k > key) for key, m in enumerate(minhashes))
        end = time.perf_counter()
        runs.append(end - start)
        print(f"datasketch dedup of {len(texts)} texts at {args.threshold}, num_perm {args.num_perm}, "
              f"bands x rows {lsh.b} x {lsh.r}: {end - start:.1f} s = tokenize+shingle "
              f"{t_shingles - start:.1f} s + MinHash.bulk {t_minhash - t_shingles:.1f} s + LSH params+insert "
              f"{t_insert - t_minhash:.1f} s + query {end - t_insert:.1f} s; {pairs} candidate pairs")
        del shingled, minhashes, lsh
    figure("ds_speed_ms", round(sorted(runs)[(len(runs) - 1) // 2] * 1000))
    figure("ds_speed_pairs", pairs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    q = sub.add_parser("quality")
    q.add_argument("shingles")
    q.add_argument("truth")
    q.add_argument("ours")
    q.add_argument("--num-perm", type=int, default=128)
    q.add_argument("--thresholds", default="0.5,0.7,0.8,0.9")
    s = sub.add_parser("speed")
    s.add_argument("corpus")
    s.add_argument("--num-perm", type=int, default=128)
    s.add_argument("--threshold", type=float, default=0.8)
    s.add_argument("--passes", type=int, default=1, help="the median pass counts")
    args = parser.parse_args()
    quality(args) if args.mode == "quality" else speed(args)


if __name__ == "__main__":
    main()
