"""A model trained on a local corpus: Explore and Dataset statistics read its test file."""
import pytest

from hierattn.data.corpora import open_corpus
from hierattn.data.text import TextConfig
from hierattn.training.corpus_cache import CachedCorpus, build_cache
from tests.conftest import CORPORA
from tests.conftest import REPO as ROOT


@pytest.mark.slow  # trains a model on the corpus
def test_explore_offers_the_corpus_test_file_as_samples(cache_root, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from hierattn.training.corpus import train_corpus
    from hierattn.training.loop import TrainConfig

    copy = tmp_path / "ag_news_csv"  # a copy, so the corpus can be moved away afterwards
    copy.mkdir()
    for name in ("train.csv", "test.csv", "classes.txt"):
        (copy / name).write_bytes((CORPORA / "ag_news_csv" / name).read_bytes())
    cache = CachedCorpus(build_cache(open_corpus(copy), TextConfig(), processes=1).path)
    train_corpus(cache, "hcan", {"d": 16, "heads": 2}, TrainConfig(epochs=1, batch_size=16, min_freq=1),
                 tmp_path / "checkpoints" / "ag-hcan", log=lambda *a: None)
    monkeypatch.setenv("HIERATTN_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("HIERATTN_CORPORA", str(tmp_path))  # the server lets the app read the corpora there
    at = AppTest.from_file(str(ROOT / "pages/explore.py"), default_timeout=60).run()
    assert not at.exception
    options = at.selectbox(key="sample").options
    first_test_document = next(open_corpus(copy).records("test"))[0]
    assert options[1].startswith("ag_news · World · ") and at.text_area(key="document").value == first_test_document
    assert sum(o.startswith("ag_news · ") for o in options) == 8  # two of each of the four classes
    # Dataset statistics: the corpus's test file is a data set to measure the model on
    stats_page = AppTest.from_file(str(ROOT / "pages/1_statistics.py"), default_timeout=60).run()
    import time

    deadline = time.time() + 60
    while stats_page.get("progress") and time.time() < deadline:
        time.sleep(0.3)
        stats_page.run()
    assert not stats_page.exception
    assert stats_page.selectbox(key="stats_dataset").options[0] == "ag_news"
    assert stats_page.selectbox(key="stats_split").options == ["test"]
    assert any("24 documents," in c.value for c in stats_page.caption)  # the whole test file
    copy.rename(tmp_path / "moved")  # the corpus is gone: the built-in samples remain
    from hierattn.app import samples

    samples.corpus_samples.clear()
    again = AppTest.from_file(str(ROOT / "pages/explore.py"), default_timeout=60).run()
    assert not again.exception and not any(o.startswith("ag_news") for o in again.selectbox(key="sample").options[1:])
