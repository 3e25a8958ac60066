#!/usr/bin/env python3
"""The PDQ reference side of neardup's pdq() checks: Meta's C++ through the `pdqhash`
package, over pixels decoded by Pillow (`Image.open(f).convert("RGB")`, the pipeline the
package's users run; it does not apply EXIF orientation).

  pdq_reference.py golden          the table of core/tests/golden_pdq.rs
"""
import sys

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


if __name__ == "__main__":
    {"golden": golden}[sys.argv[1]](*sys.argv[2:])
