"""The YAML loader (source.loader): PyYAML on libyaml's parser where installed, its own otherwise."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specengine.errors import SpecError
from specengine.source import loader
from specengine.source.loader import (
    ambiguous_scalars,
    as_text,
    discover,
    display_path,
    find_project_file,
    load_yaml,
    parse_yaml,
)


def error_of(text: str | bytes) -> str:
    with pytest.raises(SpecError) as caught:
        parse_yaml(text, "x.yaml")
    return str(caught.value.diagnostics[0])


# --- YAML 1.2 scalars and numbers that keep their text ---------------------------------------------


def test_yaml_11_surprises_stay_text():
    data = parse_yaml("a: no\nb: 12:30\nc: 2024-01-02\nd: on\ne: y\n", "x.yaml").data
    assert data == {"a": "no", "b": "12:30", "c": "2024-01-02", "d": "on", "e": "y"}


def test_numbers_and_booleans():
    data = parse_yaml("a: 1.10\nb: 0755\nc: 1e3\nd: true\ne: False\nf: ~\ng: -3\n", "x.yaml").data
    assert data == {"a": 1.1, "b": 755, "c": 1000.0, "d": True, "e": False, "f": None, "g": -3}
    assert (as_text(data["a"]), as_text(data["b"]), as_text(data["c"])) == ("1.10", "0755", "1e3")
    assert isinstance(data["d"], bool)


def test_merge_keys_are_not_duplicates():
    data = parse_yaml("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "x.yaml").data
    assert data["other"] == {"x": 1, "y": 3}


# --- located errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb:\n  c: 1\n  c: 2\n", "x.yaml:4:3: duplicate key 'c' (first defined on line 3)"),
        ("a:\n\tb: 1\n", "x.yaml:2:1: a tab is used for indentation here: YAML needs spaces"),
        (
            "a: b: c\n",
            "x.yaml:1:4: a colon and a space inside text start a new key in YAML: put the text in quotes:"
            ' a: "b: c"',
        ),
        (b"a: 1\nb: \xff\n", "x.yaml:2:1: the file is not UTF-8 text"),
        ("a: 1\nb: \x00\n", "x.yaml:2:1: the file holds a NUL byte: it is not a text file"),
    ],
    ids=["duplicate key", "tab", "syntax", "not UTF-8", "NUL byte"],
)
def test_errors_are_located_and_worded(text, message):
    assert error_of(text) == message


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("a: [1, 2\n", "x.yaml:2:1: expected ',' or ']'"),
        ("? [a, b]\n: 1\n", "x.yaml:1:3: a mapping key must be text"),
    ],
)
def test_errors_are_located_with_yamls_own_words(text, start):
    assert error_of(text).startswith(start)


def test_empty_and_unreadable_files(tmp_path):
    empty = tmp_path / "e.yaml"
    empty.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_yaml(empty, "e.yaml")
    assert str(caught.value) == "e.yaml:1:1: the file is empty"
    with pytest.raises(SpecError) as caught:
        load_yaml(tmp_path / "missing.yaml", "missing.yaml")
    assert str(caught.value).startswith("missing.yaml:1:1: cannot read the file")


def test_deep_nesting_is_an_error_not_a_crash():
    assert "nested too deeply" in error_of("a: " + "[" * 5000 + "]" * 5000 + "\n")


# --- positions -------------------------------------------------------------------------------------


def test_positions_of_values_and_keys():
    document = parse_yaml("evals:\n  - name: a\n    send: |\n      hi\n", "x.yaml")
    assert document.position(("evals", 0, "name")) == (2, 11)
    assert document.position(("evals", 0, "missing")) == (2, 5)  # the deepest existing parent
    assert document.diagnostic(("evals", 0, "send"), "m", at_key=True).line == 3
    assert document.diagnostic(("evals", 0, "send"), "m", at_key=True).col == 5


def test_ambiguous_scalars_finds_plain_values_and_keys_only():
    document = parse_yaml('a: yes\nb: "no"\nc: [12:30, x]\nOn: 1\nd: 2024-01-02\n', "x.yaml")
    found = sorted(
        (path, node.value, kind, is_key) for path, node, kind, is_key in ambiguous_scalars(document.root)
    )
    assert found == [
        (("On",), "On", "a yes/no word", True),
        (("a",), "yes", "a yes/no word", False),
        (("c", 0), "12:30", "a time (YAML 1.1 reads 7:30 as the number 450)", False),
        (("d",), "2024-01-02", "a date", False),
    ]


# --- discovery and project files -------------------------------------------------------------------


def test_discover_skips_data_folders_hidden_files_and_the_project_file(tmp_path):
    for name in (
        "specs/a.yaml",
        "specs/b.yml",
        "specs/data/rows.yaml",
        "specs/.hidden.yaml",
        "specengine.yaml",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x: 1\n", encoding="utf-8")
    found = discover([tmp_path, tmp_path / "specengine.yaml", tmp_path / "nope"])
    assert [p.relative_to(tmp_path).as_posix() for p in found.specs] == ["specs/a.yaml", "specs/b.yml"]
    assert found.project_files == (tmp_path / "specengine.yaml",)
    assert found.missing == (str(tmp_path / "nope"),)


def test_find_project_file_is_the_nearest_and_stops_at_git(tmp_path):
    (tmp_path / "specengine.yaml").write_text("{}\n")
    (tmp_path / "repo" / "specs" / "deep").mkdir(parents=True)
    assert find_project_file(tmp_path / "repo" / "specs" / "deep") == tmp_path / "specengine.yaml"
    (tmp_path / "repo" / ".git").mkdir()
    assert find_project_file(tmp_path / "repo" / "specs" / "deep") is None
    (tmp_path / "repo" / "specs" / "specengine.yaml").write_text("{}\n")
    assert (
        find_project_file(tmp_path / "repo" / "specs" / "deep")
        == tmp_path / "repo" / "specs" / "specengine.yaml"
    )


def test_display_path_is_relative_to_the_base_else_the_working_folder(tmp_path, monkeypatch):
    file = tmp_path / "proj" / "specs" / "a.yaml"
    assert display_path(file, tmp_path / "proj") == "specs/a.yaml"
    monkeypatch.chdir(tmp_path)
    assert display_path(file) == "proj/specs/a.yaml"
    assert display_path(Path("/elsewhere/b.yaml"), tmp_path / "proj") == "/elsewhere/b.yaml"


# --- libyaml's parser gives what PyYAML's own gives --------------------------------------------------


def same(a, b) -> bool:
    """Equal data with equal types, numbers spelled the same (1.10 is not 1.1 here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        # pairwise, in order: keys may be NaN, which no lookup finds
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b and as_text(a) == as_text(b)


def nodes(root):
    """(kind, tag, style, line, col) of every node, depth first."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        out.append(
            (
                type(node).__name__,
                node.tag,
                getattr(node, "style", None) or None,  # plain: None in PyYAML, '' in libyaml
                node.start_mark.line,
                node.start_mark.column,
            )
        )
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return out


def sharing(data: Any) -> list[tuple[tuple, tuple]]:
    """(path, path of the same object seen first) for every list or mapping reached twice: an alias
    gives the anchored object itself, not a copy."""
    first: dict[int, tuple] = {}
    out: list[tuple[tuple, tuple]] = []
    stack: list[tuple[Any, tuple]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if id(value) in first:
            out.append((path, first[id(value)]))
            continue
        first[id(value)] = path
        items = enumerate(value.values()) if isinstance(value, dict) else enumerate(value)
        stack.extend((item, (*path, index)) for index, item in items)
    return out


def pure_python(text: str) -> Any:
    """parse_yaml without libyaml."""
    fast, loader._FAST_LOADER = loader._FAST_LOADER, None
    try:
        return parse_yaml(text, "x.yaml")
    finally:
        loader._FAST_LOADER = fast


def _library_nodes(text: str, loader_class: type) -> list | str:
    """The node tree PyYAML composes with `loader_class` alone (none of our rules), or "error"."""
    try:
        return nodes(yaml.compose(text, Loader=loader_class))
    except Exception:  # any refusal counts: the question is only whether both refuse
        return "error"


def libraries_agree(text: str) -> bool:
    """Whether libyaml and PyYAML's pure-Python parser themselves read `text` alike. Where they do
    not (a tab after `k: `, the column of an empty value), a file reads as libyaml reads it, as
    PyYAML documents for its C loader: no rule of ours is in question."""
    return _library_nodes(text, yaml.SafeLoader) == _library_nodes(text, yaml.CSafeLoader)


def agree(text: str) -> str:
    """libyaml's parse and PyYAML's own give the same data, node tree and ambiguous scalars (or
    the same error, which PyYAML's own words). Returns "error", "parsed", or "libraries differ"
    where the two parsers themselves differ."""
    if not libraries_agree(text):
        return "libraries differ"
    try:
        expected = pure_python(text)
    except SpecError as exc:
        with pytest.raises(SpecError) as caught:
            parse_yaml(text.encode("utf-8", "surrogatepass"), "x.yaml")
        assert caught.value.diagnostics == exc.diagnostics
        return "error"
    got = parse_yaml(text.encode("utf-8", "surrogatepass"), "x.yaml")
    assert same(got.data, expected.data), (text, got.data, expected.data)
    assert sharing(got.data) == sharing(expected.data), text
    assert nodes(got.root) == nodes(expected.root), text
    found = [(path, kind, is_key) for path, _, kind, is_key in ambiguous_scalars(got.root)]
    assert found == [(path, kind, is_key) for path, _, kind, is_key in ambiguous_scalars(expected.root)]
    return "parsed"


def test_libyaml_is_used_where_pyyaml_has_it():
    assert loader._FAST_LOADER is not None  # the test environment's PyYAML is built with libyaml


TRICKY = [
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "12:30",
    "-1:20:30.5",
    "2024-01-02",
    "2024-01-02T10:00:00Z",
    "0755",
    "1.10",
    "1e3",
    "-.5",
    "+1",
    ".inf",
    "-.Inf",
    ".nan",
    "0x1F",
    "0o17",
    "1_000",
    "~",
    "null",
    "Null",
    "",
    "true",
    "False",
    "TRUE",
    "<<",
    "=",
    "!!str 12",
    "!!int '7'",
    "!!float 1",
    "&a x",
    "*a",
    "'quoted'",
    '"dq\\n"',
    "{a: 1}",
    "[1, 2]",
    "|\n  block",
    ">-\n  folded",
    "plain text",
    "{{ input.city }}",
    "a: b",
    "- x",
]


def test_libyaml_agrees_on_tricky_scalars():
    for value in TRICKY:
        agree(f"k: {value}\n")
        agree(f"- {value}\n")
        agree(f"{value}: v\n")
    agree("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n")
    agree("a: &x [1, 2]\nb: *x\n")
    agree("a: 1\na: 2\n")
    agree("!!set {a, b}\n")
    agree("a: !custom 1\n")
    agree("a:\n\tb: 1\n")
    agree("")
    agree("# only\n")
    agree("a: " + "[" * 3000 + "]" * 3000 + "\n")


words = st.sampled_from(
    TRICKY + ["name", "send", "evals", "x", "1", "é", "  ", "#c", ":", "-", "?", "\t", "'", '"']
)
lines = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["", "- ", "k: ", "? ", ": "]), words),
    min_size=0,
    max_size=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines)
def test_libyaml_agrees_on_random_yaml(parts):
    agree("".join(f"{'  ' * indent}{lead}{word}\n" for indent, lead, word in parts))


json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(json_like, st.booleans())
def test_libyaml_agrees_on_dumped_data(data, flow):
    agree(yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True))


# --- spec-like YAML in every style: block and flow, quoted and block scalars, anchors and comments ---

_WORDS = [*TRICKY[:30], "name", "send", "evals", "Paris", "hello world", "{{ input.city }}", "x: y", "#"]
_KEYS = st.sampled_from(["name", "send", "expect", "input", "city", "yes", "12:30", "1.10", "7", "<<", "k"])


def _scalar(word: str, style: str) -> str:
    if style == "'":
        return "'" + word.replace("'", "''") + "'"
    if style == '"':
        return json.dumps(word)
    return word


_scalars = st.tuples(
    st.just("scalar"), st.sampled_from(["plain", "plain", "'", '"', "|", ">"]), st.sampled_from(_WORDS)
)
_trees = st.recursive(
    _scalars | st.tuples(st.just("alias"), st.integers(0, 3)),
    lambda inner: st.tuples(
        st.sampled_from(["map", "seq"]),
        st.sampled_from(["block", "block", "flow"]),
        st.lists(st.tuples(_KEYS, inner), max_size=4),
        st.sampled_from(["", "", "&a "]),
        st.sampled_from(["", "", "  # note"]),
    ),
    max_leaves=20,
)


class _Renderer:
    """YAML text for a generated tree; an alias names an anchor whose node is complete (no cycles)."""

    def __init__(self) -> None:
        self.opened = 0
        self.done: list[str] = []

    def _open(self, anchor: str) -> str:
        if not anchor:
            return ""
        self.opened += 1
        return f"a{self.opened - 1}"

    def _close(self, name: str) -> str:
        if name:
            self.done.append(name)
        return f"&{name} " if name else ""

    def inline(self, node: tuple) -> str | None:
        """The node on one line (flow style), or None when it must be a block."""
        if node[0] == "alias":
            return f"*{self.done[node[1] % len(self.done)]}" if self.done else "x"
        if node[0] == "scalar":
            return None if node[1] in ("|", ">") else _scalar(node[2], node[1])
        kind, style, items, anchor, _ = node
        if style != "flow" or any(self.inline(value) is None for _, value in items):
            return None
        name = self._open(anchor)
        parts = [str(self.inline(value)) for _, value in items]
        if kind == "map":
            pairs = [f"{key}: {part}" for (key, _), part in zip(items, parts, strict=True)]
            return self._close(name) + "{" + ", ".join(pairs) + "}"
        return self._close(name) + "[" + ", ".join(parts) + "]"

    def after(self, lead: str, node: tuple, indent: int) -> list[str]:
        """Lines for `lead` (a key with its colon, or a dash) followed by the node."""
        text = self.inline(node)
        if text is not None:
            return [f"{lead} {text}"]
        if node[0] == "scalar":  # a block scalar
            return [f"{lead} {node[1]}", *(" " * (indent + 2) + line for line in node[2].split(" "))]
        kind, _, items, anchor, comment = node
        if not items:
            return [f"{lead} {'{}' if kind == 'map' else '[]'}"]
        name = self._open(anchor)
        body = self.block(node, indent + 2)
        return [f"{lead} {self._close(name)}".rstrip() + comment, *body]

    def block(self, node: tuple, indent: int) -> list[str]:
        kind, _, items, _, _ = node
        pad = " " * indent
        lines: list[str] = []
        for key, value in items:
            lines.extend(self.after(f"{pad}{key}:" if kind == "map" else f"{pad}-", value, indent))
        return lines


def spec_like_yaml(tree: tuple) -> str:
    renderer = _Renderer()
    if tree[0] in ("map", "seq") and tree[2]:
        return "\n".join(renderer.block(tree, 0)) + "\n"
    return "\n".join(renderer.after("k:", tree, 0)) + "\n"


def test_libyaml_agrees_on_generated_spec_like_yaml():
    ways: Counter[str] = Counter()

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_trees)
    def check(tree):
        ways[agree(spec_like_yaml(tree))] += 1

    check()
    # the generator must make many documents that parse, and some that do not
    assert ways["parsed"] >= 0.4 * sum(ways.values()), ways
    assert ways["error"], ways


def test_single_letters_y_and_n_are_plain_keys_not_booleans():
    from specengine.source.loader import ambiguous_scalars, parse_yaml

    document = parse_yaml("args: {x: 1, y: 2, n: 3}\nanswer: yes\n", "s.yaml")
    assert document.data["args"] == {"x": 1, "y": 2, "n": 3}
    assert [node.value for _, node, _, _ in ambiguous_scalars(document.root)] == ["yes"]


@pytest.mark.parametrize("text", ["k: \t\n", "send: {name: }\n"])
def test_where_the_parsers_themselves_differ_a_file_reads_as_libyaml_reads_it(text):
    assert agree(text) == "libraries differ"
    assert parse_yaml(text, "x.yaml").data == yaml.load(text, Loader=yaml.CSafeLoader)
