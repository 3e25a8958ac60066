"""The server the bit-for-bit and adapter tests compare against: libpq's environment
(PGHOST, PGPORT, PGUSER), a database of their own with neardup created in it. Without a
server those tests are skipped, unless NEARDUP_REQUIRE_SERVER=1 (the integration check
sets it), where a missing server fails them."""

import os

import pytest

DATABASE = "neardup_python"


def _connect(dbname):
    import psycopg

    return psycopg.connect(dbname=dbname, autocommit=True)


@pytest.fixture(scope="session")
def dsn():
    try:
        import psycopg
    except ImportError as e:
        if os.environ.get("NEARDUP_REQUIRE_SERVER") == "1":
            raise
        pytest.skip(f"no psycopg to reach a server with: {e}")
    try:
        with _connect("postgres") as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
            admin.execute(f"CREATE DATABASE {DATABASE}")
        with _connect(DATABASE) as conn:
            conn.execute("CREATE EXTENSION neardup")
    except psycopg.OperationalError as e:
        if os.environ.get("NEARDUP_REQUIRE_SERVER") == "1":
            raise
        pytest.skip(f"no server to compare with: {e}")
    return DATABASE


@pytest.fixture(scope="session")
def conn(dsn):
    with _connect(dsn) as conn:
        yield conn
