#!/usr/bin/env python3
"""Single-thread throughput of the neardup Python module against the libraries Python users
compute the same signatures with, on the same texts, and its memory on a 100 MB text.

Usage: python3 bench/python_speed.py FILE [--limit N]

FILE is a COPY-text TSV whose third column is the text (pg_test_data/*.tsv). Texts are
decoded before the clock starts; each figure is MB of text per second, best of three
passes, one thread. neardup runs over every text; the pure-Python libraries, which are
much slower, over the first N (MB/s is comparable across the two counts):
- neardup.simhash(text) against simhash's Simhash(text) (its own default features);
- neardup.minhash(text) (84 minvalues of 8-word shingles) against datasketch's
  MinHash(num_perm=84) with one update() per 8-word shingle (bench/minhash_python.py's
  tokenizing and shingling, timed with it).
"""

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from minhash_python import PASSES, megabytes_per_second, read_texts, sketch_datasketch  # noqa: E402

import neardup  # noqa: E402


def each(f):
    def run(texts):
        for text in texts:
            f(text)

    return run


def simhash_py(texts):
    from simhash import Simhash

    for text in texts:
        Simhash(text).value


def rss_growth_mb(f, text):
    """How much the process's peak resident set grew while `f` ran over `text`."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    f(text)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--limit", type=int, default=3000, help="texts for the pure-Python libraries")
    args = parser.parse_args()
    texts = read_texts(args.file, None)
    some = texts[: args.limit]
    size = sum(len(t.encode()) for t in texts)
    some_size = sum(len(t.encode()) for t in some)
    print(f"{len(texts)} texts, {size / 1e6:.1f} MB; the pure-Python libraries on the first "
          f"{len(some)} ({some_size / 1e6:.1f} MB); one thread, best of {PASSES}")
    for name, f, on, n in [
        ("neardup.simhash", each(neardup.simhash), texts, size),
        ("simhash.Simhash", simhash_py, some, some_size),
        ("neardup.minhash", each(neardup.minhash), texts, size),
        ("datasketch", sketch_datasketch, some, some_size),
        ("neardup.bloomsig", each(neardup.bloomsig), texts, size),
    ]:
        print(f"{name} {megabytes_per_second(f, on, n):.2f}")
    big = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 1_800_000  # 102 MB
    for name, f in [("simhash", neardup.simhash), ("minhash", neardup.minhash), ("bloomsig", neardup.bloomsig)]:
        print(f"rss_growth_100MB_{name} {rss_growth_mb(f, big):.1f}")


if __name__ == "__main__":
    main()
