"""neardup's signatures in Python, bit for bit those of the PostgreSQL extension.

Every function mirrors the SQL function of the same name (``canonical`` and ``tokens``
are ``neardup_canonical`` and ``neardup_tokens``; ``chunks`` is ``neardup_chunks``;
``simhash_features`` is ``simhash(text[], real[])``), with the same parameters and
defaults, computed by the same Rust core. Texts are ``str`` or UTF-8 ``bytes``; a text
PostgreSQL's ``text`` cannot hold (lone surrogates, invalid UTF-8, NUL) is refused.

The adapters are optional modules: ``neardup.psycopg`` (psycopg 3),
``neardup.sqlalchemy`` (SQLAlchemy 2) and ``neardup.asyncpg``.
"""

from ._neardup import (
    BloomSignature,
    LshBands,
    MinhashSketch,
    SupershingleVector,
    b_similarity,
    bloom_match,
    bloom_similarity,
    bloomsig,
    canonical,
    chunks,
    hamming,
    jaccard,
    lsh_bands,
    lsh_params,
    minhash,
    pdq,
    pdq_dihedral,
    pdq_quality,
    pdq_with_quality,
    simhash,
    simhash_features,
    supershingles,
    tokens,
)

__version__ = "0.8.0"

__all__ = [
    "BloomSignature",
    "LshBands",
    "MinhashSketch",
    "SupershingleVector",
    "b_similarity",
    "bloom_match",
    "bloom_similarity",
    "bloomsig",
    "canonical",
    "chunks",
    "hamming",
    "jaccard",
    "lsh_bands",
    "lsh_params",
    "minhash",
    "pdq",
    "pdq_dihedral",
    "pdq_quality",
    "pdq_with_quality",
    "simhash",
    "simhash_features",
    "supershingles",
    "tokens",
]
