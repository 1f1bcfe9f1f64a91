"""The registry's specs: every row loads, every ordering names rows that exist, and a bad spec says
which file and row."""
import pytest

from hierattn.experiments.spec import SpecError, load_experiments, load_orderings
from hierattn.models import REGISTRY


def test_every_row_loads_and_every_ordering_names_rows_on_both_data_sets():
    experiments = load_experiments()
    assert {e.dataset for e in experiments.values()} == {"tweets", "bbc-news"}
    assert all(e.model in REGISTRY for e in experiments.values())
    for ordering in load_orderings():
        for dataset in ("tweets", "bbc-news"):
            assert f"{dataset}/{ordering.better}" in experiments and f"{dataset}/{ordering.worse}" in experiments


def test_rows_an_ordering_compares_plan_three_seeds_and_equal_epochs():
    experiments = load_experiments()
    for ordering in load_orderings():
        for dataset in ("tweets", "bbc-news"):
            better, worse = experiments[f"{dataset}/{ordering.better}"], experiments[f"{dataset}/{ordering.worse}"]
            assert len(better.seeds) >= 3 and len(worse.seeds) >= 3, ordering.claim
            assert better.recipe.epochs == worse.recipe.epochs, ordering.claim


def test_the_digest_follows_the_spec_and_not_the_seed():
    experiments = load_experiments()
    han, hcan = experiments["tweets/han"], experiments["tweets/hcan"]
    assert han.digest() != hcan.digest()
    import dataclasses

    assert dataclasses.replace(han, seeds=(7,)).digest() == han.digest()
    assert dataclasses.replace(han, recipe=dataclasses.replace(han.recipe, lr=5e-4)).digest() != han.digest()


def test_recipe_differences_are_named():
    experiments = load_experiments()
    assert experiments["bbc-news/hcan"].differences(experiments["bbc-news/hcan-flat"]) == ["text 50x60 vs 25x40"]
    assert experiments["tweets/sanet"].differences(experiments["tweets/han"]) == ["lr 0.0005 vs 0.001"]
    assert experiments["tweets/sanet"].differences(experiments["tweets/sanet-baseline"]) == []


def test_a_bad_spec_names_its_file_and_row(tmp_path):
    (tmp_path / "tweets.toml").write_text('[defaults]\nseeds = [1]\n\n[oops]\nmodel = "nope"\n')
    with pytest.raises(SpecError, match=r"tweets.toml \[oops\]: model 'nope' is not a registered model type"):
        load_experiments(tmp_path)
    (tmp_path / "tweets.toml").write_text('[row]\nmodel = "han"\nrecipe = { epoch = 3 }\n')
    with pytest.raises(SpecError, match=r"tweets.toml \[row\]: .*epoch"):
        load_experiments(tmp_path)


# The data sets whose ordering rows are fully recorded (a data set's seeds take several sittings to record).
COMPLETE = ("tweets", "bbc-news")


def test_every_row_an_ordering_uses_has_three_recorded_seeds():
    from hierattn.experiments.results import RESULTS, recorded

    experiments = load_experiments()
    missing = []
    for ordering in load_orderings():
        for dataset in COMPLETE:
            for row in (ordering.better, ordering.worse):
                found = recorded(RESULTS, experiments[f"{dataset}/{row}"])
                if len(found) < 3:
                    missing.append(f"{dataset}/{row}: {len(found)} seeds")
    assert not missing, f"ordering rows with fewer than 3 recorded seeds: {sorted(set(missing))}"
