#!/usr/bin/env bash
# The README's first command runs end to end, plans its self-join through the hamming index
# in a fresh connection (the preloaded planner hook), and finds near-duplicate groups.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$("$ROOT/demo.sh" 2>&1)
grep -q "Index Scan using docs_fp on docs b" <<<"$out" || { echo "$out"; exit 1; }
grep -q "Index Cond: (fp <@ hamming_ball(a.fp, 3))" <<<"$out" || { echo "$out"; exit 1; }
grep -Eq "near-duplicate pairs \(k <= 3\) \| [1-9][0-9]*" <<<"$out" || { echo "$out"; exit 1; }
grep -q "group of" <<<"$out" || { echo "$out"; exit 1; }
