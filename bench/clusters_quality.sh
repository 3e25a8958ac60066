#!/usr/bin/env bash
# Do clusters chain? On the Debian corpus, the share of cluster members that are true
# near-duplicates of their representative (exact Jaccard of 8-word shingle sets,
# bench/quality/src/bin/member_jaccard.rs), for neardup_clusters with method 'components'
# (connected components of the pairs) against 'representatives' (every member within the
# threshold of its representative), on simhash (k <= 3) and on minhash LSH pairs (84
# minvalues, J >= 0.8). The priority is the same for both: longest description first.
# Usage: SKIP_INSTALL=1 bench/clusters_quality.sh
source "$(dirname "$0")/lib.sh"
DIR=/tmp/neardup-bench-clusters
OUT=$(mktemp -d)
trap 'cluster_stop "$DIR"; rm -rf "$OUT"' EXIT
bench_cluster "$DIR" "maintenance_work_mem = '512MB'"
psql -qX -v ON_ERROR_STOP=1 -c "ALTER TABLE docs ADD COLUMN fp simhash64, ADD COLUMN mh minhash_sketch" \
    -c "UPDATE docs SET fp = simhash(body), mh = minhash(body)"
cargo build --quiet --release -p neardup-quality --bin member_jaccard
specs=()
for signature in "fp, 3" "mh, 0.8"; do
    column=${signature%%,*}
    threshold=${signature#*, }
    for method in components representatives; do
        name="$column $threshold $method"
        file="$OUT/${column}_${method}.tsv"
        # Every member with its cluster's representative.
        psql -qAtX -v ON_ERROR_STOP=1 -F $'\t' -o "$file" -c "
            WITH c AS (SELECT * FROM neardup_clusters('docs', 'id', '$column', $threshold, 'length(body) DESC', '$method'))
            SELECT c.id, r.id FROM c JOIN c r ON r.cluster_id = c.cluster_id AND r.is_representative"
        largest=$(psql -AtX -c "SELECT max(n) FROM (SELECT count(*) AS n FROM neardup_clusters('docs', 'id', '$column', $threshold, 'length(body) DESC', '$method') GROUP BY cluster_id) s")
        echo "$name: largest cluster $largest rows"
        specs+=("$name=$file")
    done
done
"$ROOT/target/release/member_jaccard" "$CORPUS" "${specs[@]}"
