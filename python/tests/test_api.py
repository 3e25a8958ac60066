"""The module's behaviour outside the server: the types' forms, argument checks, refused
texts, pickling, and the GIL released on long texts."""

import pickle
import threading
import time

import pytest

import neardup

DEBIAN = (
    "Debian is a free operating system (OS) for your computer. An operating system is the "
    "set of basic programs and utilities that make your computer run."
)


def test_str_and_utf8_bytes_agree():
    for text in [DEBIAN, "Straße &amp; STRASSE — 東京", ""]:
        b = text.encode()
        assert neardup.simhash(text) == neardup.simhash(b)
        assert neardup.minhash(text, 28, 2) == neardup.minhash(b, 28, 2)
        assert neardup.bloomsig(text) == neardup.bloomsig(b)
        assert neardup.tokens(text) == neardup.tokens(b)
        assert neardup.canonical(text) == neardup.canonical(b)


@pytest.mark.parametrize(
    "text, error",
    [
        ("lone \ud800 surrogate", UnicodeEncodeError),
        ("\udfff", UnicodeEncodeError),
        (b"\xff\xfe", UnicodeDecodeError),
        (b"\xed\xa0\x80", UnicodeDecodeError),  # a surrogate encoded in UTF-8
        (b"\xc0\xaf", UnicodeDecodeError),  # overlong
        ("nul \x00 inside", ValueError),
        (b"\x00", ValueError),
    ],
)
def test_texts_the_server_refuses_are_refused(text, error):
    for f in [
        neardup.simhash,
        neardup.minhash,
        neardup.bloomsig,
        neardup.tokens,
        neardup.canonical,
        neardup.chunks,
        neardup.supershingles,
    ]:
        with pytest.raises(error):
            f(text)
    with pytest.raises(error):
        neardup.simhash_features([text], [1.0])


def test_not_a_text():
    with pytest.raises(TypeError):
        neardup.simhash(42)
    with pytest.raises(TypeError):
        neardup.simhash_features("abc", [1.0, 1.0, 1.0])


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: neardup.simhash("a", 0), "shingle must be between 1 and 16"),
        (lambda: neardup.simhash("a", 17), "shingle must be between 1 and 16"),
        (lambda: neardup.simhash("a", 1, 33), "ngram must be between 1 and 32"),
        (lambda: neardup.simhash("a", 1, -1), "ngram must be between 1 and 32"),
        (lambda: neardup.minhash("a", 0), "num_hashes must be between 1 and 1024"),
        (lambda: neardup.minhash("a", 1025), "num_hashes must be between 1 and 1024"),
        (lambda: neardup.bloomsig("a", 60), "bits must be a multiple of 8"),
        (lambda: neardup.bloomsig("a", 2048, 17), "hashes must be between 1 and 16"),
        (lambda: neardup.bloomsig("a", 2048, None, 1), "chunk size must be between"),
        (lambda: neardup.simhash_features(["a"], [1.0, 2.0]), "same length"),
        (lambda: neardup.simhash_features(["a"], [float("nan")]), "not a finite number"),
        (lambda: neardup.simhash_features(["a"], [1e39]), "not a finite number"),
        (lambda: neardup.minhash("a", 84).lsh_bands(bands=9, rows=10), "need 90 minvalues"),
        (lambda: neardup.minhash("a", 84).lsh_bands(1.5), "threshold"),
        (lambda: neardup.minhash("a", 84).jaccard(neardup.minhash("a", 28)), "differ in size"),
        (lambda: neardup.minhash("a", 20).supershingles(), "multiple of 14"),
        (lambda: neardup.lsh_params(0.8, -1), "num_hashes"),
        (lambda: neardup.bloom_match(neardup.bloomsig("a"), neardup.bloomsig("a", 64)), "different parameters"),
        (lambda: neardup.MinhashSketch.from_bytes(b"\x01"), "truncated"),
        (lambda: neardup.MinhashSketch.from_text("m2s8:00"), "expected 16 for 2 hashes"),
        (lambda: neardup.BloomSignature.from_bytes(b""), "shorter than the 10-byte header"),
        (lambda: neardup.hamming(b"12345", b"12345"), "none of simhash64"),
        (lambda: neardup.hamming(bytes(16), bytes(32)), "differ in width"),
        (lambda: neardup.hamming(2**64, 0), "64 bits"),
    ],
)
def test_invalid_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_lsh_bands_takes_a_threshold_or_bands_and_rows():
    sketch = neardup.minhash(DEBIAN)
    with pytest.raises(TypeError):
        sketch.lsh_bands()
    with pytest.raises(TypeError):
        sketch.lsh_bands(0.5, bands=2, rows=3)
    assert neardup.lsh_bands(sketch, bands=6, rows=14) == sketch.supershingles().lsh_bands()
    chosen = neardup.lsh_params(0.8, 84, 0.1, 0.9)
    assert (len(sketch.lsh_bands(0.8)), sketch.lsh_bands(0.8).rows) == chosen[:2]


def test_hamming():
    assert neardup.hamming(0, 2**64 - 1) == 64
    assert neardup.hamming(-1, 2**64 - 1) == 0  # a bigint's -1 is all ones
    assert neardup.hamming(0b1011, 0b0001) == 2
    a, b = bytes(range(32)), bytes(range(1, 33))
    assert neardup.hamming(a, b) == sum(bin(x ^ y).count("1") for x, y in zip(a, b))
    assert neardup.hamming(bytearray(a[:16]), b[:16]) == neardup.hamming(a[:16], b[:16])
    assert neardup.hamming((5).to_bytes(8, "big"), (6).to_bytes(8, "big")) == neardup.hamming(5, 6)
    with pytest.raises(TypeError):
        neardup.hamming(1, b"\x00" * 8)


def test_stored_forms_round_trip_and_pickle():
    sketch = neardup.minhash(DEBIAN, 84, 3)
    values = [
        sketch,
        neardup.minhash(DEBIAN, 100, 8, 5),
        sketch.supershingles(),
        sketch.lsh_bands(0.7),
        neardup.bloomsig(DEBIAN, 512, 3, 64),
    ]
    for v in values:
        cls = type(v)
        assert cls.from_bytes(bytes(v)) == v
        assert cls.from_text(str(v)) == v
        assert cls.from_text(f" {v} ") == v  # surrounding white space, as the server reads it
        assert eval(repr(v), vars(neardup)) == v
        assert pickle.loads(pickle.dumps(v)) == v
        assert hash(cls.from_bytes(v.to_bytes())) == hash(v)
        assert v != object() and not (v != v)
    assert len({sketch, neardup.MinhashSketch.from_bytes(bytes(sketch))}) == 1


def test_sketch_attributes():
    words = neardup.minhash(DEBIAN, 28, 3)
    assert (words.num_hashes, words.shingle, words.ngram, len(words)) == (28, 3, 0, 28)
    grams = neardup.minhash(DEBIAN, 28, 8, 5)
    assert (grams.shingle, grams.ngram) == (None, 5)
    assert bytes(words)[:4] == bytes([1, 3, 28, 0])
    assert len(words.values) == 28 and all(0 <= v < 2**32 for v in words.values)
    assert words.jaccard(words) == 1.0 == neardup.jaccard(words, words)
    vector = neardup.supershingles(DEBIAN)
    assert vector == neardup.minhash(DEBIAN).supershingles() and len(vector) == 6
    assert vector.b_similarity(vector) == 6 == neardup.b_similarity(vector, vector)
    assert vector.lsh_bands().shares_band(neardup.minhash(DEBIAN).lsh_bands(bands=6, rows=14))


def test_bloom_signature():
    small = neardup.bloomsig(DEBIAN[:60], 256, None, 32)
    big = neardup.bloomsig(DEBIAN, 256, None, 32)
    assert (big.bits, big.hashes, big.chunk_size) == (256, 6, 32)
    assert (small & big).bit_count <= small.bit_count <= (small | big).bit_count
    assert small.match_ratio(big) == neardup.bloom_match(small, big)
    assert big.similarity(small) == neardup.bloom_similarity(big, small)
    assert "".join(neardup.chunks(DEBIAN, 32)).replace(" ", "") == neardup.canonical(DEBIAN).replace(" ", "")


def test_simhash_features_of_tokens_is_simhash():
    tokens = neardup.tokens(DEBIAN)
    assert neardup.simhash_features(tokens, [1.0] * len(tokens)) == neardup.simhash(DEBIAN)
    assert neardup.simhash_features([], []) == 0


def test_long_texts_release_the_gil():
    """Another thread runs Python while a long text is hashed: the pipeline runs without
    the GIL. Held, the counting thread would not run at all until the call returned."""
    text = DEBIAN * 200_000  # 26 MB
    done = threading.Event()
    ticks = 0

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.05)  # the counter is running
    before = ticks
    start = time.perf_counter()
    neardup.simhash(text)
    took = time.perf_counter() - start
    during = ticks - before
    done.set()
    counter.join()
    assert took > 0.02, "the text is too short to tell"
    assert during > 1000, f"only {during} ticks in {took:.3f} s"
