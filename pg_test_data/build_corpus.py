#!/usr/bin/env python3
"""Debian long descriptions -> PostgreSQL COPY (FORMAT text) TSV: id, package, body.

  build_corpus.py corpus OUT.tsv                   < Translation-en stanzas
  build_corpus.py sample FULL.tsv OUT.tsv [BYTES]  < Packages stanzas

Input arrives on stdin already decompressed (build_corpus.sh uses apt-helper
cat-file, which handles whatever compression apt chose to keep).
"""
import hashlib
import re
import sys
from collections import defaultdict

from count_near_dups import near_dup_pairs, read_tsv

ESCAPES = str.maketrans({'\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r'})


def stanzas(lines):
    """Yield RFC822 stanzas as {field: value}; continuation lines are kept
    verbatim (leading space included), joined to the value with newlines."""
    rec, key = {}, None
    for line in lines:
        line = line.rstrip('\n')
        if not line:
            if rec:
                yield rec
            rec, key = {}, None
        elif line[0] in ' \t' and key:
            rec[key] += '\n' + line
        else:
            key, _, val = line.partition(':')
            rec[key] = val.strip()
    if rec:
        yield rec


def body(desc):
    """Summary line, then the long description with the one-space indent
    removed and ' .' paragraph separators turned into empty lines."""
    summary, *rest = desc.split('\n')
    lines = ['' if l.rstrip() == ' .' else l[1:] for l in rest]
    return '\n'.join([summary] + lines)


def corpus(out):
    rows = {}
    for r in stanzas(sys.stdin):
        if 'Package' in r and 'Description-en' in r:
            # The same (package, md5) shows up once per component/arch it is in.
            rows.setdefault((r['Package'], r.get('Description-md5', '')), body(r['Description-en']))
    with open(out, 'w', encoding='utf-8', newline='\n') as f:
        for i, key in enumerate(sorted(rows), 1):
            f.write(f'{i}\t{key[0].translate(ESCAPES)}\t{rows[key].translate(ESCAPES)}\n')


def stem(pkg):
    """Fallback family key for packages absent from the amd64 Packages index:
    drop the usual binary-package suffixes and trailing soname/version digits."""
    pkg = re.sub(r'-(dev|doc|dbg|dbgsym|common|data|bin|utils|tools|examples)$', '', pkg)
    pkg = re.sub(r'^python3?-', '', pkg)
    return re.sub(r'[-.\d]+$', '', pkg) or pkg


def sample(full, out, budget):
    # Family = source package (libfoo1/libfoo-dev/libfoo-doc, *-l10n-* share
    # most of their text), merged with every other family it has a near-dup
    # pair with (Jaccard >= 0.8 across sources: cross compilers, qt6-*,
    # transitional packages), so no near-dup pair straddles the sample edge.
    source = {}
    for r in stanzas(sys.stdin):
        src = (r.get('Source') or r['Package']).split()[0]
        source[r['Package']] = min(src, source.get(r['Package'], src))
    rows = list(read_tsv(full))
    parent = {}

    def find(k):
        while parent.get(k, k) != k:
            k = parent[k]
        return k
    key = [source.get(pkg) or stem(pkg) for _, pkg, _ in rows]
    for i, j, _ in near_dup_pairs([b for _, _, b in rows]):
        a, b = sorted((find(key[i]), find(key[j])))
        parent[b] = a  # smallest key names the merged family: order-independent
    families = defaultdict(list)
    for k, row in zip(key, rows):
        families[find(k)].append(row)

    # A content hash of the family key gives a stable, run-independent
    # "random" order; whole families are taken while they fit the budget.
    # Families over 1/20 of the budget are skipped: the merged GCC cross
    # toolchain family (2,045 rows, 40,103 of the corpus' 92,357 pairs) would
    # otherwise supply most of the sample's pairs.
    def line(i, pkg, text):
        return f'{i}\t{pkg.translate(ESCAPES)}\t{text.translate(ESCAPES)}\n'
    keep, size, taken = [], 0, 0
    for k in sorted(families, key=lambda k: hashlib.sha256(k.encode()).hexdigest()):
        fam = sum(len(line(*r).encode()) for r in families[k])  # renumbered ids are never longer
        if size + fam <= budget and fam <= budget // 20:
            keep += families[k]
            size, taken = size + fam, taken + 1
    keep.sort()  # by original id = (package, md5) order
    with open(out, 'w', encoding='utf-8', newline='\n') as f:
        for n, (_, pkg, text) in enumerate(keep, 1):
            f.write(line(n, pkg, text))
    print(f'sample: {len(keep)} rows from {taken} of {len(families)} families')


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 2 else None
    if cmd == 'corpus':
        corpus(sys.argv[2])
    elif cmd == 'sample':
        sample(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 4_800_000)
    else:
        sys.exit(__doc__)
