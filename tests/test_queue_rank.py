"""The review queue's ranking (index/queue_rank.py) on plain values: which tier, which order."""

from __future__ import annotations

from specengine.index.queue_rank import Overturns, is_borderline, rank_key, tier


def test_a_score_at_its_maximum_is_never_borderline():
    assert is_borderline(1.0, 0.05) is False  # a soft check at 1.00, 0.05 from a 0.95 line
    assert is_borderline(0.6, 0.1) is True
    assert is_borderline(0.45, 0.05) is True
    assert is_borderline(0.7, 0.2) is False
    assert is_borderline(None, 0.0) is False


def test_soft_checks_fall_last_whatever_their_reason():
    assert [tier(kind, False) for kind in ("regressed", "judge_overturned", "uncertain", "borderline")] == [
        "regressed",
        "soft",
        "soft",
        "soft",
    ]
    assert tier("uncertain", True) == "uncertain"


def test_a_judge_overturned_often_by_many_comes_before_one_overturned_once():
    often, once, rarely = Overturns(6, 14), Overturns(1, 1), Overturns(1, 14)
    assert often.bound > once.bound > rarely.bound
    items = {
        "rarely": ("judge_overturned", rarely.bound),
        "once": ("judge_overturned", once.bound),
        "often": ("judge_overturned", often.bound),
        "doubt": ("uncertain", None),
        "close": ("borderline", None),
        "regressed": ("regressed", None),
    }
    order = sorted(
        items,
        key=lambda name: rank_key(items[name][0], "2026-01-01T00:00:00Z", name, None, 0.05, items[name][1]),
    )
    assert order == ["regressed", "often", "once", "rarely", "doubt", "close"]
    assert often.words("judge closed_qa", "spec.yaml") == (
        "judge overturned: reviewers overturned “judge closed_qa” on 6 of 14 reviewed cases"
        " of spec.yaml (43%)"
    )


def test_within_a_tier_newer_runs_and_closer_scores_come_first():
    newer = rank_key("uncertain", "2026-02-01T00:00:00Z", "b", "x", None, None)
    older = rank_key("uncertain", "2026-01-01T00:00:00Z", "a", "x", None, None)
    assert newer < older
    closer = rank_key("borderline", "2026-01-01T00:00:00Z", "b", "x", 0.01, None)
    farther = rank_key("borderline", "2026-02-01T00:00:00Z", "a", "x", 0.08, None)
    assert closer < farther
