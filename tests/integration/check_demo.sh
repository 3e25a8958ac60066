#!/usr/bin/env bash
# The README's first command runs end to end and finds near-duplicate groups.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$("$ROOT/demo.sh" 2>&1)
grep -Eq "near-duplicate pairs \(k <= 3\) \| [1-9][0-9]*" <<<"$out" || { echo "$out"; exit 1; }
grep -q "group of" <<<"$out" || { echo "$out"; exit 1; }
