"""The core's golden vectors, asserted through the Python module: the values stored in
databases for years, which the module must compute too."""

import neardup
from golden import rows, unescape


def test_simhash():
    checked = rows("golden_simhash.tsv", 5)
    for shingle, ngram, fold_case, text, expected in checked:
        got = neardup.simhash(unescape(text), int(shingle), int(ngram), fold_case == "t")
        assert f"{got:016x}" == expected, (shingle, ngram, fold_case, text)
    assert len(checked) >= 30


def test_minhash_and_supershingles():
    checked = rows("golden_minhash.tsv", 5)
    for num_hashes, shingle, text, sketch_text, supershingles_text in checked:
        if shingle.startswith("c"):
            sketch = neardup.minhash(unescape(text), int(num_hashes), 8, int(shingle[1:]))
        else:
            sketch = neardup.minhash(unescape(text), int(num_hashes), int(shingle))
        assert str(sketch) == sketch_text, (num_hashes, shingle, text)
        assert neardup.MinhashSketch.from_text(sketch_text) == sketch
        assert neardup.MinhashSketch.from_bytes(bytes(sketch)) == sketch
        if supershingles_text == "-":
            assert int(num_hashes) % 14 or int(num_hashes) < 28
        else:
            vector = sketch.supershingles()
            assert str(vector) == supershingles_text
            assert neardup.SupershingleVector.from_text(supershingles_text) == vector
    assert len(checked) >= 30


def test_bloom():
    checked = rows("golden_bloom.tsv", 6)
    for chunk_size, bits, hashes, text, lengths, signature in checked:
        text = unescape(text)
        got = [len(c.encode()) for c in neardup.chunks(text, int(chunk_size))]
        assert ",".join(map(str, got)) == lengths
        k = None if hashes == "default" else int(hashes)
        sig = neardup.bloomsig(text, int(bits), k, int(chunk_size))
        assert str(sig) == signature, (chunk_size, bits, hashes, text)
        assert neardup.BloomSignature.from_text(signature) == sig
    assert len(checked) >= 25


def test_lsh_bands():
    checked = rows("golden_lsh.tsv", 4)
    for sketch_text, bands, rows_, keys in checked:
        sketch = neardup.MinhashSketch.from_text(sketch_text)
        got = sketch.lsh_bands(bands=int(bands), rows=int(rows_))
        assert str(got) == keys, (sketch_text, bands, rows_)
        assert neardup.LshBands.from_text(keys) == got
    assert len(checked) >= 100


def test_lsh_params():
    checked = rows("golden_lsh_params.tsv", 4)
    for threshold, num_hashes, bands, rows_ in checked:
        got = neardup.lsh_params(float(threshold), int(num_hashes), 0.1, 0.9)
        assert got[:2] == (int(bands), int(rows_)), (threshold, num_hashes)
        # lsh_bands(sketch, threshold) bands with exactly that choice
        sketch = neardup.minhash("golden lsh params", int(num_hashes))
        chosen = sketch.lsh_bands(float(threshold))
        assert (len(chosen), chosen.rows) == (int(bands), int(rows_))
    assert len(checked) >= 80
