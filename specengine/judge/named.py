"""Named judges: rubrics a project file defines once under `judges:` and specs use by name.

A named judge's kind follows from its rubric: `criteria` makes a closed_qa judge, `expected` a
factuality judge, `prompt` and `choices` a custom one. Compilation (compile.judge_specs) and
validation (validation.judge_checks) read the definitions through these functions. Only stdlib:
`validate` imports this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JUDGES_KEY = "judges"
KIND_BY_RUBRIC = (("criteria", "closed_qa"), ("expected", "factuality"), ("prompt", "custom"))


def named_judges(project_data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `judges:` mapping of a project file's data (empty when it has none)."""
    judges = project_data.get(JUDGES_KEY)
    return judges if isinstance(judges, Mapping) else {}


def kind_of_named(definition: Mapping[str, Any]) -> str | None:
    """The kind of judge a named judge's rubric makes, or None when it has no rubric."""
    return next((kind for key, kind in KIND_BY_RUBRIC if key in definition), None)
