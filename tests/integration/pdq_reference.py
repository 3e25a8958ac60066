#!/usr/bin/env python3
"""The PDQ reference side of neardup's pdq() checks: Meta's C++ through the `pdqhash`
package, over pixels decoded by Pillow (`Image.open(f).convert("RGB")`, the pipeline the
package's users run; it does not apply EXIF orientation).

  pdq_reference.py golden          the table of core/tests/golden_pdq.rs
  pdq_reference.py fixtures DIR    writes the SQL tests' images (tests/images) and prints
                                   their reference hashes and qualities
  pdq_reference.py jpegs DIR       writes the core's JPEG decoder fixtures (core/tests/jpeg,
                                   made by Pillow and libjpeg-turbo's cjpeg) and Pillow's RGB
                                   pixels of each (NAME.rgb)
  pdq_reference.py check N         pdq(), pdq_quality() and pdq_dihedral() of the server
                                   (libpq's environment) against the reference on about N
                                   images; exits 1 unless every one (lossless and JPEG) is
                                   bit-exact
"""
import io
import os
import struct
import sys
import zlib

import numpy as np
import pdqhash


def hex_of(bits):
    """pdqhash's bit vector (bit 255 first) in the hex form ThreatExchange prints."""
    return "".join("%x" % int("".join(map(str, bits[i:i + 4])), 2) for i in range(0, 256, 4))


def lcg_image(w, h, seed):
    """Noise from a 32-bit LCG (the Rust test draws the same stream): R, G, B per pixel."""
    values, s = np.empty(w * h * 3, dtype=np.uint8), seed
    for i in range(w * h * 3):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        values[i] = s >> 24
    return values.reshape(h, w, 3)


def pattern(w, h, kind):
    y, x = np.mgrid[0:h, 0:w]
    if kind == "gradient":
        r, g, b = x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) * 255 // max(w + h - 2, 1)
    else:  # rings
        r, g, b = ((x - w // 3) ** 2 + (y - h // 2) ** 2) // 7 % 256, (x * y) % 256, (x ^ y) % 256
    return np.stack([r, g, b], axis=2).astype(np.uint8)


GOLDEN = [("noise", 64, 64, 1), ("noise", 5, 5, 2), ("noise", 97, 61, 3), ("gradient", 200, 150, 0),
          ("rings", 640, 480, 0), ("rings", 129, 1000, 0), ("noise", 300, 7, 4)]


def golden():
    for kind, w, h, seed in GOLDEN:
        img = lcg_image(w, h, seed) if kind == "noise" else pattern(w, h, kind)
        hashes, quality = pdqhash.compute_dihedral(img)
        listed = ", ".join('"%s"' % hex_of(b) for b in hashes)
        print(f'("{kind}", {w}, {h}, {seed}, {quality}, [{listed}]),')


def smooth(w, h):
    """Low frequencies that every format keeps (even GIF's palette, nearly)."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([128 + 127 * np.sin(x / 9.0 + y / 23.0), 128 + 127 * np.cos(y / 7.0),
                     (x * y) // 40 % 256], axis=2).astype(np.uint8)


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def raw_png(width, height, depth, color, rows):
    """A PNG written by hand: Pillow writes no 16-bit RGB, and a bomb's header lies."""
    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header)
            + png_chunk(b"IDAT", zlib.compress(rows, 9)) + png_chunk(b"IEND", b""))


def reference(data):
    """pdqhash over Pillow's pixels: (hash, quality), as the package's users compute it."""
    pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    bits, quality = pdqhash.compute(pixels)
    return hex_of(bits), quality


def fixtures(out):
    img = smooth(80, 60)
    files = {}
    for name, fmt, kw in [("pattern.png", "PNG", {}), ("pattern.jpg", "JPEG", {"quality": 90}),
                          ("pattern.gif", "GIF", {}), ("pattern.webp", "WEBP", {"lossless": True}),
                          ("pattern.bmp", "BMP", {}), ("pattern.tiff", "TIFF", {"compression": "tiff_lzw"})]:
        b = io.BytesIO()
        Image.fromarray(img).save(b, fmt, **kw)
        files[name] = b.getvalue()
    b = io.BytesIO()
    Image.fromarray(img).convert("L").save(b, "PNG")
    files["gray.png"] = b.getvalue()
    alpha = (np.arange(80 * 60) % 256).reshape(60, 80, 1).astype(np.uint8)
    b = io.BytesIO()
    Image.fromarray(np.concatenate([img, alpha], axis=2), "RGBA").save(b, "PNG")
    files["rgba.png"] = b.getvalue()
    # 16-bit RGB: each sample's high byte the pattern, its low byte noise Pillow drops
    wide = (img.astype(np.uint16) * 256 + (np.arange(80 * 60 * 3) * 37 % 256).reshape(60, 80, 3)).astype(">u2")
    rows = b"".join(b"\x00" + wide[r].tobytes() for r in range(60))
    files["rgb16.png"] = raw_png(80, 60, 16, 2, rows)
    frames = [Image.fromarray(img), Image.fromarray(255 - img)]
    b = io.BytesIO()
    frames[0].save(b, "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    files["animated.gif"] = b.getvalue()
    for side in (1, 5):
        b = io.BytesIO()
        Image.fromarray(img[:side, :side]).save(b, "PNG")
        files[f"tiny{side}.png"] = b.getvalue()
    b = io.BytesIO()
    Image.new("RGB", (64, 64), (90, 120, 200)).save(b, "PNG")
    files["flat.png"] = b.getvalue()
    # a decompression bomb: 100000 x 100000 in its header, a few bytes of zeros after it
    files["bomb.png"] = raw_png(100000, 100000, 8, 0, bytes(4096))
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        if name not in ("bomb.png", "tiny1.png"):
            print(name, *reference(data))


def jpegs(out):
    """JPEGs of every kind libjpeg-turbo writes, small: Pillow's three chroma samplings,
    baseline and progressive; cjpeg's other sampling factors (chroma taller, 4:1:1, chroma
    sampled finer than luma, a 3:1 ratio), restart intervals, RGB, grayscale; CMYK, and
    YCCK (a CMYK JPEG whose Adobe marker is made to say YCCK); sizes whose chroma is 1 or 2
    samples wide; and a 1200 x 900 one for the cancellation test."""
    import subprocess

    y, x = np.mgrid[0:900, 0:1200]
    big = np.stack([128 + 127 * np.sin(x / 90.0 + y / 230.0), 128 + 127 * np.cos(y / 70.0),
                    (x + y) // 9 % 256], axis=2).astype(np.uint8)
    rng = np.random.default_rng(40)
    files = {}

    def pillow(name, image, **kw):
        b = io.BytesIO()
        image.save(b, "JPEG", **kw)
        files[name] = b.getvalue()

    def cjpeg(name, image, *args):
        ppm = b"P6 %d %d 255\n" % image.shape[1::-1] + image.tobytes()
        files[name] = subprocess.run(["cjpeg", *args], input=ppm, capture_output=True, check=True).stdout

    pillow("interrupts.jpg", Image.fromarray(big), quality=50)
    for w, h in [(33, 15), (2, 7), (3, 3), (1, 1)]:
        img = pattern(w, h, "rings") if w > 3 else lcg_image(w, h, w)
        pil = Image.fromarray(img)
        for sub, label in [(0, "444"), (1, "422"), (2, "420")]:
            pillow(f"{w}x{h}_{label}.jpg", pil, quality=int(rng.integers(40, 96)), subsampling=sub)
            pillow(f"{w}x{h}_{label}_progressive.jpg", pil, quality=int(rng.integers(40, 96)),
                   subsampling=sub, progressive=True)
        if w < 33:
            continue
        for sample in ["1x2", "4x1", "2x4", "1x1,2x2,1x1", "3x1"]:
            cjpeg(f"{w}x{h}_{sample.replace(',', '_')}.jpg", img, "-sample", sample)
            cjpeg(f"{w}x{h}_{sample.replace(',', '_')}_progressive_restart.jpg", img, "-sample", sample,
                  "-progressive", "-restart", "1B")
        cjpeg(f"{w}x{h}_restart.jpg", img, "-restart", "1B")
        cjpeg(f"{w}x{h}_rgb.jpg", img, "-rgb")
        cjpeg(f"{w}x{h}_gray_progressive.jpg", img, "-grayscale", "-progressive")
        pillow(f"{w}x{h}_gray.jpg", pil.convert("L"))
        cmyk = np.concatenate([img, lcg_image(w, h, 9)[..., :1]], axis=2)
        pillow(f"{w}x{h}_cmyk.jpg", Image.frombytes("CMYK", (w, h), cmyk.tobytes()), quality=90)
        ycck = bytearray(files[f"{w}x{h}_cmyk.jpg"])
        ycck[ycck.find(b"Adobe") + 11] = 2
        files[f"{w}x{h}_ycck.jpg"] = bytes(ycck)
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        if name != "interrupts.jpg":
            with open(os.path.join(out, name[:-4] + ".rgb"), "wb") as f:
                f.write(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).tobytes())


# The reference's dihedral order, as numpy transforms of the pixel array: which image each
# of compute_dihedral's 8 hashes stands for.
TRANSFORMS = [lambda a: a, lambda a: np.rot90(a, 1), lambda a: np.rot90(a, 2), lambda a: np.rot90(a, 3),
              lambda a: a[::-1], lambda a: a[:, ::-1], lambda a: a.transpose(1, 0, 2),
              lambda a: np.rot90(a, 2).transpose(1, 0, 2)]


def sources(rng):
    """(name, RGB array) of every source: the benches' sample pictures (scikit-image's
    bundled images, bench/wide_codes_data.py) and synthetic ones of every kind."""
    from skimage import data

    for name in ["astronaut", "camera", "coffee", "chelsea", "rocket", "coins", "moon", "page",
                 "text", "clock", "immunohistochemistry", "logo", "retina", "grass", "gravel",
                 "brick", "cat", "colorwheel", "cell"]:
        try:
            image = np.asarray(getattr(data, name)())
        except Exception:  # an image scikit-image would have to download
            continue
        if image.dtype != np.uint8:
            image = (255 * (image.astype(float) / max(image.max(), 1))).astype(np.uint8)
        if image.ndim == 2:
            image = np.stack([image] * 3, axis=-1)
        yield name, np.ascontiguousarray(image[..., :3])
    for seed in range(4):
        w, h = rng.integers(5, 400, size=2)
        yield f"noise{seed}", rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    for w, h in [(64, 64), (5, 5), (6, 300), (1000, 7), (128, 128), (129, 127)]:
        yield f"rings{w}x{h}", pattern(w, h, "rings")
    yield "gradient", pattern(300, 200, "gradient")
    yield "flat", np.full((50, 70, 3), 77, dtype=np.uint8)
    yield "huge", pattern(2600, 1900, "rings")


def variants(name, image, rng, again):
    """The image, crops, scalings, rotations and mirrors of it (`again`: only the random
    crops and turns, for a further round)."""
    from PIL import Image

    h, w = image.shape[:2]
    if again:
        for k in range(3):
            if h > 10 and w > 10:
                top, left = rng.integers(0, h // 3), rng.integers(0, w // 3)
                crop = image[top:rng.integers(top + 5, h + 1), left:rng.integers(left + 5, w + 1)]
                yield f"{name}/again{again}.{k}", np.ascontiguousarray(TRANSFORMS[rng.integers(0, 8)](crop))
        return
    yield name, image
    for k in range(3):
        if h > 10 and w > 10:
            top, left = rng.integers(0, h // 3), rng.integers(0, w // 3)
            bottom, right = rng.integers(top + 5, h + 1), rng.integers(left + 5, w + 1)
            yield f"{name}/crop{k}", np.ascontiguousarray(image[top:bottom, left:right])
    for scale in (0.37, 1.7):
        size = (max(1, int(w * scale)), max(1, int(h * scale)))
        if size[0] * size[1] < 4_000_000:
            yield f"{name}/scale{scale}", np.asarray(Image.fromarray(image).resize(size, Image.BILINEAR))
    k = rng.integers(1, 8)
    yield f"{name}/dihedral{k}", np.ascontiguousarray(TRANSFORMS[k](image))


def encodings(name, image, rng):
    """(name, kind, bytes): each variant in a lossless format (by turns), and in JPEG."""
    from PIL import Image

    pil = Image.fromarray(image)
    lossless = [("png", "PNG", {}, pil), ("bmp", "BMP", {}, pil), ("tiff", "TIFF", {}, pil),
                ("webp", "WEBP", {"lossless": True}, pil), ("gif", "GIF", {}, pil),
                ("gray.png", "PNG", {}, pil.convert("L")),
                ("rgba.png", "PNG", {}, Image.fromarray(np.concatenate(
                    [image, rng.integers(0, 256, size=image.shape[:2] + (1,), dtype=np.uint8)], axis=2), "RGBA"))]
    ext, fmt, kw, img = lossless[rng.integers(0, len(lossless))]
    b = io.BytesIO()
    img.save(b, fmt, **kw)
    yield f"{name}.{ext}", "lossless", b.getvalue()
    b = io.BytesIO()
    pil.save(b, "JPEG", quality=int(rng.integers(40, 96)))
    yield f"{name}.jpg", "jpeg", b.getvalue()


def flat_jpeg(side):
    """A side x side gray JPEG of 2 bits a block (a 1-bit code for DC 0, one for end of
    block): 25 million pixels in 98 KB, which pdq() takes a good fraction of a second over."""
    table = "01" + "00" * 15 + "00"  # one code of length 1, for symbol 0
    header = ("FFD8" "FFDB004300" + "01" * 64 + "FFC0000B08%04X%04X01011100" % (side, side)
              + "FFC4001400" + table + "FFC4001410" + table + "FFDA0008010100003F00")
    blocks = (side // 8) ** 2
    return bytes.fromhex(header) + bytes((2 * blocks + 7) // 8) + b"\xff\xd9"


def cancelled_promptly(conn):
    """statement_timeout stops pdq() on a large image long before it would finish: the
    decoder and the hash check for interrupts. Returns a line to print, or None on failure."""
    import time

    import psycopg

    data = flat_jpeg(5000)
    start = time.monotonic()
    conn.execute("SELECT pdq(%s)", (data,)).fetchone()
    whole = time.monotonic() - start
    conn.execute("SET statement_timeout = '50ms'")
    start = time.monotonic()
    try:
        conn.execute("SELECT pdq(%s)", (data,)).fetchone()
        state = None
    except psycopg.Error as e:
        state = e.sqlstate
    stopped = time.monotonic() - start
    conn.execute("RESET statement_timeout")
    line = (f"statement_timeout 50 ms on a 5000 x 5000 JPEG: {state} after {stopped * 1000:.0f} ms "
            f"(the whole pdq() {whole * 1000:.0f} ms)")
    return line if state == "57014" and stopped < max(0.5 * whole, 0.3) else None


def histogram(values):
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return ", ".join(f"{k}: {counts[k]}" for k in sorted(counts))


def check(n):
    import psycopg

    rng = np.random.default_rng(40)
    items, images, again = [], list(sources(rng)), 0
    while len(items) < int(n):
        for name, image in images:
            for vname, variant in variants(name, image, rng, again):
                items.extend(encodings(vname, variant, rng))
        again += 1
    if len(items) > int(n):
        keep = sorted(rng.choice(len(items), size=int(n), replace=False))
        items = [items[i] for i in keep]
    distance = {"lossless": [], "jpeg": [], "jpeg, quality >= 50": []}
    quality = {"lossless": [], "jpeg": []}
    dihedral_mismatch, refused, worst, errors = 0, [], [], []
    with psycopg.connect(autocommit=True) as conn:
        for name, kind, data in items:
            pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
            ref_hashes, ref_quality = pdqhash.compute_dihedral(pixels)
            ref = [hex_of(b) for b in ref_hashes]
            if min(pixels.shape[:2]) < 5:
                refused.append(name)
                continue
            try:
                ours, our_quality, our_dihedral = conn.execute(
                    "SELECT pdq(%(b)s)::text, pdq_quality(%(b)s), pdq_dihedral(%(b)s)::text[]",
                    {"b": data}).fetchone()
            except psycopg.Error as e:
                errors.append(f"{name} ({kind}): {e.sqlstate} {e}")
                continue
            d = bin(int(ours, 16) ^ int(ref[0], 16)).count("1")
            distance[kind].append(d)
            if kind == "jpeg" and ref_quality >= 50:
                distance["jpeg, quality >= 50"].append(d)
            quality[kind].append(our_quality - ref_quality)
            if list(our_dihedral) != ref:
                dihedral_mismatch += 1
            if d > 0 or our_quality != ref_quality:
                worst.append((d, name, our_quality - ref_quality))
        timeout = cancelled_promptly(conn)
    ok = True
    print(timeout or "statement_timeout did not stop pdq() promptly")
    for kind in distance:
        ds = distance[kind]
        exact = sum(1 for d in ds if d == 0)
        print(f"{kind}: {len(ds)} images, {exact} bit-exact ({100.0 * exact / max(len(ds), 1):.1f} %), "
              f"max {max(ds, default=0)} bits")
        print(f"  Hamming distance to the reference: {histogram(ds)}")
        if kind in quality:
            print(f"  quality difference: {histogram(quality[kind])}")
    hashed = len(distance["lossless"]) + len(distance["jpeg"])
    print(f"pdq_dihedral equal to the reference's 8 hashes: {hashed - dihedral_mismatch} of {hashed}")
    print(f"under 5 x 5 (pdq() refuses, the reference gives zeros): {len(refused)}")
    for d, name, dq in sorted(worst, reverse=True)[:5]:
        print(f"  farthest: {name} {d} bits, quality {dq:+d}")
    # The gif crate refuses some GIFs Pillow writes and reads ("image truncated" on LZW
    # data of a flat image: image-rs/image-gif issue 208): reported, and the only ERROR
    # tolerated where the reference hashes.
    for error in errors:
        print(f"  ERROR where the reference hashes: {error}")
    unexpected = [e for e in errors if "decoding Gif: image truncated" not in e]
    # JPEGs too: the core decodes them to libjpeg-turbo's pixels (Pillow's decoder)
    inexact = any(distance["lossless"]) or any(distance["jpeg"]) or any(quality["lossless"]) or any(quality["jpeg"])
    if inexact or dihedral_mismatch or unexpected or timeout is None:
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    from PIL import Image

    {"golden": golden, "fixtures": fixtures, "jpegs": jpegs, "check": check}[sys.argv[1]](*sys.argv[2:])
