#!/usr/bin/env bash
# pdq(), pdq_quality() and pdq_dihedral() in SQL against Meta's reference (the `pdqhash`
# package over Pillow's pixels) on a few hundred images: the benches' sample pictures
# (scikit-image's), synthetic ones (noise, rings, gradients, flat, 5-pixel-thin, 2600 x
# 1900), their crops, scalings, rotations and mirrors, each in a lossless format by turns
# (PNG, BMP, TIFF, lossless WebP, GIF, grayscale PNG, PNG with alpha) and as a JPEG. Prints
# the distribution of the Hamming distance to the reference's hash and of the quality
# difference; fails unless every image, lossless or JPEG, is bit-exact (hash, quality, the 8
# dihedral hashes): the core decodes JPEGs to libjpeg-turbo's pixels, as Pillow does.
# PDQ_IMAGES=N sets the sample's size (300).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
psql -qX -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS pdq_reference" -c "CREATE DATABASE pdq_reference" >/dev/null
psql -qX -d pdq_reference -c "CREATE EXTENSION neardup" >/dev/null
PGDATABASE=pdq_reference python3 "$ROOT/tests/integration/pdq_reference.py" check "${PDQ_IMAGES:-300}"
