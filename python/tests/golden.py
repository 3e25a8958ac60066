"""Reading the core's golden files (tests/golden_*.tsv at the repository's root)."""

from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "tests"


def unescape(s: str) -> str:
    """Undoes the files' ``\\n``, ``\\t`` and ``\\\\`` escapes (others are malformed)."""
    out, chars = [], iter(s)
    for c in chars:
        if c == "\\":
            c = {"n": "\n", "t": "\t", "\\": "\\"}[next(chars)]
        out.append(c)
    return "".join(out)


def rows(name: str, columns: int) -> list[list[str]]:
    """The data rows of a golden file, split into their tab-separated columns."""
    out = []
    for line in (GOLDEN_DIR / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line:
            continue
        cols = line.split("\t")
        assert len(cols) == columns, f"malformed line: {line!r}"
        out.append(cols)
    return out
