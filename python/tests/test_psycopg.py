"""neardup.psycopg against the server: every type loads in text and binary format as the
module's classes, dumps back as the SQL type (the server reads exactly what was sent), and
so do arrays of them."""

import psycopg
import pytest

import neardup
from neardup.psycopg import Hash128, Hash256, Simhash, register

TEXTS = [
    "Debian is a free operating system (OS) for your computer.",
    "Debian is a free operating system for your computer!",
    "PostgreSQL is a powerful, open source object-relational database system.",
    "",
]
PDQ = "f8f8f0cee0f4a84f06370a22038f63f0b36e2ed596621e1d33e6b39c4e9c9b22"


@pytest.fixture
def reg(dsn):
    with psycopg.connect(dbname=dsn, autocommit=True) as conn:
        register(conn)
        yield conn


def expected_values(text):
    """(SQL expression over %s, the Python value) for each type."""
    sketch = neardup.minhash(text, 28, 2)
    return [
        ("simhash(%s)", neardup.simhash(text)),
        ("minhash(%s, 28, 2)", sketch),
        ("supershingles(minhash(%s, 28, 2))", sketch.supershingles()),
        ("lsh_bands(minhash(%s, 28, 2), 0.5::float8)", sketch.lsh_bands(0.5)),
        ("bloomsig(%s, 256)", neardup.bloomsig(text, 256)),
    ]


@pytest.mark.parametrize("binary", [False, True])
def test_values_load_as_the_modules_classes(reg, binary):
    for text in TEXTS:
        for expr, value in expected_values(text):
            got = reg.cursor(binary=binary).execute(f"SELECT {expr}", (text,)).fetchone()[0]
            assert got == value and type(got) is (Simhash if isinstance(value, int) else type(value)), expr
    cur = reg.cursor(binary=binary)
    got = cur.execute(f"SELECT '{PDQ}'::hash256, '{PDQ[:32]}'::hash128").fetchone()
    assert got == (Hash256.fromhex(PDQ), Hash128.fromhex(PDQ[:32]))
    assert type(got[0]) is Hash256 and type(got[1]) is Hash128


@pytest.mark.parametrize("fmt", ["%t", "%b"])
def test_values_dump_as_the_sql_types(reg, fmt):
    for text in TEXTS:
        for expr, value in expected_values(text):
            sent = Simhash(value) if isinstance(value, int) else value
            # the server compares what it received with what it computes, and prints it
            same, printed = reg.execute(
                f"SELECT {fmt}::text = ({expr})::text, ({fmt})::text", (sent, text, sent)
            ).fetchone()
            assert same and printed == (f"{value:016x}" if isinstance(value, int) else str(value)), expr
    got = reg.execute(
        f"SELECT pg_typeof({fmt})::text, ({fmt})::text, hamming({fmt}, {fmt})",
        (Hash256.fromhex(PDQ), Hash256.fromhex(PDQ), Hash256.fromhex(PDQ), Hash256(bytes(32))),
    ).fetchone()
    assert got == ("hash256", PDQ, neardup.hamming(bytes.fromhex(PDQ), bytes(32)))
    got = reg.execute(f"SELECT pg_typeof({fmt})::text", (Hash128(bytes(16)),)).fetchone()
    assert got == ("hash128",)


@pytest.mark.parametrize("binary", [False, True])
def test_arrays(reg, binary):
    fps = [Simhash(neardup.simhash(t)) for t in TEXTS]
    sketches = [neardup.minhash(t) for t in TEXTS]
    cur = reg.cursor(binary=binary)
    fmt = "%b" if binary else "%t"
    got = cur.execute(f"SELECT {fmt}, {fmt}, pg_typeof({fmt})::text", (fps, sketches, fps)).fetchone()
    assert got == (fps, sketches, "simhash64[]")
    got = cur.execute("SELECT array_agg(simhash(t)), array_agg(minhash(t)) FROM unnest(%s::text[]) t", (TEXTS,))
    assert got.fetchone() == (fps, sketches)
    codes = [Hash256.fromhex(PDQ), Hash256(bytes(32))]
    assert cur.execute(f"SELECT {fmt}", (codes,)).fetchone()[0] == codes


def test_copy_binary(reg):
    reg.execute("CREATE TEMP TABLE pages (body text, fp simhash64, sketch minhash_sketch, code hash256)")
    rows = [(t, Simhash(neardup.simhash(t)), neardup.minhash(t), Hash256(bytes([i] * 32))) for i, t in enumerate(TEXTS)]
    with reg.cursor().copy("COPY pages FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["text", "simhash64", "minhash_sketch", "hash256"])
        for row in rows:
            copy.write_row(row)
    assert reg.execute("SELECT count(*) FROM pages WHERE fp = simhash(body) AND sketch::text = minhash(body)::text").fetchone() == (len(TEXTS),)
    assert reg.execute("SELECT body, fp, sketch, code FROM pages ORDER BY code").fetchall() == rows


def test_simhash_and_codes_check_their_range():
    with pytest.raises(ValueError):
        Simhash(-1)
    with pytest.raises(ValueError):
        Simhash(1 << 64)
    with pytest.raises(ValueError):
        Hash256(bytes(31))
    assert Simhash(2**64 - 1) == 2**64 - 1 and repr(Simhash(255)) == "Simhash(0x00000000000000ff)"


def test_register_without_the_extension(reg):
    reg.execute("CREATE SCHEMA IF NOT EXISTS elsewhere")
    with reg.cursor() as cur:
        cur.execute("SET search_path = elsewhere")
        with pytest.raises(psycopg.ProgrammingError, match="neardup extension"):
            register(cur)
        register(cur, schema="public")  # named, the types are found off the search_path
        assert cur.execute("SELECT public.simhash('a')").fetchone() == (neardup.simhash("a"),)
