"""Library calls that replaced hand-written code give what that code gave, on inputs
recorded with it before the switch (tests/recorded/library_switch.json): scipy's Kendall tau-b, its
Jensen-Shannon distance squared, its percentile bootstrap. The torch Jensen-Shannon divergence the
adversarial search climbs (it needs a gradient) is held to scipy's on the same inputs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from hierattn.analysis import attention_tests as tests
from hierattn.analysis.battery_split import bootstrap
from hierattn.analysis.tour.two_self_attentions import pairwise_jsd
from tests.conftest import REPO

RECORDED = json.loads((REPO / "tests" / "recorded" / "library_switch.json").read_text())


@pytest.mark.parametrize("case", RECORDED["kendall_tau_b"], ids=lambda c: f"n{len(c['a'])}")
def test_scipy_kendall_tau_b_equals_the_removed_code(case):
    tau = tests.kendall_tau(case["a"], case["b"])
    if case["tau"] is None:
        assert tau is None
    else:
        assert tau == pytest.approx(case["tau"], abs=1e-12)


def test_the_recorded_kendall_cases_include_ties_constants_and_a_single_item():
    cases = RECORDED["kendall_tau_b"]
    assert any(c["tau"] is None and len(c["a"]) == 1 for c in cases)
    assert any(c["tau"] is None and len(set(c["a"])) == 1 and len(c["a"]) > 1 for c in cases)
    assert any(len(set(c["a"])) < len(c["a"]) and c["tau"] is not None for c in cases)  # tau-b's tie correction


@pytest.mark.parametrize("case", RECORDED["jensen_shannon"], ids=lambda c: f"n{len(c['p'][0])}")
def test_scipy_jensen_shannon_squared_equals_the_removed_code_and_the_torch_divergence(case):
    p, q = np.asarray(case["p"]), np.asarray(case["q"])
    assert np.allclose(tests.js_divergence(p, q), case["tour"], atol=1e-12)
    assert np.allclose(tests.js_divergence(p, q), case["battery"], atol=1e-12)
    differentiable = tests.jsd(torch.tensor(p), torch.tensor(q)).numpy()
    assert np.allclose(differentiable, tests.js_divergence(p, q), atol=1e-12)
    assert (p == 0).any() or (q == 0).any()  # a zero probability contributes nothing


def test_pairwise_divergences_are_symmetric_with_a_zero_diagonal():
    rows = np.asarray(RECORDED["jensen_shannon"][1]["p"])
    pairs = pairwise_jsd(rows)
    assert pairs.shape == (len(rows), len(rows))
    assert np.allclose(np.diag(pairs), 0.0, atol=1e-12) and np.allclose(pairs, pairs.T)
    assert (pairs[~np.eye(len(rows), dtype=bool)] > 0).all() and pairs.max() <= math.log(2)


@pytest.mark.parametrize("case", RECORDED["percentile_bootstrap"], ids=lambda c: f"n{len(c['values'])}")
def test_scipy_percentile_bootstrap_equals_the_removed_code(case):
    assert bootstrap(case["values"], seed=case["seed"]) == pytest.approx(case["mean_low_high"], abs=1e-12)


def test_the_bootstrap_interval_widens_with_spread_and_one_value_is_its_own_interval():
    assert bootstrap([0.3]) == (0.3, 0.3, 0.3)
    narrow = bootstrap([0.5 + 0.01 * (i % 3) for i in range(60)])
    wide = bootstrap([0.5 + 0.3 * (i % 3) for i in range(60)])
    assert narrow[2] - narrow[1] < wide[2] - wide[1]
    assert all(math.isnan(v) for v in bootstrap([None, float("nan")]))
