"""Local corpus formats read as streams of (text, label) records."""






import pytest

from hierattn.data.corpora import open_corpus
from hierattn.data.dataset import DataError
from tests.conftest import CORPORA


@pytest.mark.parametrize("path, format, parts, first_label, count", [
    ("ag_news_csv", "zhang", ["train", "test"], "1", 96),
    ("yelp_polarity.csv", "zhang", ["all"], "1", 60),
    ("yahoo_answers_csv", "zhang", ["train", "test"], "3", 3),
    ("trec", "trec", ["train", "test"], "DESC", 8),
    ("reviews.csv", "csv", ["all"], "sports", 4),
    ("reviews.tsv", "tsv", ["all"], "sports", 4),
    ("reviews.jsonl", "jsonl", ["all"], "sports", 4),
])
def test_each_format_is_recognised_and_read(path, format, parts, first_label, count):
    corpus = open_corpus(CORPORA / path)
    assert corpus.format == format and list(corpus.parts) == parts
    records = list(corpus.records(parts[0]))
    assert len(records) == count and records[0][1] == first_label
    assert all(isinstance(t, str) and t.strip() for t, _ in records)


def test_zhang_fields_become_sentences_and_escaped_line_breaks_real_ones():
    corpus = open_corpus(CORPORA / "yahoo_answers_csv")
    assert corpus.label_names == ["Society & Culture", "Science & Mathematics", "Health"]  # classes.txt
    text, label = next(corpus.records("train"))
    assert label == "3" and text == "Why is the sky blue?\nRayleigh scattering.\nShort waves scatter more."
    ag = list(open_corpus(CORPORA / "ag_news_csv").records("train"))
    assert ag[3][0].count("\n") == 2 and '"quotes", and a comma.' in ag[3][0]  # title, body, its second line


def test_trec_coarse_and_fine_labels_and_latin1():
    coarse = list(open_corpus(CORPORA / "trec").records("train"))
    fine = list(open_corpus(CORPORA / "trec", fine_labels=True).records("train"))
    assert [y for _, y in coarse][:3] == ["DESC", "ENTY", "HUM"]
    assert [y for _, y in fine][:3] == ["DESC:manner", "ENTY:cremat", "HUM:ind"]
    assert any("Göthe" in t for t, _ in coarse)  # a Latin-1 byte decoded, not replaced


def test_headed_table_columns_and_bad_files(tmp_path):
    renamed = tmp_path / "r.csv"
    renamed.write_text("body,topic\nhello there,a\n")
    corpus = open_corpus(renamed, text_column="body", label_column="topic")
    assert list(corpus.records("all")) == [("hello there", "a")]
    with pytest.raises(DataError, match="no column named 'text'"):
        open_corpus(renamed, format="csv")
    bad = tmp_path / "bad.csv"
    bad.write_text('"x","no label number"\n')
    with pytest.raises(DataError, match="1-based number first"):
        open_corpus(bad, format="zhang")
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"text": "a", "label": "b"}\n{oops\n')
    with pytest.raises(DataError, match="line 2 is not JSON"):
        list(open_corpus(broken).records("all"))
    with pytest.raises(DataError, match="none of the expected files"):
        open_corpus(tmp_path / "..")
    with pytest.raises(DataError, match="does not exist"):
        open_corpus(tmp_path / "missing.csv")
