"""The statistics reports state, held to values worked out by hand and to published tables."""

from __future__ import annotations

import math

import pytest

from specengine.stats import cohen_kappa, kappa_interval, mcnemar_exact, percentile, wilson_interval


@pytest.mark.parametrize(
    ("passed", "n", "low", "high"),
    [
        (6, 6, 0.6097, 1.0),  # 1 / (1 + z²/6)
        (4, 6, 0.3000, 0.9032),
        (0, 10, 0.0, 0.2775),
        (81, 263, 0.2553, 0.3662),  # Newcombe (1998), table I
        (15, 148, 0.0624, 0.1605),
    ],
)
def test_wilson_interval(passed, n, low, high):
    assert wilson_interval(passed, n) == pytest.approx((low, high), abs=1e-4)


def test_wilson_interval_of_nothing_is_none():
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [
        (0, 0, 1.0),
        (2, 0, 0.5),
        (0, 4, 0.125),
        (10, 1, 24 / 2048),  # 2 · (C(11,0) + C(11,1)) / 2^11
        (3, 3, 1.0),  # capped at 1
        (12, 2, 2 * sum(math.comb(14, i) for i in range(3)) / 2**14),
    ],
)
def test_exact_mcnemar(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p)
    assert mcnemar_exact(c, b) == pytest.approx(p)


def test_nearest_rank_percentile_is_always_a_measured_value():
    values = [0.5, 0.1, 0.4, 0.2, 0.3]
    assert percentile(values, 50) == 0.3
    assert percentile(values, 95) == 0.5
    assert percentile(list(range(1, 101)), 95) == 95
    assert percentile([], 50) is None


def test_cohen_kappa_and_its_interval_by_the_formula():
    # n = 50, the first rater passed 25, the second 30: chance 0.5, observed 0.7, kappa 0.4
    assert cohen_kappa(20, 15, 5, 10) == pytest.approx(0.4)
    low, high = kappa_interval(20, 15, 5, 10)
    half = 1.959963984540054 * (0.7 * 0.3 / 50) ** 0.5 / 0.5
    assert (low, high) == (pytest.approx(0.4 - half), pytest.approx(0.4 + half))
    assert cohen_kappa(0, 0, 0, 0) is None and kappa_interval(0, 0, 0, 0) is None
    assert cohen_kappa(12, 0, 0, 0) is None  # one answer throughout: undefined
    assert cohen_kappa(10, 10, 0, 0) == 1.0 and kappa_interval(10, 10, 0, 0) == (1.0, 1.0)
    assert kappa_interval(1, 0, 5, 5)[0] == -1.0  # held within [-1, 1]
