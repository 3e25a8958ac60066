#!/bin/bash
# Build pg_test_data/full/debian_descriptions.tsv from the Debian bookworm
# English Translation index, and (with --sample) regenerate the committed
# sample pg_test_data/debian_descriptions_sample.tsv from it.
#   usage: build_corpus.sh [--force] [--sample]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
full=$here/full
tsv=$full/debian_descriptions.tsv
sample_tsv=$here/debian_descriptions_sample.tsv
apt=$full/apt   # private apt state: the system's lists/cache/sources stay untouched

force=0 sample=0
for a in "$@"; do
  case $a in
    --force) force=1 ;;
    --sample) sample=1 ;;
    *) echo "usage: $0 [--force] [--sample]" >&2; exit 2 ;;
  esac
done

# Own sources, lists, cache and lock, so no dpkg/apt lock is needed and the
# system's pkgcache.bin is not rebuilt from our lists.  Acquire::Languages
# overrides images (e.g. Docker) that set it to "none".
aptopts=(
  -o Dir::Etc::SourceList=/dev/null
  -o Dir::Etc::SourceParts="$apt/sources.list.d"
  -o Dir::State::Lists="$apt/lists"
  -o Dir::Cache="$apt/cache"
  -o Acquire::Languages=en
)

fetch() {
  mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial"
  cat >"$apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main contrib non-free non-free-firmware
Architectures: amd64
Targets: Packages Translations
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -q "${aptopts[@]}"
}

# Decompressed, concatenated index files of one kind (Packages / Translations).
cat_index() {
  local kind=$1 files; shift
  mapfile -t files < <(apt-get indextargets "${aptopts[@]}" --format '$(FILENAME)' "Created-By: $kind" "$@")
  (( ${#files[@]} )) || { echo "no $kind index in $apt/lists" >&2; exit 1; }
  /usr/lib/apt/apt-helper cat-file "${files[@]}"
}

if [[ -s $tsv && $force == 0 ]]; then
  echo "$tsv exists (use --force to rebuild)"
else
  fetch
  cat_index Translations 'Language: en' | python3 -B "$here/build_corpus.py" corpus "$tsv.tmp"
  mv "$tsv.tmp" "$tsv"
  echo "corpus: $(wc -l <"$tsv") rows, $(stat -c %s "$tsv") bytes -> $tsv"
fi

if [[ $sample == 1 ]]; then
  [[ -d $apt/lists ]] || fetch
  # Packages supplies the Source: field used to group sibling packages.
  cat_index Packages | python3 -B "$here/build_corpus.py" sample "$tsv" "$sample_tsv"
  echo "sample: $(wc -l <"$sample_tsv") rows, $(stat -c %s "$sample_tsv") bytes -> $sample_tsv"
fi
