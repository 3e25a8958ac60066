#!/usr/bin/env python3
"""Single-process throughput of Python minhash libraries, for comparison with neardup's
minhash (core/tests/minhash_throughput.rs): num_perm = 84 over 8-word shingles.

Usage: python3 bench/minhash_python.py FILE [--limit N]

FILE is a COPY-text TSV whose third column is the text (pg_test_data/*.tsv). Texts are
decoded before the clock starts; what is timed, per library, is the whole per-text work
that neardup's SQL function also does: tokenizing (lower-case, runs of Unicode
alphanumerics), building the 8-word shingles (a text with fewer words is one shingle of
all of them, none if it has no word) and sketching them. The best of three passes counts.

Libraries (install into a venv: python3 -m venv /tmp/pyvenv &&
/tmp/pyvenv/bin/pip install datasketch rensa):
- datasketch: MinHash(num_perm=84), one update() per shingle, as UTF-8 bytes;
- rensa: RMinHash(num_perm=84, seed=42), one update() with the list of shingle strings.
"""

import argparse
import re
import time

NUM_PERM = 84
SHINGLE = 8
PASSES = 3
WORD = re.compile(r"[^\W_]+")
COPY_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def unescape_copy(field):
    return re.sub(r"\\(.)", lambda m: COPY_ESCAPES.get(m.group(1), m.group(1)), field)


def read_texts(path, limit):
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            columns = line.rstrip("\n").split("\t", 2)
            if len(columns) == 3:
                texts.append(unescape_copy(columns[2]))
            if limit is not None and len(texts) >= limit:
                break
    return texts


def shingles(text):
    words = WORD.findall(text.lower())
    if len(words) <= SHINGLE:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)]


def sketch_datasketch(texts):
    from datasketch import MinHash

    for text in texts:
        m = MinHash(num_perm=NUM_PERM)
        for s in shingles(text):
            m.update(s.encode("utf-8"))
        m.digest()


def sketch_rensa(texts):
    from rensa import RMinHash

    for text in texts:
        m = RMinHash(num_perm=NUM_PERM, seed=42)
        m.update(shingles(text))
        m.digest()


def megabytes_per_second(sketch, texts, total_bytes):
    sketch(texts[:10])  # import and warm up outside the clock
    best = float("inf")
    for _ in range(PASSES):
        start = time.perf_counter()
        sketch(texts)
        best = min(best, time.perf_counter() - start)
    return total_bytes / 1e6 / best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--limit", type=int, help="use only the first N texts")
    args = parser.parse_args()
    texts = read_texts(args.file, args.limit)
    total_bytes = sum(len(t.encode("utf-8")) for t in texts)
    print(
        f"bytes {total_bytes} ({len(texts)} texts; timed: tokenize + {SHINGLE}-word "
        f"shingles + sketch, num_perm={NUM_PERM}, one process, best of {PASSES})"
    )
    for name, sketch in [("datasketch", sketch_datasketch), ("rensa", sketch_rensa)]:
        print(f"{name} {megabytes_per_second(sketch, texts, total_bytes):.2f}")


if __name__ == "__main__":
    main()
