"""FAISS IndexBinaryFlat beside bench/knn.sh: the exact k nearest 64-bit codes of each
query by a flat scan in FAISS's memory, one thread.

  python knn_faiss.py CODES QUERIES K
CODES: one signed 64-bit integer a line (the table's fingerprints); QUERIES: "qid kind code"
a line. Each query is searched alone (as one SQL statement is), the first of each kind once
untimed. Prints a line per kind: kind, median ms, 99th percentile ms, and the sum of the
distances found over that kind's queries (for the caller to compare with its own).
"""

import sys
import time

import numpy as np


def as_bytes(values):
    # The two's complement bits, little-endian: the same mapping for rows and queries keeps
    # every Hamming distance.
    return np.array(values, dtype=np.int64).view(np.uint8).reshape(-1, 8)


def main(codes_path, queries_path, k):
    import faiss

    faiss.omp_set_num_threads(1)
    with open(codes_path) as f:
        codes = as_bytes([int(line) for line in f])
    flat = faiss.IndexBinaryFlat(64)
    flat.add(codes)
    queries = {}
    with open(queries_path) as f:
        for line in f:
            _qid, kind, code = line.split()
            queries.setdefault(kind, []).append(int(code))
    for kind, values in sorted(queries.items()):
        q = as_bytes(values)
        flat.search(q[:1], k)
        times, total = [], 0
        for row in q:
            start = time.perf_counter()
            distances, _labels = flat.search(row[None, :], k)
            times.append(time.perf_counter() - start)
            total += int(distances.sum())
        ms = np.array(times) * 1000
        print(f"{kind} {np.median(ms):.3f} {np.percentile(ms, 99):.3f} {total}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
