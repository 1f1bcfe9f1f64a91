"""The out-of-domain reference is computed once for the server and kept on disk
(hierattn/app/domain_reference.py): a fresh worker's first paste reads it, never computes it."""
import numpy as np
import pytest

from tests.app.test_pages import open_page


def test_a_kept_reference_reads_back_as_it_was_written(checkpoint_dir, tmp_path):
    from hierattn.analysis import domain
    from hierattn.app.samples import split_part
    from hierattn.checkpoint.reading import load_classifier

    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    texts, _, _ = split_part("bbc-news", "test")
    ref = domain.reference(classifier, texts[:40], "bbc-news test")
    domain.save_reference(ref, tmp_path / "ref.safetensors")
    back = domain.load_reference(tmp_path / "ref.safetensors")
    assert back.source == "bbc-news test" and back.signals == ref.signals
    np.testing.assert_array_equal(back.entropies, ref.entropies)
    np.testing.assert_array_equal(back.lengths, ref.lengths)
    np.testing.assert_allclose(back.vectors, ref.vectors, rtol=1e-6)
    np.testing.assert_allclose(back.distances, ref.distances, rtol=1e-6)
    assert [f.tolist() for f in back.rare_flags] == [f.tolist() for f in ref.rare_flags]
    (tmp_path / "bad.safetensors").write_bytes(b"not a reference")
    assert domain.load_reference(tmp_path / "bad.safetensors") is None  # then it is computed again


def test_a_fresh_workers_first_paste_reads_the_reference(app_env, monkeypatch, tmp_path):
    """The first worker computes the reference and keeps it; a fresh worker (an empty result store)
    shows the check on its first paste with ``domain.reference`` made to fail: read, not computed."""
    from hierattn.analysis import domain
    from hierattn.app import domain_reference, tasks

    monkeypatch.setenv("HIERATTN_CACHE", str(tmp_path / "cache"))
    first = open_page("pages/explore.py")
    captions = " ".join(c.value for c in first.caption)
    assert "entropy" in captions  # the check is shown
    kept = list(domain_reference.cache_root().glob("*.safetensors"))
    assert len(kept) == 1
    tasks._results().items.clear()  # a fresh worker: nothing computed in this process

    def computed(*args, **kwargs):
        raise AssertionError("the reference was computed, not read")

    monkeypatch.setattr(domain, "reference", computed)
    fresh = open_page("pages/explore.py")
    assert not fresh.get("progress") and not fresh.error
    assert " ".join(c.value for c in fresh.caption) == captions
    assert list(domain_reference.cache_root().glob("*.safetensors")) == kept


@pytest.mark.parametrize("workers", [3])
def test_workers_racing_compute_it_once(checkpoint_dir, tmp_path, monkeypatch, workers):
    """Processes that need the reference at once: the first takes the lock and computes, the others
    wait and read its file (here: threads standing for the processes; flock is per open file)."""
    import threading

    from hierattn.analysis import domain
    from hierattn.app import domain_reference
    from hierattn.app.samples import split_part
    from hierattn.checkpoint.reading import load_classifier

    classifier = load_classifier(checkpoint_dir / "tiny-han", device="cpu")
    texts, _, _ = split_part("bbc-news", "test")
    calls, real = [], domain.reference

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(domain, "reference", counted)
    path = tmp_path / "ref.safetensors"
    found = []
    threads = [threading.Thread(target=lambda: found.append(
        domain_reference.computed_once(classifier, texts[:40], "bbc-news test", path, None))) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(found) == workers
    assert all(np.array_equal(f.entropies, found[0].entropies) for f in found)
