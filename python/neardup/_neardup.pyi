"""Type stubs of the compiled module; each name mirrors the SQL function or type named."""

from typing import final

Text = str | bytes
"""A text: ``str``, or ``bytes`` of valid UTF-8; without NUL (as PostgreSQL ``text``)."""

Code = int | bytes | bytearray
"""A code for ``hamming``: an int (``simhash64``), or 8, 16 or 32 bytes."""

def simhash(text: Text, shingle: int = 1, ngram: int = 0, fold_case: bool = True) -> int:
    """SQL ``simhash(text, shingle, ngram, fold_case)``: Charikar's 64-bit simhash of the
    text's word shingles of ``shingle`` tokens (1 to 16), or of its character n-grams
    when ``ngram`` > 0 (1 to 32), as an unsigned int below 2**64."""

def simhash_features(features: list[Text], weights: list[float]) -> int:
    """SQL ``simhash(text[], real[])``: each feature votes with its weight (rounded to
    single precision, as ``real``); the weights must be finite."""

def hamming(a: Code, b: Code) -> int:
    """SQL ``hamming``: differing bits of two ints (``simhash64``; negative ints are read
    in two's complement, as a ``bigint`` holds them) or two bytes of one width (8, 16 for
    ``hash128``, 32 for ``hash256``)."""

def canonical(text: Text, fold_case: bool = True) -> str:
    """SQL ``neardup_canonical``: the tokens joined by single spaces."""

def tokens(text: Text, fold_case: bool = True) -> list[str]:
    """SQL ``neardup_tokens``: the tokens the signatures see, in order."""

def minhash(text: Text, num_hashes: int = 84, shingle: int = 8, ngram: int = 0) -> MinhashSketch:
    """SQL ``minhash``: ``num_hashes`` (1 to 1024) minvalues of the text's ``shingle``-word
    shingles, or with ``ngram`` > 0 of its character n-grams."""

def jaccard(a: MinhashSketch, b: MinhashSketch) -> float:
    """SQL ``jaccard``: the fraction of agreeing minvalues; sketches of another size or
    other features raise ``ValueError``."""

def supershingles(value: MinhashSketch | Text) -> SupershingleVector:
    """SQL ``supershingles``: of a sketch (14 × k minvalues, k >= 2), or of a text's
    default sketch."""

def b_similarity(a: SupershingleVector, b: SupershingleVector) -> int:
    """SQL ``b_similarity``: positions with equal supershingles."""

def lsh_bands(
    sketch: MinhashSketch,
    threshold: float | None = None,
    *,
    bands: int | None = None,
    rows: int | None = None,
) -> LshBands:
    """SQL ``lsh_bands(sketch, threshold)`` or ``lsh_bands(sketch, bands, rows)``."""

def lsh_params(
    threshold: float,
    num_hashes: int = 84,
    false_positive_weight: float = 0.5,
    false_negative_weight: float = 0.5,
) -> tuple[int, int, float, float]:
    """SQL ``lsh_params``: ``(bands, rows, false_positive, false_negative)``."""

def bloomsig(text: Text, bits: int = 2048, hashes: int | None = None, chunk_size: int = 256) -> BloomSignature:
    """SQL ``bloomsig``: a Bloom filter of ``bits`` bits (a multiple of 8, 64 to 65536) of
    the text's content-defined chunks of about ``chunk_size`` bytes, ``hashes`` bits each
    (None: 6)."""

def bloom_match(a: BloomSignature, b: BloomSignature) -> float:
    """SQL ``bloom_match``: set bits of ``a & b`` over set bits of ``a``."""

def bloom_similarity(a: BloomSignature, b: BloomSignature) -> float:
    """SQL ``bloom_similarity``: set bits of ``a & b`` over set bits of ``a | b``."""

def chunks(text: Text, chunk_size: int = 256) -> list[str]:
    """SQL ``neardup_chunks``: the chunks a Bloom signature is built from."""

class _Stored:
    """(Only in the stubs: the methods every stored type has.) What each shares with its SQL type: its binary form (``bytes(v)``,
    the server's send form), its text form (``str(v)``), equality and pickling."""

    def to_bytes(self) -> bytes: ...
    def __bytes__(self) -> bytes: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

@final
class MinhashSketch(_Stored):
    """A ``minhash_sketch``."""

    @staticmethod
    def from_bytes(data: bytes) -> MinhashSketch: ...
    @staticmethod
    def from_text(text: str) -> MinhashSketch: ...
    @property
    def num_hashes(self) -> int: ...
    @property
    def shingle(self) -> int | None:
        """Words per shingle; None for a sketch of character n-grams."""
    @property
    def ngram(self) -> int:
        """Characters per n-gram; 0 for a sketch of word shingles."""
    @property
    def values(self) -> list[int]: ...
    def __len__(self) -> int: ...
    def jaccard(self, other: MinhashSketch) -> float: ...
    def supershingles(self) -> SupershingleVector: ...
    def lsh_bands(
        self, threshold: float | None = None, *, bands: int | None = None, rows: int | None = None
    ) -> LshBands: ...

@final
class SupershingleVector(_Stored):
    """A ``supershingle_vector``."""

    @staticmethod
    def from_bytes(data: bytes) -> SupershingleVector: ...
    @staticmethod
    def from_text(text: str) -> SupershingleVector: ...
    @property
    def values(self) -> list[int]: ...
    def __len__(self) -> int: ...
    def b_similarity(self, other: SupershingleVector) -> int: ...
    def lsh_bands(self) -> LshBands:
        """The cast ``supershingle_vector::lsh_bands`` (6 bands of 14 rows)."""

@final
class LshBands(_Stored):
    """An ``lsh_bands`` value."""

    @staticmethod
    def from_bytes(data: bytes) -> LshBands: ...
    @staticmethod
    def from_text(text: str) -> LshBands: ...
    @property
    def rows(self) -> int: ...
    @property
    def keys(self) -> list[int]: ...
    def __len__(self) -> int: ...
    def shares_band(self, other: LshBands) -> bool:
        """SQL ``a && b``."""

@final
class BloomSignature(_Stored):
    """A ``bloom_signature``."""

    @staticmethod
    def from_bytes(data: bytes) -> BloomSignature: ...
    @staticmethod
    def from_text(text: str) -> BloomSignature: ...
    @property
    def bits(self) -> int: ...
    @property
    def hashes(self) -> int: ...
    @property
    def chunk_size(self) -> int: ...
    @property
    def bit_count(self) -> int:
        """SQL ``bit_count``."""
    def match_ratio(self, other: BloomSignature) -> float:
        """SQL ``bloom_match(self, other)``."""
    def similarity(self, other: BloomSignature) -> float:
        """SQL ``bloom_similarity(self, other)``."""
    def __and__(self, other: BloomSignature) -> BloomSignature: ...
    def __or__(self, other: BloomSignature) -> BloomSignature: ...

def pdq(image: bytes, max_pixels: int = 25_000_000) -> bytes:
    """SQL ``pdq(image bytea)``: Meta's PDQ hash of the encoded image (JPEG, PNG, GIF, WebP,
    BMP or TIFF) as the 32 bytes of ``hash256``; ValueError for bytes that are no image or a
    truncated one and for images under 5 x 5 pixels, MemoryError past ``max_pixels`` (the
    server's default ``neardup.pdq_max_pixels``)."""

def pdq_quality(image: bytes, max_pixels: int = 25_000_000) -> int:
    """SQL ``pdq_quality``: PDQ's quality of the image, 0 to 100 (0 under 5 x 5 pixels)."""

def pdq_with_quality(image: bytes, max_pixels: int = 25_000_000) -> tuple[bytes, int]:
    """SQL ``pdq_with_quality``: the hash and the quality from one decode, as the reference's
    ``compute`` returns them; ValueError under 5 x 5 pixels, as ``pdq``."""

def pdq_dihedral(image: bytes, max_pixels: int = 25_000_000) -> list[bytes]:
    """SQL ``pdq_dihedral``: the hashes of the image and its 7 rotations and mirrors, in the
    reference's order."""
