#!/usr/bin/env python3
"""Count row pairs of a COPY-text TSV (id, package, body) whose bodies have
3-word-shingle Jaccard >= THRESHOLD.  Words are lowercase maximal runs of
alphanumeric characters; a body with fewer than 3 words is one shingle.

  count_near_dups.py FILE.tsv [--threshold 0.8] [--list]

Exact, not sampled: an all-pairs join with prefix filtering (Bayardo et al.,
WWW 2007).  Shingles are ordered rarest first; two sets with Jaccard >= t
overlap in at least ceil(t*|x|) shingles (x the larger), so each set's first
|s| - ceil(t*|s|) + 1 shingles must meet the other's; only those prefixes go
into the inverted index, and candidates get an exact Jaccard check.
--list prints "id1<TAB>id2<TAB>jaccard" for every pair instead of the count.
"""
import argparse
import math
import re
from collections import Counter, defaultdict

WORD = re.compile(r'[^\W_]+')
UNESCAPE = re.compile(r'\\(.)')
ESCAPED = {'n': '\n', 't': '\t', 'r': '\r'}


def shingles(text, ids, k=3):
    w = WORD.findall(text.lower())
    grams = {' '.join(w[i:i + k]) for i in range(len(w) - k + 1)} or ({' '.join(w)} if w else set())
    return {ids.setdefault(g, len(ids)) for g in grams}


def read_tsv(path):
    """Rows of a COPY-text TSV as (id, package, unescaped body)."""
    with open(path, encoding='utf-8') as f:
        for line in f:
            rid, pkg, body = line.rstrip('\n').split('\t')
            yield int(rid), pkg, UNESCAPE.sub(lambda m: ESCAPED.get(m[1], m[1]), body)


def near_dup_pairs(bodies, t=0.8):
    """Yield (i, j, jaccard) for every pair of bodies (by list index) at >= t."""
    ids = {}
    sets = [shingles(b, ids) for b in bodies]
    del ids
    df = Counter(g for s in sets for g in s)
    rank = {g: r for r, g in enumerate(sorted(df, key=df.__getitem__))}
    prefixes = []
    for s in sets:
        need = math.ceil(t * len(s) - 1e-9)  # min overlap with any equal-or-smaller set
        prefixes.append(sorted(rank[g] for g in s)[:len(s) - need + 1])

    index = defaultdict(list)
    for d in sorted(range(len(sets)), key=lambda d: len(sets[d])):  # smaller sets indexed first
        x = sets[d]
        if not x:
            continue
        cands = set()
        for g in prefixes[d]:
            cands.update(e for e in index[g] if len(sets[e]) >= t * len(x) - 1e-9)
            index[g].append(d)
        for e in cands:
            inter = len(x & sets[e])
            j = inter / (len(x) + len(sets[e]) - inter)
            if j >= t - 1e-12:
                yield e, d, j


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('tsv')
    ap.add_argument('--threshold', type=float, default=0.8)
    ap.add_argument('--list', action='store_true')
    args = ap.parse_args()
    rows = list(read_tsv(args.tsv))
    pairs = 0
    for i, j, jac in near_dup_pairs([r[2] for r in rows], args.threshold):
        pairs += 1
        if args.list:
            a, b = sorted((rows[i][0], rows[j][0]))
            print(f'{a}\t{b}\t{jac:.4f}')
    if not args.list:
        print(f'{len(rows)} rows, {pairs} pairs with Jaccard >= {args.threshold}')


if __name__ == '__main__':
    main()
