import json
from collections import Counter

import pytest

from hierattn.data.batches import bucketed_batches, encode_documents
from hierattn.data.builtin import load_builtin, sample_documents
from hierattn.data.dataset import DataError
from hierattn.data.split import stratified_split
from hierattn.data.tables import load_table
from hierattn.data.text import Vocab, tokenize


def test_bbc_news_is_read_from_the_installed_package():
    ds = load_builtin("bbc-news")
    assert len(ds.texts) == 2225
    assert ds.label_names == ["business", "entertainment", "politics", "sports", "tech"]
    assert Counter(ds.labels)[0] == 510


def test_tweets_are_read_from_the_installed_package():
    ds = load_builtin("tweets")
    assert ds.label_names == ["negative", "neutral", "positive"]
    assert len(ds.texts) == len(ds.labels) > 38000
    assert all(isinstance(t, str) and t for t in ds.texts[:100])


def test_unknown_builtin_is_a_clear_error():
    with pytest.raises(DataError, match="unknown data set"):
        load_builtin("imdb")


def test_stratified_split_is_80_10_10_stratified_and_deterministic():
    labels = [i % 3 for i in range(300)] + [3] * 100
    split = stratified_split(labels)
    assert [len(split[k]) for k in ("train", "validation", "test")] == [320, 40, 40]
    assert not set(split["train"]) & set(split["test"]) and not set(split["validation"]) & set(split["test"])
    assert Counter(labels[i] for i in split["test"]) == {0: 10, 1: 10, 2: 10, 3: 10}
    assert split == stratified_split(labels)
    assert split != stratified_split(labels, seed=7)


def test_encode_documents_pads_with_masks():
    docs = [tokenize("Alpha beta gamma. Delta."), tokenize("Epsilon")]
    v = Vocab.build(docs, min_freq=1)
    b = encode_documents(docs, v, [0, 1])
    assert b.word_ids.shape == (2, 2, 4)  # "." is a token
    assert b.word_mask.tolist()[1] == [[True, False, False, False], [False] * 4]
    assert b.sentence_mask.tolist() == [[True, True], [True, False]]
    assert (b.word_ids[~b.word_mask] == 0).all()


def test_encode_documents_puts_every_word_in_its_cell():
    """Each word's id at (document, sentence, word), against the vocabulary's own encoding, over
    ragged documents (one with no sentence) and no documents at all."""
    texts = ["One two. Three four five six. Seven.", "", "Eight nine ten eleven twelve thirteen.", "Fourteen."]
    docs = [tokenize(t) for t in texts]
    v = Vocab.build(docs[:3], min_freq=1)  # the last document's word is unknown
    b = encode_documents(docs, v)
    assert b.word_ids.shape == (4, 3, 7)  # "." is a token
    for i, d in enumerate(docs):
        for j in range(3):
            ids = v.encode(d.sentences[j]) if j < len(d.sentences) else []
            assert b.word_ids[i, j].tolist() == ids + [0] * (7 - len(ids))
            assert b.word_mask[i, j].tolist() == [True] * len(ids) + [False] * (7 - len(ids))
    assert b.word_ids[3, 0, 0] == v.unk_id
    empty = encode_documents([], v)
    assert empty.word_ids.shape == (0, 1, 1) and empty.sentence_mask.shape == (0, 1)


def test_bucketing_keeps_padding_small():
    docs = [tokenize(" ".join(["w"] * n) + ".") for n in [1, 30, 2, 29, 3, 28, 4, 27]]
    v = Vocab.build(docs, min_freq=1)
    batches = bucketed_batches(docs, [0] * 8, v, batch_size=2, shuffle=True)
    padding = sum(int((~b.word_mask).sum()) for b in batches)
    unsorted = encode_documents(docs, v, [0] * 8)
    assert padding < int((~unsorted.word_mask).sum()) / 4
    assert sum(len(b) for b in batches) == 8


def _rows(fmt: str, n: int = 10) -> str:
    pairs = [(f"hello there {i}", "a") for i in range(n)] + [(f"good day {i}", "b") for i in range(n)]
    if fmt == ".jsonl":
        return "".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in pairs)
    sep = "\t" if fmt == ".tsv" else ","
    return f"text{sep}label\n" + "".join(f"{t}{sep}{y}\n" for t, y in pairs)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl"])
def test_own_files_load(tmp_path, suffix):
    path = tmp_path / f"mine{suffix}"
    path.write_text(_rows(suffix))
    ds = load_table(path)
    assert ds.texts[:2] == ["hello there 0", "hello there 1"] and ds.label_names == ["a", "b"]
    assert len(ds.texts) == 20 and ds.name == "mine"


def test_a_review_quoted_inside_its_quoted_field_loses_the_inner_quotes(tmp_path):
    path = tmp_path / "drugs.tsv"  # UCI's drug reviews: the review quoted again inside the field
    rows = [('"""I&#039;ve tried it, and it works."""', "good"), ('plain "quoted" word', "bad"),
            ('"""Hello"" she said ""bye"""', "bad")] * 10
    path.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    ds = load_table(path)
    assert ds.texts[:3] == ["I've tried it, and it works.", 'plain "quoted" word', '"Hello" she said "bye"']


def test_utf16_with_a_bom_is_read(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_bytes(_rows(".csv").replace("hello", "héllo").encode("utf-16"))
    assert load_table(path).texts[0] == "héllo there 0"


@pytest.mark.parametrize("name,content,message", [
    ("x.csv", "text,label\n", "no rows"),
    ("x.csv", "", "no rows"),
    ("x.csv", "body,label\nhi,a\n", "no column named 'text'"),
    ("x.csv", "text,label\n" + "".join(f"hi {i},a\n" for i in range(30)), "only one label"),
    ("x.csv", "text,label\n" + "".join(f"hi {i},{i}\n" for i in range(150)), "the number of distinct labels is 150"),
    ("x.csv", "text,label\n" + "".join(f"hi {i},a\n" for i in range(30)) + "ho,b\nhu,b\n", "at least 10 documents"),
    ("x.csv", "text,label\n" + "".join(f" ,{i % 2}\n" for i in range(30)), "empty text or label"),
    ("x.jsonl", '{"text": 1\n', "not JSON"),
    ("x.jsonl", '[1, 2]\n', "not a JSON object"),
    ("x.txt", "whatever", "expected a .csv"),
])
def test_bad_files_get_clear_messages(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        load_table(path)


@pytest.mark.parametrize("raw,message", [
    (b"text,label\ncaf\xe9,a\n", "not UTF-8"),  # Latin-1
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not a text file"),
])
def test_undecodable_files_are_rejected(tmp_path, raw, message):
    path = tmp_path / "x.csv"
    path.write_bytes(raw)
    with pytest.raises(DataError, match=message):
        load_table(path)


def test_files_over_the_limit_are_rejected_before_parsing(monkeypatch):
    from hierattn.data import formats as data

    monkeypatch.setenv("HIERATTN_MAX_UPLOAD_MB", "0.001")
    monkeypatch.setattr(data, "decode_text", lambda raw, name: pytest.fail("decoded a file over the limit"))
    with pytest.raises(DataError, match=r"over the limit of 0.001 MB \(set HIERATTN_MAX_UPLOAD_MB"):
        data.read_rows(b"text,label\n" + b"x,a\n" * 1000, "big.csv")


def test_samples_come_from_the_test_split():
    ds = load_builtin("bbc-news")
    test = {ds.texts[i] for i in stratified_split(ds.labels)["test"]}
    samples = sample_documents("bbc-news", per_class=1)
    assert [label for label, _ in samples] == ds.label_names
    assert all(text in test for _, text in samples)


def test_csv_download_neutralises_formulas():
    import pandas as pd

    from hierattn.data.formats import csv_bytes

    frame = pd.DataFrame({"label": ["=cmd|' /C calc'!A0", "+1", "sport", "@SUM(A1)"], "score": [-1.5, 2.0, 3.0, 4.0]})
    frame["level"] = pd.Categorical(["-x", "word", "word", "word"])
    lines = csv_bytes(frame).decode().splitlines()
    assert lines[1].startswith("'=cmd|") and lines[2].startswith("'+1,2.0")
    assert lines[3] == "sport,3.0,word" and lines[4].startswith("'@SUM")
    assert lines[1].endswith(",-1.5,'-x")  # numbers stay numbers, text starting with - is quoted


def _sklearn_split(labels, seed=1234):
    from sklearn.model_selection import train_test_split

    idx = list(range(len(labels)))
    train, hold = train_test_split(idx, test_size=0.2, stratify=labels, random_state=seed)
    val, test = train_test_split(hold, test_size=0.5, stratify=[labels[i] for i in hold], random_state=seed)
    return {"train": sorted(train), "validation": sorted(val), "test": sorted(test)}


@pytest.mark.parametrize("name", ["bbc-news", "tweets"])
def test_split_is_scikit_learns_on_the_builtin_data(name):
    from hierattn.data.builtin import load_builtin
    from hierattn.data.split import stratified_split

    labels = load_builtin(name).labels
    assert stratified_split(labels) == _sklearn_split(labels)


def test_split_is_scikit_learns_on_random_labels():
    import random

    from hierattn.data.split import stratified_split

    rng = random.Random(0)
    for trial in range(40):
        classes = rng.randint(2, 7)
        labels = [rng.randrange(classes) for _ in range(rng.randint(10 * classes, 400))]
        labels += list(range(classes)) * 10  # every class can be split
        seed = rng.randrange(10_000)
        assert stratified_split(labels, seed) == _sklearn_split(labels, seed), trial


def _both_ways(tmp_path, name: str, content: bytes):
    """What an upload (load_table) and a local corpus (open_corpus, records) make of one file:
    (texts, labels) from each, or the DataError message each raises."""
    from hierattn.data.corpora import open_corpus

    path = tmp_path / name
    path.write_bytes(content)
    results = []
    for read in (lambda: [(t, ds.label_names[y]) for ds in [load_table(path)] for t, y in zip(ds.texts, ds.labels)],
                 lambda: list(open_corpus(path).records("all"))):
        try:
            results.append(sorted(read()))
        except DataError as exc:
            results.append(str(exc))
    return results


@pytest.mark.parametrize("name,content,outcome", [
    # a row with an extra field: refused by both (the corpus reader used to drop the extra field silently)
    ("x.csv", b"text,label\n" + b"".join(b"hi %d,a\n" % i for i in range(12)) + b"oops,a,b\n"
     + b"".join(b"ho %d,b\n" % i for i in range(12)), "line 14 has 3 fields; the header has 2"),
    # bytes that are not UTF-8: refused by both (the corpus reader used to replace them)
    ("x.csv", b"text,label\n" + b"".join(b"hi %d,a\n" % i for i in range(12)) + b"caf\xe9,b\n", "not UTF-8"),
    # a JSON line without the label field: refused by both (an upload used to skip it)
    ("x.jsonl", b"".join(b'{"text": "hi %d", "label": "a"}\n' % i for i in range(12)) + b'{"text": "no label"}\n',
     "has no field 'label'"),
])
def test_an_upload_and_a_corpus_refuse_the_same_files(tmp_path, name, content, outcome):
    upload, corpus = _both_ways(tmp_path, name, content)
    assert outcome in upload and outcome in corpus, (upload, corpus)


def test_an_upload_and_a_corpus_skip_the_same_rows(tmp_path):
    """Rows with an empty text or an empty label are skipped by both (the corpus reader used to keep
    empty texts); what remains is the same documents."""
    rows = [f"hi {i},a" for i in range(12)] + [f"ho {i},b" for i in range(12)] + [" ,a", "lonely,", '"",b']
    upload, corpus = _both_ways(tmp_path, "x.csv", ("text,label\n" + "\n".join(rows) + "\n").encode())
    assert upload == corpus and len(upload) == 24
