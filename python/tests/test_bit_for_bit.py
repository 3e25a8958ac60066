"""Every signature of about 20,000 texts computed in Python and by the server, compared in
the server's binary send form (what psycopg's binary format carries) and in its text form,
for every parameter the SQL functions take: each value of each parameter, around the
defaults, and every combination where there are few. Texts: the Debian corpus sample
(pg_test_data/), seeded random Unicode (every plane, case-folding specials, combining marks,
HTML markup and entities), the empty text, one word, and a 10 MB text. Errors: the same
arguments are refused by both, with the same message, and so are the texts the server's
text type cannot hold."""

import random
from pathlib import Path

import psycopg
import pytest

import neardup

CORPUS = Path(__file__).resolve().parents[2] / "pg_test_data" / "debian_descriptions_sample.tsv"
BIG_ID = 1_000_000
RANDOM_TEXTS = 9_600

LETTERS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "àéîõüßÆøÿĀŒŸ",
    "".join(map(chr, range(0x391, 0x3CA))),  # Greek, final sigma included
    "".join(map(chr, range(0x410, 0x450))),  # Cyrillic
    "".join(map(chr, range(0x4E00, 0x4E80))),  # CJK
    "".join(map(chr, range(0xAC00, 0xAC40))),  # Hangul
    "ſﬀﬁﬃİıΣςẞǅǈǋᾈᾼῼ",  # case folding that changes length or is special
    "0123456789٠١٢٣४५६",  # digits of several scripts
]
COMBINING = "".join(map(chr, range(0x300, 0x370)))
SPACES = [" ", " ", " ", "\t", "\n", "\r\n", "\u00a0", "\u2003", "\u3000", "\u200b"]
MARKUP = [
    "<p>", "</p>", "<br/>", "<a href='x.html'>", "</a>", "<script>var x = 1;</script>",
    "<style>p { color: red }</style>", "<!-- a comment -->", "&amp;", "&lt;", "&gt;",
    "&nbsp;", "&eacute;", "&#x41;", "&#65;", "&#128512;", "&bogus;", "& ", "<", ">",
    "<![CDATA[x]]>", "<title>T</title>", "https://www.debian.org/doc", "e-mail@example.org",
]
PUNCTUATION = ".,;:!?-—–()[]{}'\"/\\|*+=_~^%$#@"


def any_char(rng):
    """A code point of any plane that a PostgreSQL text can hold: no surrogate, no NUL."""
    while True:
        c = rng.randrange(1, 0x110000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def random_text(rng):
    length = rng.choice([0, 1, 2, 5, 20, 80, 300, 1000, 3000])
    pieces, size = [], 0
    while size < length:
        kind = rng.random()
        if kind < 0.55:
            alphabet = rng.choice(LETTERS)
            piece = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
            if rng.random() < 0.1:
                piece += rng.choice(COMBINING)
        elif kind < 0.8:
            piece = rng.choice(SPACES)
        elif kind < 0.88:
            piece = rng.choice(MARKUP)
        elif kind < 0.95:
            piece = rng.choice(PUNCTUATION)
        else:
            piece = "".join(any_char(rng) for _ in range(rng.randint(1, 6)))
        pieces.append(piece)
        size += len(piece)
    return "".join(pieces)


EDGE_TEXTS = [
    "", "word", "a", "A", " ", "\n\n\t ", "&amp;", "<p></p>", "Straße", "STRASSE",
    "東京", "😀", "a" * 100_000, "word " * 10_000,
]


@pytest.fixture(scope="module")
def texts(conn):
    """{id: text} as the server stores them: the corpus is loaded with COPY and read back,
    the generated texts are sent with binary COPY."""
    conn.execute("CREATE TABLE texts (id int PRIMARY KEY, body text NOT NULL)")
    with conn.cursor() as cur:
        with cur.copy("COPY texts FROM STDIN") as copy:
            for line in CORPUS.read_text(encoding="utf-8").splitlines():
                ident, _package, body = line.split("\t")
                copy.write(f"{ident}\t{body}\n")
        rng = random.Random(42)
        generated = EDGE_TEXTS + [random_text(rng) for _ in range(RANDOM_TEXTS)]
        with cur.copy("COPY texts FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "text"])
            for i, text in enumerate(generated):
                copy.write_row((500_000 + i, text))
        cur.execute("SELECT string_agg(body, E'\\n' ORDER BY id) FROM texts WHERE id < 500000")
        corpus = cur.fetchone()[0]
        big = (corpus * (10_000_000 // len(corpus) + 1))[:10_000_000]
        cur.execute("INSERT INTO texts VALUES (%s, %s)", (BIG_ID, big))
        cur.execute("SELECT id, body FROM texts ORDER BY id")
        rows = dict(cur.fetchall())
    assert len(rows) >= 20_000
    assert len(rows[BIG_ID].encode()) >= 10_000_000
    return rows


def server(conn, expr, params=(), ids=None):
    """[(id, value)] of `expr` over the texts (all, or `ids`), in binary format: the send
    form of the extension's types arrives as bytes."""
    where, args = "", list(params)
    if ids is not None:
        where, args = "WHERE id = ANY(%s)", args + [list(ids)]
    with conn.cursor(binary=True) as cur:
        cur.execute(f"SELECT id, {expr} FROM texts {where} ORDER BY id", args)
        return cur.fetchall()


def assert_same(expected, got, what):
    assert len(expected) == len(got), what
    for (i, e), g in zip(got, expected):
        assert e == g, f"{what}: text {i} differs: server {e!r}, Python {g!r}"


def all_but_big(texts):
    return [i for i in sorted(texts) if i != BIG_ID]


@pytest.fixture(scope="module")
def subset(texts):
    """Every 10th text (2,000), for the sweeps that compute a signature per parameter value."""
    return all_but_big(texts)[::10]


def be64(v):
    return v.to_bytes(8, "big")


def test_simhash_every_parameter(conn, texts, subset):
    ids = subset
    for fold in (True, False):
        for shingle in range(1, 17):
            got = server(conn, "simhash(body, %s, 0, %s)", (shingle, fold), ids)
            assert_same([be64(neardup.simhash(texts[i], shingle, 0, fold)) for i in ids], got, f"simhash shingle {shingle}")
        for ngram in range(1, 33):
            got = server(conn, "simhash(body, 1, %s, %s)", (ngram, fold), ids)
            assert_same([be64(neardup.simhash(texts[i], 1, ngram, fold)) for i in ids], got, f"simhash ngram {ngram}")


def test_simhash_defaults_and_text_form(conn, texts):
    ids = sorted(texts)
    assert_same([be64(neardup.simhash(texts[i])) for i in ids], server(conn, "simhash(body)"), "simhash()")
    got = server(conn, "simhash(body)::text")
    assert_same([f"{neardup.simhash(texts[i]):016x}" for i in ids], got, "simhash text form")
    # with n-grams the 10 MB text goes through the character path too
    got = server(conn, "simhash(body, 3, 4, false)", ids=[BIG_ID])
    assert got == [(BIG_ID, be64(neardup.simhash(texts[BIG_ID], 3, 4, False)))]


def test_simhash_features(conn, texts, subset):
    rng = random.Random(7)
    with conn.cursor(binary=True) as cur:
        for i in subset:
            features = neardup.tokens(texts[i])[:200] + ["", "Straße"]
            weights = [rng.choice([1.0, 0.5, -2.25, 0.0, 1e-3, 3.4e38, rng.uniform(-100, 100)]) for _ in features]
            cur.execute("SELECT simhash(%s::text[], %s::real[])", (features, weights))
            assert cur.fetchone()[0] == be64(neardup.simhash_features(features, weights)), i


def sketch_column(texts, ids, *args):
    return [bytes(neardup.minhash(texts[i], *args)) for i in ids]


def test_minhash_defaults_all_texts(conn, texts):
    ids = sorted(texts)
    sketches = {i: neardup.minhash(texts[i]) for i in ids}
    assert_same([bytes(sketches[i]) for i in ids], server(conn, "minhash(body)"), "minhash()")
    assert_same([str(sketches[i]) for i in ids], server(conn, "minhash(body)::text"), "minhash text form")
    assert_same([bytes(sketches[i].supershingles()) for i in ids], server(conn, "supershingles(body)"), "supershingles(text)")
    got = server(conn, "supershingles(body)::text")
    assert_same([str(neardup.supershingles(texts[i])) for i in ids], got, "supershingles text form")


def test_minhash_every_parameter(conn, texts, subset):
    for n in [1, 2, 3, 7, 13, 14, 15, 27, 28, 29, 42, 84, 85, 100, 127, 128, 255, 256, 512, 700, 1000, 1023, 1024]:
        assert_same(sketch_column(texts, subset, n, 8), server(conn, "minhash(body, %s, 8)", (n,), subset), f"minhash {n}")
        if n % 14 == 0 and n >= 28:
            got = server(conn, "supershingles(minhash(body, %s, 8))", (n,), subset)
            expected = [bytes(neardup.minhash(texts[i], n, 8).supershingles()) for i in subset]
            assert_same(expected, got, f"supershingles of {n}")
    for shingle in range(1, 17):
        got = server(conn, "minhash(body, 84, %s)", (shingle,), subset)
        assert_same(sketch_column(texts, subset, 84, shingle), got, f"minhash shingle {shingle}")
    for ngram in range(0, 33):
        got = server(conn, "minhash(body, 84, 8, %s)", (ngram,), subset)
        assert_same(sketch_column(texts, subset, 84, 8, ngram), got, f"minhash ngram {ngram}")
    # with n-grams the shingle argument is ignored, by both
    got = server(conn, "minhash(body, 84, 3, 5)", ids=subset)
    assert_same(sketch_column(texts, subset, 84, 8, 5), got, "minhash ngram, shingle ignored")


def test_minhash_every_num_hashes(conn, texts):
    ids = [1, 2, 500_012, 500_100]
    with conn.cursor(binary=True) as cur:
        cur.execute(
            "SELECT id, n, minhash(body, n, 8) FROM texts, generate_series(1, 1024) n "
            "WHERE id = ANY(%s) ORDER BY id, n",
            (ids,),
        )
        for i, n, sketch in cur:
            assert sketch == bytes(neardup.minhash(texts[i], n, 8)), (i, n)


def test_minhash_big_text(conn, texts):
    for args in [(), (84, 3), (128, 8, 6)]:
        placeholders = "".join(", %s" for _ in args)
        got = server(conn, f"minhash(body{placeholders})", args, [BIG_ID])
        assert got == [(BIG_ID, bytes(neardup.minhash(texts[BIG_ID], *args)))], args


def test_jaccard_and_b_similarity(conn, texts, subset):
    pairs = list(zip(subset, subset[1:]))
    with conn.cursor(binary=True) as cur:
        for args in [(84, 8), (84, 2), (28, 1, 3)]:
            placeholders = ", ".join("%s" for _ in args)
            cur.execute(
                f"SELECT a.id, jaccard(minhash(a.body, {placeholders}), minhash(b.body, {placeholders})),"
                f" b_similarity(supershingles(minhash(a.body, {placeholders})), supershingles(minhash(b.body, {placeholders})))"
                " FROM unnest(%s::int[], %s::int[]) p(x, y) JOIN texts a ON a.id = x JOIN texts b ON b.id = y ORDER BY a.id",
                args * 4 + ([x for x, _ in pairs], [y for _, y in pairs]),
            )
            for (x, y), (i, j, b) in zip(pairs, cur.fetchall()):
                sx, sy = neardup.minhash(texts[x], *args), neardup.minhash(texts[y], *args)
                assert (i, j, b) == (x, sx.jaccard(sy), sx.supershingles().b_similarity(sy.supershingles())), args


def test_lsh_bands_thresholds(conn, texts, subset):
    ids = subset[:200]
    thresholds = [0.01, 0.05, 0.1, 0.2, 0.3, 1 / 3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0]
    for n in [1, 14, 84, 128, 256]:
        for t in thresholds:
            got = server(conn, "lsh_bands(minhash(body, %s, 8), %s::float8)", (n, t), ids)
            expected = [bytes(neardup.minhash(texts[i], n, 8).lsh_bands(t)) for i in ids]
            assert_same(expected, got, f"lsh_bands {n} at {t}")
    got = server(conn, "lsh_bands(minhash(body), 0.8::float8)::text", ids=ids)
    assert_same([str(neardup.minhash(texts[i]).lsh_bands(0.8)) for i in ids], got, "lsh_bands text form")
    got = server(conn, "supershingles(body)::lsh_bands", ids=ids)
    assert_same([bytes(neardup.supershingles(texts[i]).lsh_bands()) for i in ids], got, "supershingles::lsh_bands")


def test_lsh_bands_every_banding(conn, texts):
    ids = [3, 500_200]
    with conn.cursor(binary=True) as cur:
        cur.execute(
            "SELECT id, b, r, lsh_bands(minhash(body), b, r) FROM texts, generate_series(1, 84) b,"
            " generate_series(1, 84) r WHERE b * r <= 84 AND id = ANY(%s) ORDER BY id, b, r",
            (ids,),
        )
        rows = cur.fetchall()
    assert len(rows) > 2 * 300
    for i, b, r, keys in rows:
        assert keys == bytes(neardup.minhash(texts[i]).lsh_bands(bands=b, rows=r)), (i, b, r)
    shares = server(conn, "lsh_bands(minhash(body), 0.5::float8) && lsh_bands(minhash('Debian GNU/Linux'), 0.5::float8)", ids=ids)
    q = neardup.minhash("Debian GNU/Linux").lsh_bands(0.5)
    assert shares == [(i, neardup.minhash(texts[i]).lsh_bands(0.5).shares_band(q)) for i in ids]


def test_lsh_params(conn):
    cases = [
        (t, n, fp, fn)
        for t in [0.01, 0.1, 0.25, 0.5, 0.8, 0.9, 1.0]
        for n in [1, 2, 16, 84, 128, 500]
        for fp, fn in [(0.5, 0.5), (0.1, 0.9), (1.0, 0.0), (0.0, 2.0)]
    ]
    with conn.cursor(binary=True) as cur:
        for case in cases:
            cur.execute("SELECT * FROM lsh_params(%s::float8, %s, %s::float8, %s::float8)", case)
            assert cur.fetchone() == neardup.lsh_params(*case), case
        cur.execute("SELECT * FROM lsh_params(0.7)")
        assert cur.fetchone() == neardup.lsh_params(0.7)


def test_bloomsig_defaults_all_texts(conn, texts):
    ids = sorted(texts)
    sigs = {i: neardup.bloomsig(texts[i]) for i in ids}
    assert_same([bytes(sigs[i]) for i in ids], server(conn, "bloomsig(body)"), "bloomsig()")
    assert_same([str(sigs[i]) for i in ids], server(conn, "bloomsig(body)::text"), "bloomsig text form")
    assert_same([sigs[i].bit_count for i in ids], server(conn, "bit_count(bloomsig(body))"), "bit_count")


def test_bloomsig_every_parameter(conn, texts, subset):
    for hashes in [None, *range(1, 17)]:
        got = server(conn, "bloomsig(body, 2048, %s)", (hashes,), subset)
        assert_same([bytes(neardup.bloomsig(texts[i], 2048, hashes)) for i in subset], got, f"bloomsig hashes {hashes}")
    for chunk_size in [16, 17, 31, 32, 64, 100, 128, 255, 256, 257, 512, 1024, 4096, 16384, 65535, 65536]:
        got = server(conn, "bloomsig(body, 2048, NULL, %s)", (chunk_size,), subset)
        assert_same([bytes(neardup.bloomsig(texts[i], 2048, None, chunk_size)) for i in subset], got, f"chunk {chunk_size}")
    for bits in [64, 72, 128, 1000, 4096, 65536]:
        got = server(conn, "bloomsig(body, %s, 3, 64)", (bits,), subset)
        assert_same([bytes(neardup.bloomsig(texts[i], bits, 3, 64)) for i in subset], got, f"bits {bits}")


def test_bloomsig_every_bits_and_chunk_size(conn, texts):
    """Each multiple of 8 from 64 to 65536 bits, and each chunk size from 16 to 1024, of
    one text (one query each)."""
    i = 42
    with conn.cursor(binary=True) as cur:
        cur.execute("SELECT m, bloomsig(body, m, 5, 48) FROM texts, generate_series(64, 65536, 8) m WHERE id = %s ORDER BY m", (i,))
        for m, sig in cur:
            assert sig == bytes(neardup.bloomsig(texts[i], m, 5, 48)), m
        cur.execute("SELECT c, bloomsig(body, 512, NULL, c) FROM texts, generate_series(16, 1024) c WHERE id = %s ORDER BY c", (i,))
        for c, sig in cur:
            assert sig == bytes(neardup.bloomsig(texts[i], 512, None, c)), c


def test_bloomsig_big_text(conn, texts):
    got = server(conn, "bloomsig(body, 65536, 4, 1024)", ids=[BIG_ID])
    assert got == [(BIG_ID, bytes(neardup.bloomsig(texts[BIG_ID], 65536, 4, 1024)))]


def test_bloom_comparisons(conn, texts, subset):
    pairs = list(zip(subset, subset[1:]))
    with conn.cursor(binary=True) as cur:
        cur.execute(
            "SELECT bloom_match(bloomsig(a.body, 512, NULL, 32), bloomsig(b.body, 512, NULL, 32)),"
            " bloom_similarity(bloomsig(a.body, 512, NULL, 32), bloomsig(b.body, 512, NULL, 32)),"
            " bloomsig(a.body, 512, NULL, 32) & bloomsig(b.body, 512, NULL, 32),"
            " bloomsig(a.body, 512, NULL, 32) | bloomsig(b.body, 512, NULL, 32)"
            " FROM unnest(%s::int[], %s::int[]) WITH ORDINALITY p(x, y, o)"
            " JOIN texts a ON a.id = x JOIN texts b ON b.id = y ORDER BY o",
            ([x for x, _ in pairs], [y for _, y in pairs]),
        )
        for (x, y), row in zip(pairs, cur.fetchall()):
            a, b = neardup.bloomsig(texts[x], 512, None, 32), neardup.bloomsig(texts[y], 512, None, 32)
            assert row == (neardup.bloom_match(a, b), neardup.bloom_similarity(a, b), bytes(a & b), bytes(a | b)), (x, y)


def test_canonical_tokens_and_chunks(conn, texts, subset):
    ids = sorted(texts)
    for fold in (True, False):
        got = server(conn, "neardup_canonical(body, %s)", (fold,))
        assert_same([neardup.canonical(texts[i], fold) for i in ids], got, f"canonical {fold}")
        got = server(conn, "neardup_tokens(body, %s)", (fold,), subset)
        assert_same([neardup.tokens(texts[i], fold) for i in subset], got, f"tokens {fold}")
    for size in [16, 33, 64, 256, 4096, 65536]:
        got = server(conn, "ARRAY(SELECT neardup_chunks(body, %s))", (size,), subset)
        assert_same([neardup.chunks(texts[i], size) for i in subset], got, f"chunks {size}")


def test_hamming(conn):
    rng = random.Random(3)
    codes = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(2000)] + [(0, 2**64 - 1), (5, 5)]
    with conn.cursor(binary=True) as cur:
        cur.execute(
            "SELECT hamming(x::simhash64, y::simhash64) FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY u(x, y, o) ORDER BY o",
            ([f"{a:016x}" for a, _ in codes], [f"{b:016x}" for _, b in codes]),
        )
        assert [r[0] for r in cur] == [neardup.hamming(a, b) for a, b in codes]
        for sql_type, width in [("hash128", 16), ("hash256", 32)]:
            wide = [(rng.randbytes(width), rng.randbytes(width)) for _ in range(2000)]
            cur.execute(
                f"SELECT hamming(x::{sql_type}, y::{sql_type}), x::{sql_type} FROM unnest(%s::bytea[], %s::bytea[])"
                " WITH ORDINALITY u(x, y, o) ORDER BY o",
                ([a for a, _ in wide], [b for _, b in wide]),
            )
            rows = cur.fetchall()
            assert [r[0] for r in rows] == [neardup.hamming(a, b) for a, b in wide]
            assert [r[1] for r in rows] == [a for a, _ in wide]  # the binary form is the bytes


INVALID = [
    ("simhash('a', 0)", lambda: neardup.simhash("a", 0)),
    ("simhash('a', 17)", lambda: neardup.simhash("a", 17)),
    ("simhash('a', 1, 33)", lambda: neardup.simhash("a", 1, 33)),
    ("simhash('a', 1, -1)", lambda: neardup.simhash("a", 1, -1)),
    ("minhash('a', 0, 8)", lambda: neardup.minhash("a", 0)),
    ("minhash('a', 1025, 8)", lambda: neardup.minhash("a", 1025)),
    ("minhash('a', 84, 0)", lambda: neardup.minhash("a", 84, 0)),
    ("minhash('a', 84, 8, 40)", lambda: neardup.minhash("a", 84, 8, 40)),
    ("bloomsig('a', 60)", lambda: neardup.bloomsig("a", 60)),
    ("bloomsig('a', 65544)", lambda: neardup.bloomsig("a", 65544)),
    ("bloomsig('a', 2048, 0)", lambda: neardup.bloomsig("a", 2048, 0)),
    ("bloomsig('a', 2048, NULL, 15)", lambda: neardup.bloomsig("a", 2048, None, 15)),
    ("simhash(ARRAY['a'], ARRAY[1, 2]::real[])", lambda: neardup.simhash_features(["a"], [1.0, 2.0])),
    ("simhash(ARRAY['a'], ARRAY['NaN']::real[])", lambda: neardup.simhash_features(["a"], [float("nan")])),
    ("simhash(ARRAY['a'], ARRAY['Infinity']::real[])", lambda: neardup.simhash_features(["a"], [float("inf")])),
    ("lsh_bands(minhash('a'), 9, 10)", lambda: neardup.minhash("a").lsh_bands(bands=9, rows=10)),
    ("lsh_bands(minhash('a'), 0, 10)", lambda: neardup.minhash("a").lsh_bands(bands=0, rows=10)),
    ("lsh_bands(minhash('a'), 1.5::float8)", lambda: neardup.minhash("a").lsh_bands(1.5)),
    ("lsh_bands(minhash('a'), 0::float8)", lambda: neardup.minhash("a").lsh_bands(0.0)),
    ("lsh_params(0.5, 0)", lambda: neardup.lsh_params(0.5, 0)),
    ("lsh_params(0.5, 84, -1, 1)", lambda: neardup.lsh_params(0.5, 84, -1, 1)),
    ("jaccard(minhash('a'), minhash('a', 28, 8))", lambda: neardup.jaccard(neardup.minhash("a"), neardup.minhash("a", 28))),
    ("jaccard(minhash('a'), minhash('a', 84, 3))", lambda: neardup.jaccard(neardup.minhash("a"), neardup.minhash("a", 84, 3))),
    ("jaccard(minhash('a'), minhash('a', 84, 8, 3))", lambda: neardup.jaccard(neardup.minhash("a"), neardup.minhash("a", 84, 8, 3))),
    ("supershingles(minhash('a', 20, 8))", lambda: neardup.minhash("a", 20).supershingles()),
    ("b_similarity(supershingles(minhash('a', 28, 8)), supershingles('a'))",
     lambda: neardup.b_similarity(neardup.minhash("a", 28).supershingles(), neardup.supershingles("a"))),
    ("bloom_match(bloomsig('a'), bloomsig('a', 64))", lambda: neardup.bloom_match(neardup.bloomsig("a"), neardup.bloomsig("a", 64))),
    ("bloom_similarity(bloomsig('a'), bloomsig('a', 2048, 3))",
     lambda: neardup.bloom_similarity(neardup.bloomsig("a"), neardup.bloomsig("a", 2048, 3))),
    ("'m2s8:00'::minhash_sketch", lambda: neardup.MinhashSketch.from_text("m2s8:00")),
    ("'bloom:m=64:k=6:chunk=256:00'::bloom_signature", lambda: neardup.BloomSignature.from_text("bloom:m=64:k=6:chunk=256:00")),
    ("'1:2'::supershingle_vector", lambda: neardup.SupershingleVector.from_text("1:2")),
]


@pytest.mark.parametrize("sql, call", INVALID, ids=[s for s, _ in INVALID])
def test_same_arguments_refused_with_the_same_message(conn, sql, call):
    with pytest.raises(psycopg.errors.DataError) as server_error:
        conn.execute(f"SELECT {sql}")
    with pytest.raises(ValueError) as python_error:
        call()
    message = server_error.value.diag.message_primary
    assert str(python_error.value) in message, (message, str(python_error.value))


@pytest.mark.parametrize(
    "raw, python_error",
    [(b"\xff", UnicodeDecodeError), (b"a\xed\xa0\x80b", UnicodeDecodeError), (b"\xc0\xaf", UnicodeDecodeError),
     (b"\xf4\x90\x80\x80", UnicodeDecodeError), (b"a\x00b", ValueError)],
)
def test_texts_the_server_cannot_hold_are_refused(conn, raw, python_error):
    with pytest.raises(psycopg.errors.CharacterNotInRepertoire):
        conn.execute("SELECT simhash(convert_from(%s::bytea, 'UTF8'))", (raw,))
    with pytest.raises(python_error):
        neardup.simhash(raw)
    if python_error is ValueError:
        return
    # a lone surrogate is what such bytes decode to with surrogateescape or surrogatepass
    with pytest.raises(UnicodeEncodeError):
        neardup.simhash(raw.decode("utf-8", "surrogatepass" if b"\xed" in raw else "surrogateescape"))
