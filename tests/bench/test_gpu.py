"""The GPU section of BENCHMARKS.md: drawn from the recorded figures (a CPU-only machine cannot
measure them again), and saying so when none were recorded."""
import pytest

from bench.gpu import format_gpu, record_gpu, recorded_gpu


def test_without_a_record_the_section_says_it_was_not_measured():
    assert "not measured" in "\n".join(format_gpu(None))


def test_the_recorded_figures_are_drawn_with_their_device():
    recorded = recorded_gpu()
    assert recorded is not None, "results/timing/bench-cuda.json is committed"
    text = "\n".join(format_gpu(recorded))
    assert recorded["hardware"] in text and recorded["torch"] in text
    for row in ("| HAN, fp32 |", "| HAN, bf16 autocast |", "| HCAN, fp32 |", "| HCAN, bf16 autocast |"):
        assert row in text
    assert text.count(" ms |") == 6  # HAN and HCAN at three lengths


def test_asking_for_gpu_figures_without_a_gpu_is_refused_clearly(monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(RuntimeError, match="no GPU is visible"):
        record_gpu(quick=True)
