"""JPEGs of typical web size and the reference's rate over them, for bench/pdq.sh.

  generate N OUT    OUT/NNNNN.jpg: N JPEGs of 1 to 2 megapixels (100 to 300 KB), each a
                    random crop of one of scikit-image's sample pictures (the benches'),
                    scaled to 1000 to 1600 pixels wide, turned by one of PDQ's 8 rotations
                    and mirrors, at JPEG quality 70 to 92
  reference OUT     the reference over them on one core, decode included (Pillow, then
                    `pdqhash`, Meta's C++): prints images/s; OUT/reference.tsv (name, hash)
"""
import io
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from pdq_reference import TRANSFORMS, hex_of  # noqa: E402


def generate(n, out):
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(40)
    samples = []
    for name in ["astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "retina",
                 "cat", "colorwheel", "camera", "moon", "brick", "gravel"]:
        try:
            image = np.asarray(getattr(data, name)())
        except Exception:  # an image scikit-image would have to download
            continue
        if image.ndim == 2:
            image = np.stack([image] * 3, axis=-1)
        samples.append(np.ascontiguousarray(image[..., :3].astype(np.uint8)))
    os.makedirs(out, exist_ok=True)
    for i in range(int(n)):
        image = samples[rng.integers(0, len(samples))]
        h, w = image.shape[:2]
        ch, cw = rng.integers(h // 2, h + 1), rng.integers(w // 2, w + 1)
        top, left = rng.integers(0, h - ch + 1), rng.integers(0, w - cw + 1)
        crop = np.ascontiguousarray(TRANSFORMS[rng.integers(0, 8)](image[top:top + ch, left:left + cw]))
        width = int(rng.integers(1000, 1601))
        height = max(1, int(width * crop.shape[0] / crop.shape[1]))
        pil = Image.fromarray(crop).resize((width, min(height, 1600)), Image.BICUBIC)
        pil.save(os.path.join(out, f"{i:05d}.jpg"), "JPEG", quality=int(rng.integers(70, 93)))


def reference(out):
    import pdqhash
    from PIL import Image

    names = sorted(f for f in os.listdir(out) if f.endswith(".jpg"))
    blobs = [open(os.path.join(out, f), "rb").read() for f in names]
    hashes = []
    start = time.perf_counter()
    for blob in blobs:
        pixels = np.asarray(Image.open(io.BytesIO(blob)).convert("RGB"))
        hashes.append(hex_of(pdqhash.compute(pixels)[0]))
    seconds = time.perf_counter() - start
    with open(os.path.join(out, "reference.tsv"), "w") as f:
        for name, h in zip(names, hashes):
            f.write(f"{name}\t{h}\n")
    print(f"{len(blobs) / seconds:.1f}")


if __name__ == "__main__":
    {"generate": generate, "reference": reference}[sys.argv[1]](*sys.argv[2:])
