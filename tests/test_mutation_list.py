"""tests/mutation-equivalent.txt kept true: every mutant it lists still exists, and every module mutmut
mutates was looked at since it last changed (the list holds each module's hash as it was then).

A module changed without a look would let a new survivor (a check that no test holds) in unnoticed;
a listed mutant that no longer exists is a reason nobody checks any more.
"""

from __future__ import annotations

import pytest
from support.mutation import LIST, SCRIPT, configured_modules, module_hash, module_of, mutant_names, read_list

pytest.importorskip("mutmut", reason="mutmut is in the test extra: pip install '.[test]'")

LISTED = read_list()
MODULES = configured_modules()


def test_the_list_reads():
    assert LISTED.problems == []


def test_the_configured_modules_are_the_check_engine():
    assert "specengine/grade/arg_matchers.py" in MODULES
    others = {"specengine/results/model.py", "specengine/judge/answer.py", "specengine/judge/samples.py"}
    assert others | {"specengine/redact.py"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_each_module_was_looked_at_since_it_changed(module):
    recorded = LISTED.hashes.get(module)
    assert recorded == module_hash(module), (
        f"{module} changed since tests/{LIST.name} was last looked at (or was never looked at). "
        f"Run `{SCRIPT} run {module}`: it mutates the module, lists each survivor with its change, "
        f"and records the module's new hash once every survivor is killed by a test or listed in "
        f"tests/{LIST.name} with the reason no test can tell it apart. For a change that cannot add a "
        f"survivor (a docstring, a comment), `{SCRIPT} refresh {module}` records the hash after a look."
    )


def test_the_list_holds_only_configured_modules():
    stray = sorted(set(LISTED.hashes) - set(MODULES)) + sorted(
        {module_of(name) for name in LISTED.reasons} - set(MODULES)
    )
    assert stray == [], f"tests/{LIST.name} names modules [tool.mutmut] does not mutate: take them off"


@pytest.mark.parametrize("module", sorted({module_of(name) for name in LISTED.reasons} & set(MODULES)))
def test_each_listed_mutant_still_exists(module):
    listed = {name for name in LISTED.reasons if module_of(name) == module}
    gone = sorted(listed - mutant_names(module))
    assert gone == [], (
        f"tests/{LIST.name} lists mutants mutmut no longer makes of {module}: "
        + ", ".join(f"line {LISTED.lines[name]} {name}" for name in gone)
        + f"; take them off (run `{SCRIPT} run {module}` to see what survives now)"
    )
