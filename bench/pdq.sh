#!/usr/bin/env bash
# pdq(bytes) in SQL against the reference (Pillow + `pdqhash`, Meta's C++) over the same N
# JPEGs of typical web size (1 to 2 MP, bench/pdq_data.py), decode included on both sides,
# in the same run: images/s on one core each, then pdq() with 2 parallel workers, and the
# Hamming distance between the two sides' hashes (0 on every image: the core decodes JPEGs to
# libjpeg-turbo's pixels, as Pillow does).
# N=10000 by default; OUT keeps the images between runs; SKIP_INSTALL=1 benchmarks the
# build already installed.
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-pdq
N=${N:-10000}
OUT=${OUT:-/tmp/neardup-bench-pdq-images-$N}
trap 'cluster_stop "$DIR"' EXIT
q() { psql -qAtX -v ON_ERROR_STOP=1 "$@"; }

[[ -f $OUT/$(printf '%05d' $((N - 1))).jpg ]] || python3 "$ROOT/bench/pdq_data.py" generate "$N" "$OUT"
chmod -R a+rX "$OUT"
echo "images: $N JPEGs, $(du -sm "$OUT" | cut -f1) MB"
reference=$(python3 "$ROOT/bench/pdq_data.py" reference "$OUT")

[[ -n ${SKIP_INSTALL:-} ]] || install_extension
cluster_start "$DIR" "max_parallel_workers_per_gather = 2" "max_worker_processes = 8"
q <<SQL
CREATE EXTENSION neardup;
CREATE TABLE images (name text, data bytea);
ALTER TABLE images ALTER data SET STORAGE EXTERNAL;
INSERT INTO images SELECT f, pg_read_binary_file('$OUT/' || f) FROM pg_ls_dir('$OUT') f WHERE f LIKE '%.jpg';
CREATE TABLE reference (name text, pdq hash256);
\copy reference FROM '$OUT/reference.tsv'
VACUUM ANALYZE images;
SQL
one=$(q -c "SET max_parallel_workers_per_gather = 0" -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT count(pdq(data)) FROM images" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])')
two=$(q -c "SET parallel_setup_cost = 0" -c "SET parallel_tuple_cost = 0" -c "SET min_parallel_table_scan_size = 0" \
    -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT count(pdq(data)) FROM images" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["Execution Time"])')
python3 - "$N" "$one" "$two" "$reference" <<'PY'
import sys
n, one, two, ref = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
print(f"reference (Pillow + pdqhash), one core: {ref:.1f} images/s")
print(f"pdq() in SQL, one core:                {n / one * 1000:.1f} images/s ({n / one * 1000 / ref:.2f}x the reference)")
print(f"pdq() in SQL, leader + 2 workers:      {n / two * 1000:.1f} images/s ({one / two:.2f}x one core)")
PY
echo "Hamming distance to the reference's hash (images: count):"
q -c "SELECT string_agg(d || ': ' || c, ', ' ORDER BY d) FROM (SELECT pdq(i.data) <~> r.pdq AS d, count(*) AS c FROM images i JOIN reference r USING (name) GROUP BY 1) s"
