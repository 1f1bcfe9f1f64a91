"""The registry's whole path on a quick budget: reproduce two rows into a scratch folder, resume
without rerunning, and report them."""
import json

import pytest

from hierattn.cli import main
from hierattn.experiments.results import read_test_labels
from hierattn.experiments.runner import code_version, pending
from hierattn.experiments.spec import load_experiments


@pytest.mark.slow
def test_quick_budget_reproduces_records_resumes_and_reports(tmp_path, capsys):
    results, runs = tmp_path / "results", tmp_path / "runs"
    argv = ["reproduce", "tweets/han", "tweets/tfidf-nb", "tweets/han-v10.0", "--budget", "quick", "--seeds", "1",
            "--results", str(results), "--runs", str(runs)]
    assert main(argv) == 0
    recorded = json.loads((results / "tweets/han/seed-1.json").read_text())
    labels = read_test_labels(results, "tweets")
    assert len(recorded["predictions"]) == len(labels) == 3816
    right = sum(p == t for p, t in zip(recorded["predictions"], labels)) / len(labels)
    assert recorded["test_accuracy"] == pytest.approx(right)
    assert recorded["budget"] == "quick" and recorded["epochs_run"] == 1 and recorded["curve"]
    assert recorded["code"] == code_version() != ""  # the commit that produced it, this checkout's
    assert (runs / "tweets/han/seed-1/model.safetensors").exists()  # the model behind the numbers
    experiments = load_experiments()
    assert pending([experiments["tweets/han"]], 1, results, force=False) == []  # resumes: nothing to redo
    capsys.readouterr()
    assert main(["report", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "<!-- report:results:tweets -->" in out
    assert next(line for line in out.splitlines() if "`han`" in line and "| 1 of 3 |" in line)
    # a row of the sweep of where the query starts records its attention beside its accuracy
    swept = json.loads((results / "tweets/han-v10.0/seed-1.json").read_text())["attention"]
    start, end = swept["query_norm_start"]["word.target"][0], swept["query_norm_end"]["word.target"][0]
    assert start == pytest.approx((10 * 200) ** 0.5, rel=0.2) and end > 0  # u_w ~ N(0, 10), 200 entries
    assert swept["from_even"]["word"]["documents"] == 12 and 0 <= swept["from_even"]["word"]["jsd"][0] <= 0.7
    taus = swept["taus"]["tau leave-one-out: attention"]
    assert taus["documents"] == 12 and -1 <= taus["tau"][0] <= 1
    assert "<!-- report:start:tweets -->" in out and "1 of the sweep's 24 runs on tweets are recorded" in out
    assert json.loads((results / "tweets/han/seed-1.json").read_text())["attention"] is None  # results rows: none


def test_quick_results_never_go_to_the_registry(capsys):
    assert main(["reproduce", "tweets/han", "--budget", "quick"]) == 2
    assert "--budget quick needs --results" in capsys.readouterr().err


def test_an_unknown_row_gets_close_matches_not_the_whole_list(capsys):
    assert main(["reproduce", "tweets/hcan-onee"]) == 2
    err = capsys.readouterr().err
    assert "did you mean tweets/hcan-one" in err and "bbc-news/lstm-q20" not in err


def test_the_code_version_names_the_commit_and_says_when_tracked_files_differ(tmp_path):
    import re
    import subprocess

    assert code_version(tmp_path) == ""  # not a checkout: unknown, and the result is still valid
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q", str(tmp_path)], check=True)
    (tmp_path / "model.py").write_text("x = 1\n")
    subprocess.run(git + ["-C", str(tmp_path), "add", "."], check=True)
    subprocess.run(git + ["-C", str(tmp_path), "commit", "-qm", "m"], check=True)
    clean = code_version(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{12}", clean)
    (tmp_path / "results.json").write_text("{}")  # untracked output: still the committed code
    assert code_version(tmp_path) == clean
    (tmp_path / "model.py").write_text("x = 2\n")
    assert code_version(tmp_path) == clean + "+changes"


def test_results_recorded_before_the_code_field_still_read():
    from hierattn.experiments.results import RESULTS, read_result

    result = read_result(RESULTS, "tweets/han", 1)
    assert result is not None and (result.code == "" or len(result.code) >= 12)
