"""``python -m hierattn faithfulness`` and the README table it feeds (issue 20)."""
import json

from hierattn.cli import main
from hierattn.experiments.report import faithfulness_table


def test_the_command_writes_the_split_table_the_readme_shows(checkpoint_dir, tmp_path, capsys):
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
    assert "1 / sentence length:" in table  # words ranked across sentences face the structural null
    assert "| accuracy with uniform attention | word |" in table and "`tiny-han`: 6 documents" in table
    assert faithfulness_table("bbc-news", tmp_path) is None


def test_the_command_says_what_is_wrong_with_a_checkpoint(tmp_path, capsys):
    assert main(["faithfulness", "--checkpoint", str(tmp_path / "nowhere"), "--json", str(tmp_path / "o.json")]) == 2
    assert "error:" in capsys.readouterr().err and not (tmp_path / "o.json").exists()
