"""tuiapp.common.stats against reference values computed with scipy 1.17.1
(scipy.stats.t.ppf, scipy.stats.ttest_ind(equal_var=False), scipy.stats.t.interval)."""

import math

import pytest

from tuiapp.common.stats import ci95, mean, sd, t_quantile, t_sf_two_sided, welch
from tuiapp.common.verdict import welch_compare

CAMPAIGN_GOOD = [89.8, 89.8, 89.3, 89.3, 89.3]
CAMPAIGN_OLD = [82.0, 82.5, 81.9, 82.2, 82.1]


@pytest.mark.parametrize(
    ("dof", "expected"),
    [
        (1, 12.706204736174694),
        (2, 4.302652729749462),
        (3, 3.1824463052837078),
        (4, 2.7764451051977934),
        (7.5, 2.333039626864974),
        (9, 2.262157162798205),
        (29.3, 2.044320421500141),
    ],
)
def test_t_quantile_matches_scipy(dof, expected):
    assert t_quantile(0.975, dof) == pytest.approx(expected, rel=1e-9)
    assert t_quantile(0.025, dof) == pytest.approx(-expected, rel=1e-9)


def test_t_two_sided_tail_fractional_dof():
    assert t_sf_two_sided(2.0, 3.5) == pytest.approx(0.12613852257591343, rel=1e-9)
    assert t_sf_two_sided(0.0, 5) == pytest.approx(1.0)


def test_mean_sd_ci95_campaign_runs():
    assert mean(CAMPAIGN_GOOD) == pytest.approx(89.5)
    # sample sd (n - 1): sqrt(0.3 / 4)
    assert sd(CAMPAIGN_GOOD) == pytest.approx(math.sqrt(0.3 / 4))
    low, high = ci95(CAMPAIGN_GOOD)
    assert low == pytest.approx(89.15995630967087, rel=1e-10)
    assert high == pytest.approx(89.84004369032913, rel=1e-10)


def test_small_samples_have_no_spread():
    assert mean([]) is None
    assert sd([5.0]) is None
    assert ci95([5.0]) is None
    assert ci95([5.0, 5.0]) == (5.0, 5.0)


@pytest.mark.parametrize(
    ("a", "b", "t", "dof", "p"),
    [
        # scipy's statistic is mean(a) - mean(b); ours is mean(b) - mean(a)
        (CAMPAIGN_GOOD, CAMPAIGN_OLD, -45.99999999999999, 7.770452928622232, 9.471837072873464e-11),
        ([89.5, 89.9, 89.1], [89.7, 90.4, 89.0, 90.1], 0.7878385971583605, 4.978513483885121, 0.46662691233614106),
        ([10.0, 12.0], [11.0, 15.0, 14.0], 1.4924050144892733, 2.9244712990936566, 0.23467853225206442),
    ],
)
def test_welch_matches_scipy(a, b, t, dof, p):
    got_t, got_dof, got_p = welch(a, b)
    assert got_t == pytest.approx(t, rel=1e-9)
    assert got_dof == pytest.approx(dof, rel=1e-9)
    assert got_p == pytest.approx(p, rel=1e-6)


def test_welch_degenerate_cases():
    assert welch([1.0, 1.0], [1.0, 1.0]) == (0.0, math.inf, 1.0)
    t, _, p = welch([1.0, 1.0], [2.0, 2.0])
    assert t == math.inf and p == 0.0
    with pytest.raises(ValueError):
        welch([1.0], [1.0, 2.0])


def test_verdict():
    assert welch_compare(CAMPAIGN_OLD, CAMPAIGN_GOOD).verdict == "faster"
    assert welch_compare(CAMPAIGN_GOOD, CAMPAIGN_OLD).verdict == "slower"
    assert welch_compare([89.5, 89.9, 89.1], [89.7, 90.4, 89.0, 90.1]).verdict == "within noise"
    assert welch_compare([82.0], CAMPAIGN_GOOD).verdict.startswith("n/a")  # one run shows no noise
