"""neardup.sqlalchemy against the server: an ORM model over the Debian corpus whose
fingerprints are computed in Python, queried through the comparators; the answers equal
brute force in Python, and the plans use the hamming index."""

from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
from sqlalchemy.sql.expression import ClauseElement, Executable

import neardup
from neardup.psycopg import Hash256 as Code256
from neardup.sqlalchemy import Hash256, MinhashSketch, Simhash64, register

CORPUS = Path(__file__).resolve().parents[2] / "pg_test_data" / "debian_descriptions_sample.tsv"


class Base(DeclarativeBase):
    pass


class Page(Base):
    __tablename__ = "orm_pages"
    id: Mapped[int] = mapped_column(primary_key=True)
    body: Mapped[str]
    fp: Mapped[int] = mapped_column(Simhash64)
    code: Mapped[bytes] = mapped_column(Hash256)
    sketch: Mapped[neardup.MinhashSketch] = mapped_column(MinhashSketch)


def corpus():
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        ident, _package, body = line.split("\t")
        yield int(ident), body.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


@pytest.fixture(scope="module")
def engine(dsn):
    engine = create_engine(f"postgresql+psycopg:///{dsn}")
    register(engine)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    with Session(engine) as session:
        for i, body in corpus():
            fp = neardup.simhash(body)
            code = fp.to_bytes(8, "big") * 4  # a 256-bit code near when the texts are
            session.add(Page(id=i, body=body, fp=fp, code=code, sketch=neardup.minhash(body)))
        session.commit()
        session.execute(text("CREATE INDEX orm_pages_fp ON orm_pages USING hamming (fp)"))
        session.execute(text("CREATE INDEX orm_pages_code ON orm_pages USING hamming (code)"))
        session.execute(text("ANALYZE orm_pages"))
        session.commit()
    yield engine
    engine.dispose()


class Explain(Executable, ClauseElement):
    """EXPLAIN of a statement, its parameters bound as in the statement itself."""

    inherit_cache = False

    def __init__(self, statement):
        self.statement = statement


@compiles(Explain)
def _explain(element, compiler, **kw):
    return "EXPLAIN " + compiler.process(element.statement, **kw)


def plan(session, statement):
    return "\n".join(session.scalars(Explain(statement)))


def test_values_round_trip(engine):
    with Session(engine) as session:
        page = session.get(Page, 1)
        assert page.fp == neardup.simhash(page.body) and type(page.code) is Code256
        assert page.sketch == neardup.minhash(page.body)
        assert session.scalar(select(Page.fp).where(Page.id == 1)) == neardup.simhash(page.body)


def test_hamming_within_uses_the_index(engine):
    with Session(engine) as session:
        pages = {p.id: p for p in session.scalars(select(Page))}
        for probe in [1, 100, 5000]:
            q = pages[probe].fp
            statement = select(Page.id).where(Page.fp.hamming_within(q, 3))
            assert "orm_pages_fp" in plan(session, statement)
            found = sorted(session.scalars(statement))
            assert found == sorted(i for i, p in pages.items() if neardup.hamming(p.fp, q) <= 3)
            wide = select(Page.id).where(Page.code.hamming_within(pages[probe].code, 12))
            assert "orm_pages_code" in plan(session, wide)
            assert sorted(session.scalars(wide)) == sorted(
                i for i, p in pages.items() if neardup.hamming(p.code, pages[probe].code) <= 12
            )


def test_nearest_uses_the_index(engine):
    with Session(engine) as session:
        q = neardup.simhash("a library for the manipulation of images")
        statement = select(Page.id, Page.fp.nearest(q)).order_by(Page.fp.nearest(q)).limit(5)
        assert "orm_pages_fp" in plan(session, statement)
        distances = [d for _, d in session.execute(statement)]
        everything = sorted(neardup.hamming(fp, q) for fp in session.scalars(select(Page.fp)))
        assert distances == everything[:5]


def test_hamming_and_jaccard_comparators(engine):
    with Session(engine) as session:
        q = session.get(Page, 2)
        rows = session.execute(
            select(Page.id, Page.fp.hamming(q.fp), Page.sketch.jaccard(q.sketch)).where(Page.id < 50)
        ).all()
        for i, bits, resemblance in rows:
            page = session.get(Page, i)
            assert bits == neardup.hamming(page.fp, q.fp)
            assert resemblance == page.sketch.jaccard(q.sketch)
