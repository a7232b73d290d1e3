"""`--shard auto` and `auto/N`: each CI engine's parallel-job variables read with its own numbering,
the engine named, and an error that names every variable looked for when none is set."""

from __future__ import annotations

import pytest

from specengine.engine.ci_shard import choose_shard


@pytest.mark.parametrize(
    ("shard", "environ", "share", "source"),
    [
        (
            "auto",
            {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "4"},
            (2, 4),
            "GitLab CI (CI_NODE_INDEX=2, CI_NODE_TOTAL=4)",
        ),
        ("auto", {"CI_NODE_TOTAL": "1"}, (1, 1), "GitLab CI (CI_NODE_INDEX=1, CI_NODE_TOTAL=1)"),
        ("auto", {"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "3"}, (1, 3), "CircleCI"),
        ("auto/5", {"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, (5, 5), "Buildkite"),
        (
            "auto/4",
            {"JOB_COMPLETION_INDEX": "3"},
            (4, 4),
            "a Kubernetes Indexed Job (JOB_COMPLETION_INDEX=3, auto/4)",
        ),
        ("2/4", {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4"}, (2, 4), None),  # written out: as written
    ],
)
def test_each_engine_is_read_with_its_own_numbering(shard, environ, share, source):
    chosen = choose_shard(shard, environ)
    assert chosen.share == share
    if source is None:
        assert chosen.source is None and chosen.said() == ""
    else:
        assert chosen.source.startswith(source)
        assert chosen.said().startswith(f"shard {share[0]}/{share[1]} from {source}")


@pytest.mark.parametrize(
    ("shard", "environ", "message"),
    [
        (
            "auto",
            {},
            "no CI engine's parallel-job variables are set; looked for GitLab CI (CI_NODE_INDEX and",
        ),
        ("auto", {"JOB_COMPLETION_INDEX": "1"}, "use --shard auto/N with N the Job's completions"),
        ("auto/3", {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4"}, "GitLab CI runs 4 jobs (CI_NODE_TOTAL=4)"),
        ("auto", {"CIRCLE_NODE_INDEX": "3", "CIRCLE_NODE_TOTAL": "3"}, "CIRCLE_NODE_INDEX=3 does not fit 3"),
        ("auto", {"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "2"}, "CI_NODE_INDEX is 'x', not a whole number"),
        ("auto/0", {"JOB_COMPLETION_INDEX": "0"}, "N is the number of shards"),
    ],
)
def test_what_cannot_be_read_is_said(shard, environ, message):
    with pytest.raises(ValueError) as caught:
        choose_shard(shard, environ)
    assert message in str(caught.value)
    if not environ:
        for name in ("CIRCLE_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB_COUNT", "JOB_COMPLETION_INDEX"):
            assert name in str(caught.value)
