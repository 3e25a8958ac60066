"""The baselines of bench/lookup_latency.sh: one lookup within R bits among 64-bit codes by a
BK-tree (pybktree, what image and text dedup scripts reach for) and by an HNSW graph (FAISS
IndexBinaryHNSW: the 10 nearest, kept if within R bits; approximate), over the codes the
bench wrote, one thread, each query timed alone.

  lookup_baselines.py CODES PROBES R
    CODES, PROBES: one signed 64-bit integer a line (PostgreSQL's fp::bigint)
Prints one line: `bktree_ms hnsw_ms hnsw_recall_percent matches bktree_build_s hnsw_build_s`
(ms: the median over the probes; recall: the share of the true matches HNSW returns; matches:
every (probe, code) pair within R, which the BK-tree must find exactly) and exits 1 if the
BK-tree's answers differ from brute force.
"""
import statistics
import sys
import time

import faiss
import numpy as np
import pybktree

# pgvector's HNSW defaults (m = 16, ef_construction = 64, ef_search = 40)
HNSW_M, EF_CONSTRUCTION, EF_SEARCH, NEAREST = 16, 64, 40, 10


def read_codes(path):
    signed = np.loadtxt(path, dtype=np.int64, ndmin=1)
    return signed.view(np.uint64)


def main():
    codes, probes, radius = read_codes(sys.argv[1]), read_codes(sys.argv[2]), int(sys.argv[3])
    faiss.omp_set_num_threads(1)

    # the truth, by brute force
    truth = [set(np.flatnonzero(np.bitwise_count(codes ^ p) <= radius).tolist()) for p in probes]
    matches = sum(len(t) for t in truth)

    # BK-tree over (code, row) pairs, so that duplicate codes stay distinct rows
    start = time.perf_counter()
    tree = pybktree.BKTree(lambda a, b: (a[0] ^ b[0]).bit_count(),
                           [(int(c), i) for i, c in enumerate(codes)])
    bktree_build = time.perf_counter() - start
    bktree_ms = []
    for p, expected in zip(probes, truth):
        start = time.perf_counter()
        found = tree.find((int(p), -1), radius)
        bktree_ms.append((time.perf_counter() - start) * 1000)
        if {row for _, (_, row) in found} != expected:
            print(f"the BK-tree's answer differs from brute force for probe {int(p)}", file=sys.stderr)
            sys.exit(1)

    # HNSW on the codes' 8 bytes (Hamming distance does not depend on the byte order)
    as_bytes = codes.view(np.uint8).reshape(-1, 8)
    start = time.perf_counter()
    index = faiss.IndexBinaryHNSW(64, HNSW_M)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    index.add(as_bytes)
    hnsw_build = time.perf_counter() - start
    index.hnsw.efSearch = EF_SEARCH
    hnsw_ms, returned = [], 0
    for p, expected in zip(probes, truth):
        query = np.array([p], dtype=np.uint64).view(np.uint8).reshape(1, 8)
        start = time.perf_counter()
        distances, rows = index.search(query, NEAREST)
        hnsw_ms.append((time.perf_counter() - start) * 1000)
        returned += len({int(r) for d, r in zip(distances[0], rows[0]) if d <= radius and r >= 0} & expected)

    recall = 100.0 * returned / matches if matches else 100.0
    print(f"{statistics.median(bktree_ms):.4f} {statistics.median(hnsw_ms):.4f} {recall:.1f} {matches} "
          f"{bktree_build:.1f} {hnsw_build:.1f}")


if __name__ == "__main__":
    main()
