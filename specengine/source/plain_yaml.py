"""Plain spec YAML turned into data by hand on libyaml's node tree: parse_yaml's result, faster.

`specengine validate` reads every spec on every commit (pre-commit). libyaml (PyYAML's C parser)
composes the node tree; then, instead of SpecLoader's constructors, `_to_data` turns a plain document
(maps, lists, text, numbers, booleans, nulls, aliases) into exactly the data source.parse_yaml gives
(same types, YamlInt/YamlFloat keeping their text, same positions), collecting YAML 1.1's ambiguous
scalars on the way. On 1,000 realistic specs that makes `specengine validate` about a fifth faster
than PyYAML's constructors on the same tree (bench/yaml_load_bench.py prints both).

Anything unusual (merge keys, explicit tags, duplicate keys) goes through SpecLoader's own
constructors; tabs, NUL bytes and every error go to source.parse_yaml itself, whose messages are
the ones users see. Hypothesis tests (tests/test_loader.py) hold this module to parse_yaml.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError
from specengine.source.loader import (
    AMBIGUOUS_SCALAR,
    MAX_DOCUMENT_BYTES,
    Ambiguous,
    Document,
    SpecLoader,
    YamlFloat,
    YamlInt,
    parse_yaml,
)


def _libyaml_loader_class() -> type | None:
    """SpecLoader's resolvers and constructors on libyaml's parser (about 10x faster), or None.

    The C parser only tokenises and composes; scalars are still resolved by SpecLoader's own tables,
    so the node tree is the same. Errors are re-parsed by the pure-Python loader, whose messages
    (tabs, duplicate keys) are the ones users see.
    """
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml
        return None

    resolve_uncached = yaml.resolver.Resolver.resolve

    class LibyamlSpecLoader(CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        # Resolution depends only on the scalar's text and whether it was plain (there are no path
        # resolvers), and spec files repeat the same keys and words: remember the answers.
        tags: dict[tuple[str, bool], str] = {}

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

        def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
            if kind is not yaml.ScalarNode:
                return resolve_uncached(self, kind, value, implicit)
            key = (value, implicit[0])
            tag = self.tags.get(key)
            if tag is None:
                if len(self.tags) > 200_000:
                    self.tags.clear()
                tag = self.tags[key] = resolve_uncached(self, kind, value, implicit)
            return tag

    LibyamlSpecLoader.yaml_implicit_resolvers = SpecLoader.yaml_implicit_resolvers
    LibyamlSpecLoader.yaml_constructors = SpecLoader.yaml_constructors
    assert not LibyamlSpecLoader.yaml_path_resolvers
    return LibyamlSpecLoader


LIBYAML_LOADER = _libyaml_loader_class()


# what a bad document raises while libyaml composes it or the constructors build it
_PARSE_ERRORS = (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError)


def parse_document(raw: bytes, display: str, file: Path | None = None) -> Document:
    """Parse YAML bytes exactly like source.parse_yaml (same data, types and positions), faster.

    Errors are reported by the pure-Python loader, with its messages.
    """
    return _parse(raw, display, file)[0]


def _parse(raw: bytes, display: str, file: Path | None = None) -> tuple[Document, Ambiguous | None]:
    """The document, and its ambiguous scalars when the fast path found them on the way."""
    if LIBYAML_LOADER is not None and b"\x00" not in raw and len(raw) <= MAX_DOCUMENT_BYTES:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = None
        if text is not None and "\t" not in text:
            loader = LIBYAML_LOADER(text)
            try:
                root = loader.get_single_node()
                if root is None:
                    return Document(path=display, data=None, root=None, file=file), []
                found: Ambiguous = []
                ambiguous: Ambiguous | None = found
                try:
                    data = _to_data(root, {}, set(), found)
                except _Unusual:
                    if not plain_style_as_none(root):  # before merge keys flatten the mappings
                        raise _LocatedDifferently from None
                    data = loader.construct_document(root)
                    ambiguous = None
                return Document(path=display, data=data, root=root, file=file), ambiguous
            except (_LocatedDifferently, *_PARSE_ERRORS):
                pass  # parse_yaml below places every node as PyYAML does, or words the error
            finally:
                loader.dispose()
    return parse_yaml(raw, display, file=file), None


class _Unusual(Exception):
    """A document `_to_data` leaves to SpecLoader's constructors."""


class _LocatedDifferently(Exception):
    """A node libyaml places elsewhere than PyYAML: an empty value in a flow mapping (`{a: }`) starts
    at the next token for libyaml, right after the colon for PyYAML. Such a rare document is parsed
    by source.parse_yaml, so every position is the same whichever parser read the file."""


def _empty_plain(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.value == "" and not node.style


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_PLAIN_INT = re.compile(r"^[-+]?[0-9]+$")
_PLAIN_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_AMBIGUOUS_START = frozenset("yYnNoO+-0123456789")  # the first characters AMBIGUOUS_SCALAR can match


def _to_data(
    node: yaml.Node, memo: dict[int, Any], active: set[int], ambiguous: Ambiguous, key: bool = False
) -> Any:
    """SpecLoader's data for a composed node (YamlInt/YamlFloat keep their text), plus libyaml's
    plain style '' set to None as PyYAML has it, collecting the scalars source.ambiguous_scalars
    would yield. Raises _Unusual for anything else."""
    if isinstance(node, yaml.ScalarNode):
        tag, value = node.tag, node.value
        if node.style == "":
            node.style = None
            if tag == _STR_TAG and value and value[0] in _AMBIGUOUS_START and AMBIGUOUS_SCALAR.match(value):
                ambiguous.append((node, key))
        if tag == _STR_TAG:
            return value
        if tag == _INT_TAG and _PLAIN_INT.match(value):
            number = YamlInt(int(value))
            number.source_text = value
            return number
        if tag == _FLOAT_TAG and _PLAIN_FLOAT.match(value):
            real = YamlFloat(float(value))
            real.source_text = value
            return real
        if tag == _BOOL_TAG and value in ("true", "True", "TRUE", "false", "False", "FALSE"):
            return value in ("true", "True", "TRUE")
        if tag == _NULL_TAG:
            return None
        raise _Unusual
    ident = id(node)
    if ident in memo:  # an alias: the same object, as PyYAML shares it
        return memo[ident]
    if ident in active:
        raise _Unusual
    active.add(ident)
    if isinstance(node, yaml.MappingNode) and node.tag == _MAP_TAG:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                raise _Unusual
            if node.flow_style and (_empty_plain(key_node) or _empty_plain(value_node)):
                raise _LocatedDifferently
            name = _to_data(key_node, memo, active, ambiguous, True)
            if name in result:
                raise _Unusual  # a duplicate key: SpecLoader words the error
            result[name] = _to_data(value_node, memo, active, ambiguous)
    elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ_TAG:
        result = [_to_data(item, memo, active, ambiguous) for item in node.value]  # type: ignore[assignment]
    else:
        raise _Unusual
    active.discard(ident)
    memo[ident] = result
    return result


def plain_style_as_none(root: yaml.Node | None) -> bool:
    """libyaml marks plain scalars with style '' where PyYAML uses None; make them agree. False when
    the tree holds a node libyaml places elsewhere than PyYAML (see _LocatedDifferently)."""
    same_places = True
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            if node.style == "":
                node.style = None
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if node.flow_style and (_empty_plain(key) or _empty_plain(value)):
                    same_places = False
                stack.append(key)
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return same_places


def read_document(file: Path, display: str) -> tuple[Document, str, Ambiguous | None]:
    """A spec file read and parsed: (document, its text for column hints, its ambiguous scalars).

    An unreadable or empty file is a located SpecError, so validate reports it beside the others.
    """
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise SpecError(Diagnostic(display, 1, 1, f"cannot read the file: {exc.strerror or exc}")) from None
    document, ambiguous = _parse(raw, display, file)
    if document.root is None:
        raise SpecError(Diagnostic(display, 1, 1, "the file is empty"))
    return document, raw.decode("utf-8-sig", errors="replace"), ambiguous
