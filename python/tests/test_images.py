"""The PDQ functions equal the server's on every image fixture the SQL tests use (each
format, alpha, 16-bit, grayscale, animated GIF, the smallest sizes), and refuse what it
refuses, with the same message."""

from pathlib import Path

import psycopg
import pytest

import neardup

IMAGES = Path(__file__).resolve().parents[2] / "tests" / "images"
HASHED = ["animated.gif", "flat.png", "gray.png", "pattern.bmp", "pattern.gif", "pattern.jpg",
          "pattern.png", "pattern.tiff", "pattern.webp", "rgb16.png", "rgba.png", "tiny5.png"]


@pytest.mark.parametrize("name", HASHED)
def test_pdq_equals_the_server(conn, name):
    data = (IMAGES / name).read_bytes()
    digest, quality, dihedral, both_hash, both_quality = conn.execute(
        "SELECT pdq(%s)::bytea, pdq_quality(%s), pdq_dihedral(%s)::bytea[], p.hash::bytea, p.quality"
        " FROM pdq_with_quality(%s) p", (data, data, data, data)
    ).fetchone()
    assert neardup.pdq(data) == digest
    assert neardup.pdq_quality(data) == quality
    assert neardup.pdq_with_quality(data) == (digest, quality)
    assert (both_hash, both_quality) == (digest, quality)
    assert neardup.pdq_dihedral(data) == dihedral
    assert len(digest) == 32 and digest != bytes(32)


@pytest.mark.parametrize("data", [b"", b"not an image", (IMAGES / "pattern.png").read_bytes()[:200],
                                  (IMAGES / "tiny1.png").read_bytes()])
def test_pdq_refuses_what_the_server_refuses(conn, data):
    with pytest.raises(psycopg.Error) as server:
        conn.execute("SELECT pdq(%s)", (data,))
    with pytest.raises(ValueError) as here:
        neardup.pdq(data)
    assert str(here.value) == server.value.diag.message_primary
    with pytest.raises(ValueError) as both:
        neardup.pdq_with_quality(data)
    assert str(both.value) == str(here.value)
    assert neardup.pdq_quality(IMAGES.joinpath("tiny1.png").read_bytes()) == 0


def test_pdq_bounds_the_pixels():
    data = (IMAGES / "pattern.png").read_bytes()
    with pytest.raises(MemoryError, match="more than max_pixels"):
        neardup.pdq(data, max_pixels=100)
