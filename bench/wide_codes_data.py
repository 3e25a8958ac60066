"""PDQ codes of realistic images, and the FAISS baselines, for bench/wide_codes.sh.

  generate N OUT       OUT/pdq.tsv: N PDQ hashes (id, 64 hex digits, kind, source id) of
                       scikit-image's bundled sample images: random crops of every size and
                       place (the natural background: overlapping crops of one picture give
                       correlated codes at every distance) and, for one crop in ten, a
                       near-copy (scaled, JPEG re-encoded, brightened, rotated a little or
                       trimmed); OUT/uniform.tsv: N uniform random codes. Prints the distance
                       histograms of both sets.
  thumbnails N OUT     OUT/pdq.tsv as generate writes it, for millions of codes: the crops
                       are cut from a pyramid of each image (halved until the crop's short
                       side is under 128 pixels; PDQ reduces every image to 64 × 64 first,
                       and a 64-pixel image hashes 15 times as fast as a 512-pixel one),
                       turned by one of the 8 rotations and mirrorings (PDQ's dihedral
                       variants are different codes) so that 21 pictures give a larger
                       background; two processes. Prints the histogram.
  pairs FILE R         every pair within R bits by FAISS IndexBinaryFlat range search of
                       every code against all: pair count and seconds.
  lookups FILE R N [QUERIES]
                       N single-code range searches within R bits (probes: N random codes of
                       FILE, or every code of QUERIES, a file of the same format), by
                       IndexBinaryFlat and by IndexBinaryMultiHash (16 tables of 16 bits,
                       Meta's PDQ index), the latter with FAISS's default nflip = 0 and
                       exact (nflip = 1, see multi_hash): flat's median ms a query, then
                       MultiHash's and its recall, the rows found, exact MultiHash's median
                       ms and recall.
  batch FILE R EVERY   one range search within R bits of the codes of every EVERY-th id
                       (ids ≡ 3 mod EVERY, as bench/wide_codes.sh's batch) by
                       IndexBinaryMultiHash, all queries in one call: ms and distinct rows
                       found with nflip = 0, then with nflip = 1 (exact).
"""

import io
import os
import sys
import time

import numpy as np


def sample_images():
    from skimage import data

    names = ["astronaut", "camera", "coffee", "chelsea", "rocket", "coins", "moon", "page",
             "text", "clock", "hubble_deep_field", "immunohistochemistry", "logo", "retina",
             "grass", "gravel", "brick", "cat", "colorwheel", "cell", "stereo_motorcycle"]
    images = []
    for name in names:
        try:
            image = getattr(data, name)()
        except Exception:  # an image scikit-image would have to download
            continue
        if isinstance(image, tuple):
            image = image[0]
        image = np.asarray(image)
        if image.dtype != np.uint8:
            image = (255 * (image.astype(float) / max(image.max(), 1))).astype(np.uint8)
        if image.ndim == 2:
            image = np.stack([image] * 3, axis=-1)
        images.append(np.ascontiguousarray(image[..., :3]))
    return images


def pdq_hex(image):
    import pdqhash

    vector, _quality = pdqhash.compute(np.ascontiguousarray(image))
    # pdqhash's vector holds bit 255 first, the order ThreatExchange prints (and pdq() gives)
    bits = np.asarray(vector, dtype=np.uint8)
    return np.packbits(bits).tobytes().hex()


def near_copy(image, rng):
    from PIL import Image, ImageEnhance

    picture = Image.fromarray(image)
    edit = rng.integers(5)
    if edit == 0:
        scale = rng.uniform(0.4, 0.9)
        picture = picture.resize((max(8, int(picture.width * scale)), max(8, int(picture.height * scale))))
    elif edit == 1:
        buffer = io.BytesIO()
        picture.save(buffer, format="JPEG", quality=int(rng.integers(20, 90)))
        picture = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    elif edit == 2:
        picture = ImageEnhance.Brightness(picture).enhance(rng.uniform(0.7, 1.4))
    elif edit == 3:
        picture = picture.rotate(rng.uniform(-3, 3), resample=Image.BILINEAR)
    else:
        w, h = picture.size
        dx, dy = int(w * rng.uniform(0, 0.05)), int(h * rng.uniform(0, 0.05))
        picture = picture.crop((dx, dy, w - dx, h - dy))
    return np.asarray(picture.convert("RGB"))


def random_crop(image, rng):
    h, w = image.shape[:2]
    side = rng.uniform(0.15, 1.0)
    ch, cw = max(16, int(h * side * rng.uniform(0.7, 1.0))), max(16, int(w * side * rng.uniform(0.7, 1.0)))
    y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
    return image[y:y + ch, x:x + cw]


def write_codes(f, ids, new_crop, rng):
    """A line of pdq.tsv for each id: for one in ten, a near copy of a crop drawn from the
    last 20,000 (a reservoir), otherwise of new_crop()."""
    crops = []
    for i in ids:
        if i % 10 == 0 and crops:
            source_id, source = crops[rng.integers(len(crops))]
            f.write(f"{i}\t{pdq_hex(near_copy(source, rng))}\tnear\t{source_id}\n")
        else:
            crop = new_crop()
            if len(crops) < 20000:
                crops.append((i, crop))
            else:
                crops[rng.integers(len(crops))] = (i, crop)
            f.write(f"{i}\t{pdq_hex(crop)}\tcrop\t\\N\n")


def pyramid(image):
    """The image, then halved while its short side is at least 128 pixels."""
    from PIL import Image

    levels = [image]
    while min(levels[-1].shape[:2]) >= 128:
        levels.append(np.asarray(Image.fromarray(levels[-1]).reduce(2)))
    return levels


def thumbnail_crop(levels, rng):
    """A random crop as random_crop cuts it, taken from the pyramid level where its short
    side is under 128 pixels, then rotated and mirrored one of 8 ways."""
    h, w = levels[0].shape[:2]
    side = rng.uniform(0.15, 1.0)
    ch, cw = max(16, int(h * side * rng.uniform(0.7, 1.0))), max(16, int(w * side * rng.uniform(0.7, 1.0)))
    y, x = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
    level = 0
    while level + 1 < len(levels) and min(ch, cw) >> level >= 128:
        level += 1
    crop = levels[level][y >> level:(y + ch) >> level, x >> level:(x + cw) >> level]
    turn = int(rng.integers(8))
    crop = np.rot90(crop, turn % 4)
    if turn >= 4:
        crop = crop[:, ::-1]
    return np.ascontiguousarray(crop)


def thumbnails_part(args):
    """Ids first..last of `thumbnails`, in OUT/pdq.tsv.PART, with their own random stream."""
    first, last, out, part = args
    rng = np.random.default_rng([20261127, part])
    pyramids = [pyramid(image) for image in sample_images()]
    with open(f"{out}/pdq.tsv.{part}", "w") as f:
        write_codes(f, range(first, last + 1), lambda: thumbnail_crop(pyramids[rng.integers(len(pyramids))], rng), rng)


def thumbnails(n, out, processes=2):
    from multiprocessing import Pool

    start = time.time()
    bounds = [n * p // processes for p in range(processes + 1)]
    with Pool(processes) as pool:
        pool.map(thumbnails_part, [(bounds[p] + 1, bounds[p + 1], out, p) for p in range(processes)])
    with open(f"{out}/pdq.tsv", "w") as f:
        for p in range(processes):
            with open(f"{out}/pdq.tsv.{p}") as part:
                f.write(part.read())
            os.remove(f"{out}/pdq.tsv.{p}")
    print(f"   {n} PDQ codes of crops of thumbnails in {time.time() - start:.0f} s")
    histogram("pdq", codes_of(f"{out}/pdq.tsv"), np.random.default_rng(1))


def codes_of(path):
    hexes = [line.split("\t")[1] for line in open(path)]
    return np.frombuffer(bytes.fromhex("".join(hexes)), dtype=np.uint8).reshape(-1, 32)


def histogram(name, codes, rng):
    import faiss

    index = faiss.IndexBinaryFlat(256)
    index.add(codes)
    sample = codes[rng.choice(len(codes), size=min(2000, len(codes)), replace=False)]
    distances, _ = index.search(sample, 2)
    nearest = distances[:, 1]  # [:, 0] is the code itself
    edges = [0, 1, 8, 16, 24, 32, 48, 64, 96, 257]
    counts = np.histogram(nearest, bins=edges)[0]
    cells = ", ".join(f"{lo}-{hi - 1}: {c / len(sample):.1%}" for lo, hi, c in zip(edges, edges[1:], counts))
    print(f"   {name}: distance to the nearest other code (2000 codes): {cells}")


def generate(n, out):
    rng = np.random.default_rng(20261126)
    images = sample_images()
    start = time.time()
    with open(f"{out}/pdq.tsv", "w") as f:
        write_codes(f, range(1, n + 1), lambda: random_crop(images[rng.integers(len(images))], rng), rng)
    print(f"   {n} PDQ codes of crops of {len(images)} images in {time.time() - start:.0f} s")
    with open(f"{out}/uniform.tsv", "w") as f:
        for i in range(1, n + 1):
            f.write(f"{i}\t{rng.bytes(32).hex()}\tuniform\t\\N\n")
    for name in ("pdq", "uniform"):
        histogram(name, codes_of(f"{out}/{name}.tsv"), rng)


def pairs(path, radius):
    import faiss

    faiss.omp_set_num_threads(1)
    codes = codes_of(path)
    index = faiss.IndexBinaryFlat(256)
    index.add(codes)
    start = time.time()
    lims, _distances, labels = index.range_search(codes, radius + 1)  # FAISS: distance < radius
    seconds = time.time() - start
    queries = np.repeat(np.arange(len(codes)), np.diff(lims).astype(np.int64))
    print(int(np.count_nonzero(labels > queries)), f"{seconds:.3f}")


def multi_hash(codes, nflip):
    """IndexBinaryMultiHash over 16 tables of 16 bits. It probes each table at the query's
    substring and the values `nflip` bits from it: 0 is FAISS's default, and misses a code
    31 bits away whose every substring differs; 1 is exact at r = 31 (Norouzi's cut, as
    Meta's PDQ index searches it)."""
    import faiss

    index = faiss.IndexBinaryMultiHash(256, 16, 16)
    index.add(codes)
    index.nflip = nflip
    return index


def lookups(path, radius, probes, queries_path=None):
    import faiss

    faiss.omp_set_num_threads(1)
    codes = codes_of(path)
    flat = faiss.IndexBinaryFlat(256)
    flat.add(codes)
    multi = multi_hash(codes, 0)
    exact = multi_hash(codes, 1)
    if queries_path:  # the probes the caller also times, in the same format
        queries = codes_of(queries_path)
    else:
        rng = np.random.default_rng(1)
        queries = codes[rng.choice(len(codes), size=probes, replace=False)]
    times = {"flat": [], "multi": [], "exact": []}
    found = {"flat": 0, "multi": 0, "exact": 0}
    for q in queries:
        for name, index in (("flat", flat), ("multi", multi), ("exact", exact)):
            start = time.perf_counter()
            lims, _d, _l = index.range_search(q[None, :], radius + 1)
            times[name].append(time.perf_counter() - start)
            found[name] += int(lims[1])
    ms = {name: np.median(t) * 1000 for name, t in times.items()}
    recall = {name: found[name] / max(found["flat"], 1) for name in found}
    print(f"{ms['flat']:.3f} {ms['multi']:.3f} {recall['multi']:.4f} {found['flat']} "
          f"{ms['exact']:.3f} {recall['exact']:.4f}")


def nearest(path, queries_path, k):
    """The k nearest codes of each query by IndexBinaryFlat, one thread: the median and the
    slowest time over the queries after the first (untimed), and the sum of the distances
    found (for the caller to compare with its own)."""
    import faiss

    faiss.omp_set_num_threads(1)
    flat = faiss.IndexBinaryFlat(256)
    flat.add(codes_of(path))
    queries = codes_of(queries_path)
    flat.search(queries[:1], k)
    times, total = [], 0
    for q in queries[1:]:
        start = time.perf_counter()
        distances, _labels = flat.search(q[None, :], k)
        times.append(time.perf_counter() - start)
        total += int(distances.sum())
    print(f"{np.median(times) * 1000:.3f} {max(times) * 1000:.3f} {total}")


def batch(path, radius, every):
    import faiss

    faiss.omp_set_num_threads(1)
    ids = np.array([int(line.split("\t", 1)[0]) for line in open(path)])
    codes = codes_of(path)
    queries = codes[ids % every == 3]
    out = []
    for nflip in (0, 1):
        index = multi_hash(codes, nflip)
        start = time.perf_counter()
        _lims, _d, labels = index.range_search(queries, radius + 1)
        out += [f"{(time.perf_counter() - start) * 1000:.3f}", str(len(np.unique(labels)))]
    print(" ".join(out))


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "generate":
        generate(int(sys.argv[2]), sys.argv[3])
    elif command == "thumbnails":
        thumbnails(int(sys.argv[2]), sys.argv[3])
    elif command == "pairs":
        pairs(sys.argv[2], int(sys.argv[3]))
    elif command == "lookups":
        lookups(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:6])
    elif command == "nearest":
        nearest(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif command == "batch":
        batch(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
