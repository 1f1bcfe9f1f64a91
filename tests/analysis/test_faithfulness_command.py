"""``python -m hierattn faithfulness`` and the table of docs/RESULTS.md it feeds."""
import json

import pytest

from hierattn.cli import main
from hierattn.experiments.report import faithfulness_table


def test_the_command_writes_what_the_results_page_faithfulness_table_shows(checkpoint_dir, tmp_path, capsys):
    out = tmp_path / "faithfulness" / "tiny-han.json"
    code = main(["faithfulness", "--checkpoint", str(checkpoint_dir / "tiny-han"), "--dataset", "tweets",
                 "--documents", "6", "--permutations", "3", "--adversarial", "2", "--json", str(out)])
    assert code == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["documents"] == 6 and result["adversarial"] == 2 and result["dataset"] == "tweets"
    tests = {(r["test"], r["level"]): r for r in result["rows"]}
    assert tests[("adversarial attention", "word")]["documents"] == 2
    comprehensiveness = tests[("comprehensiveness (two-stage)", "word")]
    mean, low, high = comprehensiveness["value"]
    assert low <= mean <= high and comprehensiveness["baseline is"] == "random words"
    table = faithfulness_table("tweets", tmp_path)
    assert "| comprehensiveness (two-stage) | word |" in table and "random words:" in table
    assert "sentence × even words:" in table  # a hierarchical model's words face the structural null
    two_stage = tests[("comprehensiveness (two-stage)", "word")]
    # the figure beside the null covers the null's documents: value minus null equals the paired difference
    same, null = two_stage["value on structural documents"][0], two_stage["structural"][0]
    assert same - null == pytest.approx(two_stage["structural difference"][0], abs=1e-9)
    assert f"on the {two_stage['structural documents']} documents of 2+ sentences" in table
    assert "| accuracy with uniform attention | word |" in table and "`tiny-han`: 6 documents" in table
    assert faithfulness_table("bbc-news", tmp_path) is None


def test_the_command_says_what_is_wrong_with_a_checkpoint(tmp_path, capsys):
    assert main(["faithfulness", "--checkpoint", str(tmp_path / "nowhere"), "--json", str(tmp_path / "o.json")]) == 2
    assert "error:" in capsys.readouterr().err and not (tmp_path / "o.json").exists()
