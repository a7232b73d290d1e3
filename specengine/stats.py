"""The statistics reports state about pass rates, written out so that what they claim can be checked.

- **Percentile** (latency p50/p95): the nearest-rank percentile, the smallest value with at least
  p% of the values at or below it: `sorted(v)[ceil(p/100 · n) − 1]`. It is always a latency that
  was measured, never an interpolation between two.
- **Wilson score interval** (a pass rate's 95% interval): for k passes of n, p̂ = k/n and z = 1.96,
  centre = (p̂ + z²/2n) / (1 + z²/n), half-width = z/(1 + z²/n) · √(p̂(1 − p̂)/n + z²/4n²).
  Unlike p̂ ± z·√(p̂(1 − p̂)/n) it stays within [0, 1] and is not of width 0 at 0% or 100%, which
  matters at the sizes of eval suites (10 of 10 passed is 72%–100%, not 100%–100%).
- **Exact McNemar test** (two cells over the same cases): of the cases where the cells disagree, b
  passed only in the first and c only in the second. If neither is better, each disagreement is a
  fair coin: the two-sided p-value is min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c)). Cases both
  passed or both failed say nothing about which is better, and are left out.
- **Cohen's kappa** (a judge against people, over the same verdicts): with p_o the share of
  verdicts they agree on and p_e = (a₊·b₊ + a₋·b₋)/n² the share two raters with their pass rates
  would agree on by chance, κ = (p_o − p_e)/(1 − p_e); undefined when p_e = 1 (both raters gave one
  answer throughout). Its 95% interval is κ ± z·√(p_o(1 − p_o)/n)/(1 − p_e) (the large-sample
  standard error), within [−1, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Z_95 = 1.959963984540054  # the standard normal's 97.5th percentile
SIGNIFICANT = 0.05


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank p-th percentile (0 < p ≤ 100) of values; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def wilson_interval(passed: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of passed/n (95% by default); None when n is 0."""
    if n <= 0:
        return None
    rate = passed / n
    scale = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / scale
    half = z / scale * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar_exact(only_first: int, only_second: int) -> float:
    """The two-sided exact McNemar p-value for b = only_first, c = only_second discordant cases."""
    n = only_first + only_second
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_first, only_second) + 1))
    return min(1.0, 2 * tail / 2**n)


def cohen_kappa(both_passed: int, both_failed: int, only_first: int, only_second: int) -> float | None:
    """Cohen's kappa of two raters' pass/fail verdicts on the same items (only_first: the first said
    passed, the second failed); None when undefined (no items, or one answer throughout)."""
    chance, observed = _kappa_parts(both_passed, both_failed, only_first, only_second)
    if chance is None or chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def kappa_interval(
    both_passed: int, both_failed: int, only_first: int, only_second: int, z: float = Z_95
) -> tuple[float, float] | None:
    """Cohen's kappa's interval (95% by default), within [-1, 1]; None when kappa is undefined."""
    kappa = cohen_kappa(both_passed, both_failed, only_first, only_second)
    chance, observed = _kappa_parts(both_passed, both_failed, only_first, only_second)
    if kappa is None or chance is None:
        return None
    n = both_passed + both_failed + only_first + only_second
    error = math.sqrt(observed * (1 - observed) / n) / (1 - chance)
    return max(-1.0, kappa - z * error), min(1.0, kappa + z * error)


def _kappa_parts(
    both_passed: int, both_failed: int, only_first: int, only_second: int
) -> tuple[float | None, float]:
    """(chance agreement p_e, observed agreement p_o); p_e is None with no items."""
    n = both_passed + both_failed + only_first + only_second
    if not n:
        return None, 0.0
    first_pass, second_pass = both_passed + only_first, both_passed + only_second
    chance = (first_pass * second_pass + (n - first_pass) * (n - second_pass)) / (n * n)
    return chance, (both_passed + both_failed) / n
