"""Reading YAML with a position for every value, and finding spec files.

The loader reads YAML 1.2-core scalars on top of PyYAML's safe loader (`no` stays text, `12:30`
stays text, dates stay text), on libyaml's parser where PyYAML has it, rejects duplicate keys, and
keeps the composed node tree so that every later stage can point at the line and column of any
value. It knows nothing of what a spec means.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError
from specengine.source.yaml_aliases import refuse_alias_bomb
from specengine.source.yaml_errors import (
    mark_diagnostic,
    marked_error_diagnostic,
    reader_diagnostic,
    yaml_error_message,
)

PROJECT_FILE = "specengine.yaml"
YAML_SUFFIXES = (".yaml", ".yml")
MAX_DOCUMENT_BYTES = 20 * 1024 * 1024

KeyPath = tuple[str | int, ...]


class YamlInt(int):
    """An int that remembers how it was written, so `1.10` or `007` can be read back as text."""

    source_text: str


class YamlFloat(float):
    """A float that remembers how it was written (`1.10` stays `1.10` where text is expected)."""

    source_text: str


def as_text(value: Any) -> str:
    """The text a scalar was written as: numbers keep their source spelling."""
    source = getattr(value, "source_text", None)
    if source is not None:
        return source
    return value if isinstance(value, str) else str(value)


def kind_of(value: Any) -> str:
    """How a value reads to a spec author: 'text', 'a number', 'a list', ..."""
    if value is None:
        return "empty"
    return next((word for kind, word in _KIND_WORDS if isinstance(value, kind)), type(value).__name__)


_KIND_WORDS = (  # bool before int: True is an int too
    (bool, "true/false"),
    (int, "a whole number"),
    (float, "a number"),
    (str, "text"),
    (list, "a list"),
    (dict, "a mapping"),
)


_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_12 = re.compile(r"^[-+]?[0-9]+$")
_FLOAT_12 = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_DROPPED_TAGS = {
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
}

# Plain scalars that YAML 1.1 tools (and many editors, and people) read as something other than text.
AMBIGUOUS_SCALAR = re.compile(
    r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?"
    r"|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?)$"
)
AMBIGUOUS_KINDS = (
    (re.compile(r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$"), "a yes/no word"),
    (re.compile(r"^[0-9]{4}-"), "a date"),
    (re.compile(r"^[-+]?[0-9]"), "a time (YAML 1.1 reads 7:30 as the number 450)"),
)


class SpecLoader(yaml.SafeLoader):
    """Safe YAML with 1.2-core scalars, numbers that keep their text, and no duplicate keys."""


SpecLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _DROPPED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
SpecLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL_12, list("tTfF"))
SpecLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT_12, list("-+0123456789"))
SpecLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_12, list("-+.0123456789"))


def _construct_int(loader: SpecLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node)
    if node.tag != "tag:yaml.org,2002:int" or not _INT_12.match(text):
        return yaml.SafeLoader.construct_yaml_int(loader, node)
    value = YamlInt(int(text))
    value.source_text = text
    return value


def _construct_float(loader: SpecLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node)
    value = YamlFloat(yaml.SafeLoader.construct_yaml_float(loader, node))
    value.source_text = text
    return value


def _is_unquoted_template(node: yaml.MappingNode, key_node: yaml.Node) -> bool:
    """`send: {{ input.city }}` unquoted: YAML reads a mapping whose first key is a mapping."""
    return (
        bool(node.flow_style)
        and isinstance(key_node, yaml.MappingNode)
        and key_node.start_mark.index == node.start_mark.index + 1
    )


def _quoted_source(node: yaml.Node) -> str:
    """The node as written, on one line and in double quotes: what the user should have typed."""
    buffer = getattr(node.start_mark, "buffer", None)
    if not isinstance(buffer, str):
        return '"{{ ... }}"'
    return json.dumps(" ".join(buffer[node.start_mark.pointer : node.end_mark.pointer].split())[:80])


def _construct_mapping_without_duplicates(loader: SpecLoader, node: yaml.MappingNode) -> dict:
    # flatten_mapping puts the pairs merged in by `<<: *base` first; the mapping's own keys follow
    # and may override them, so only the own keys are checked for duplicates
    own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)
    merged = len(node.value) - own
    seen: dict[Any, yaml.Mark] = {}
    result: dict[Any, Any] = {}
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            message = "a mapping key must be text, not a list or mapping"
            if _is_unquoted_template(node, key_node):
                message = f"a value that starts with {{{{ must be in quotes: write {_quoted_source(node)}"
            raise yaml.constructor.ConstructorError(None, None, message, key_node.start_mark) from None
        if index >= merged:
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key '{key}' (first defined on line {seen[key].line + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        result[key] = loader.construct_object(value_node, deep=True)
    return result


SpecLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
SpecLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
SpecLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_without_duplicates)


def _libyaml_loader() -> type | None:
    """SpecLoader on libyaml's parser (PyYAML's CSafeLoader, with SpecLoader's resolvers and
    constructors), or None when PyYAML was built without libyaml. It parses several times faster;
    a document it refuses is parsed again by SpecLoader, whose error messages people read."""
    try:
        from yaml._yaml import CParser
    except ImportError:
        return None

    class CSpecLoader(CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    CSpecLoader.yaml_implicit_resolvers = SpecLoader.yaml_implicit_resolvers
    CSpecLoader.yaml_constructors = SpecLoader.yaml_constructors
    return CSpecLoader


_FAST_LOADER = _libyaml_loader()


@dataclass(frozen=True)
class Document:
    """A parsed YAML file: the plain data, the node tree it came from, and the name to report."""

    path: str
    data: Any
    root: yaml.Node | None = field(repr=False, compare=False)
    file: Path | None = field(default=None, compare=False)

    def node_at(self, key_path: Iterable[str | int]) -> yaml.Node | None:
        """The deepest node along key_path (stops at the last one that exists)."""
        return node_at(self.root, key_path)

    def key_node_at(self, key_path: KeyPath) -> yaml.Node | None:
        """The node of the *key* that holds key_path's last step, for pointing at a key itself."""
        if not key_path:
            return self.root
        parent = node_at(self.root, key_path[:-1], exact=True)
        if isinstance(parent, yaml.MappingNode):
            for key_node, _ in parent.value:
                if getattr(key_node, "value", None) == key_path[-1]:
                    return key_node
        return node_at(self.root, key_path)

    def position(self, key_path: Iterable[str | int] = ()) -> tuple[int, int]:
        """1-based (line, col) of the value at key_path, or of the deepest existing parent."""
        node = self.node_at(key_path)
        if node is None:
            return 1, 1
        return node.start_mark.line + 1, node.start_mark.column + 1

    def line(self, key_path: Iterable[str | int] = ()) -> int:
        return self.position(key_path)[0]

    def diagnostic(self, key_path: Iterable[str | int], message: str, *, at_key: bool = False) -> Diagnostic:
        """A Diagnostic at key_path's value (or at its key, with at_key)."""
        node = self.key_node_at(tuple(key_path)) if at_key else self.node_at(key_path)
        if node is None:
            return Diagnostic(self.path, 1, 1, message)
        return Diagnostic(self.path, node.start_mark.line + 1, node.start_mark.column + 1, message)


def node_at(root: yaml.Node | None, key_path: Iterable[str | int], exact: bool = False) -> yaml.Node | None:
    """Follow key_path through a composed tree; the deepest node reached (None with exact if lost)."""
    node = root
    for part in key_path:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
            if child is None and not isinstance(part, str):
                child = next((v for k, v in node.value if getattr(k, "value", None) == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            child = node.value[part]
        if child is None:
            return None if exact else node
        node = child
    return node


def display_path(file: Path, base: Path | None = None) -> str:
    """The path as shown to people and used in case ids: relative to base (else cwd), with '/'."""
    relative = relative_path(file, base)
    return (relative or file).as_posix()


def relative_path(file: Path, base: Path | None) -> Path | None:
    """The file relative to base (else the working folder); None when it is below neither."""
    resolved = file.resolve()
    for anchor in (base, Path.cwd()):
        if anchor is not None and resolved.is_relative_to(resolved_anchor := anchor.resolve()):
            return resolved.relative_to(resolved_anchor)
    return None


def shown_path(file: Path, cwd: Path) -> str:
    """A file's path as messages show it: relative to the folder the command runs in, or absolute
    when the file is outside it (never relative to some other folder, which a reader cannot tell)."""
    resolved = file.resolve()
    try:
        return resolved.relative_to(cwd).as_posix()
    except ValueError:
        return resolved.as_posix()


def parse_yaml(text: str | bytes, path: str, *, file: Path | None = None) -> Document:
    """Parse one YAML document with positions. Raises SpecError with a located message."""
    if isinstance(text, bytes):
        raw = text
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise SpecError(Diagnostic(path, line, 1, "the file is not UTF-8 text")) from None
    if len(text) > MAX_DOCUMENT_BYTES:
        raise SpecError(Diagnostic(path, 1, 1, "the file is larger than 20 MB; split it"))
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise SpecError(Diagnostic(path, line, 1, "the file holds a NUL byte: it is not a text file"))
    if _FAST_LOADER is not None:
        fast = _FAST_LOADER(text)
        try:
            root = fast.get_single_node()
            refuse_alias_bomb(path, text, root)
            data = fast.construct_document(root) if root is not None else None
            return Document(path=path, data=data, root=root, file=file)
        except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError):
            pass  # SpecLoader below words the error
        finally:
            fast.dispose()
    try:
        loader = SpecLoader(text)  # the reader rejects control characters right here
    except yaml.reader.ReaderError as exc:
        raise SpecError(reader_diagnostic(path, text, exc)) from None
    loader.name = path
    try:
        root = loader.get_single_node()
        refuse_alias_bomb(path, text, root)
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as exc:
        raise SpecError(marked_error_diagnostic(path, exc)) from None
    except yaml.reader.ReaderError as exc:
        raise SpecError(reader_diagnostic(path, text, exc)) from None
    except yaml.YAMLError as exc:
        raise SpecError(Diagnostic(path, 1, 1, yaml_error_message(exc))) from None
    except RecursionError:
        raise SpecError(Diagnostic(path, 1, 1, "the YAML is nested too deeply")) from None
    except (ValueError, TypeError, OverflowError) as exc:  # an explicit tag whose text does not fit it
        node = _explicitly_tagged(loader, root)
        mark = node.start_mark if node is not None else None
        tag = node.tag.rsplit(":", 1)[-1] if node is not None else "tag"
        raise SpecError(mark_diagnostic(path, mark, f"this value cannot be read as !!{tag}: {exc}")) from None
    finally:
        loader.dispose()
    return Document(path=path, data=data, root=root, file=file)


def _explicitly_tagged(loader: SpecLoader, root: yaml.Node | None) -> yaml.Node | None:
    """The first scalar whose tag was written out (`!!float x`) rather than inferred."""
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop(0)
        if isinstance(node, yaml.ScalarNode):
            if node.tag != loader.resolve(yaml.ScalarNode, node.value, (True, False)):
                return node
        elif isinstance(node, yaml.MappingNode):
            stack.extend(item for pair in node.value for item in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def load_yaml(file: Path, path: str | None = None) -> Document:
    """Read and parse a YAML file; empty or unreadable files are located errors."""
    return load_yaml_text(file, path)[0]


def load_yaml_text(file: Path, path: str | None = None) -> tuple[Document, str]:
    """`load_yaml`, with the file's text as well (for hints that quote a line)."""
    shown = path or display_path(file)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise SpecError(Diagnostic(shown, 1, 1, f"cannot read the file: {exc.strerror or exc}")) from None
    document = parse_yaml(raw, shown, file=file)
    if document.root is None:
        raise SpecError(Diagnostic(shown, 1, 1, "the file is empty"))
    return document, raw.decode("utf-8-sig", errors="replace")


def ambiguous_scalars(root: yaml.Node | None) -> Iterator[tuple[KeyPath, yaml.ScalarNode, str, bool]]:
    """Plain scalars that YAML 1.1 readers take for booleans, dates or numbers.

    Yields (key path, node, what it looks like, is_key). The validator reports them where text is
    expected, with the hint to quote them.
    """
    if root is None:
        return
    stack: list[tuple[yaml.Node, KeyPath]] = [(root, ())]
    while stack:
        node, here = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # a list or mapping as a key never loads: parse_yaml reports it
                key = key_node.value
                if _is_ambiguous(key_node):
                    yield (*here, key), key_node, _ambiguous_kind(key), True
                if isinstance(value_node, yaml.ScalarNode):  # most values: checked here, not stacked
                    if _is_ambiguous(value_node):
                        yield (*here, key), value_node, _ambiguous_kind(value_node.value), False
                else:
                    stack.append((value_node, (*here, key)))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                stack.append((item, (*here, index)))
        elif isinstance(node, yaml.ScalarNode) and _is_ambiguous(node):
            yield here, node, _ambiguous_kind(node.value), False


def _is_ambiguous(node: yaml.ScalarNode) -> bool:
    return (
        not node.style  # plain: None from SpecLoader, '' from libyaml
        and node.tag == "tag:yaml.org,2002:str"
        and bool(AMBIGUOUS_SCALAR.match(node.value))
    )


def _ambiguous_kind(text: str) -> str:
    for pattern, kind in AMBIGUOUS_KINDS:
        if pattern.match(text):
            return kind
    return "ambiguous"


@dataclass(frozen=True)
class Discovered:
    """What a set of command-line paths holds: spec files and explicitly named project files."""

    specs: tuple[Path, ...]
    project_files: tuple[Path, ...]
    missing: tuple[str, ...] = ()


def discover(paths: Iterable[Path | str]) -> Discovered:
    """Expand files and folders into spec files (sorted, de-duplicated).

    In a folder every *.yaml / *.yml is a spec except the project file and anything under a folder
    named `data`; files a spec names as its dataset are removed later by the validator, which is
    the stage that reads specs.
    """
    specs: dict[Path, None] = {}
    projects: dict[Path, None] = {}
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            missing.append(str(raw))
            continue
        if path.is_dir():
            for candidate in sorted(_walk_yaml(path)):
                if candidate.name == PROJECT_FILE:
                    continue
                specs.setdefault(candidate, None)
            continue
        if path.name == PROJECT_FILE:
            projects.setdefault(path, None)
        else:
            specs.setdefault(path, None)
    return Discovered(tuple(specs), tuple(projects), tuple(missing))


def _walk_yaml(folder: Path) -> Iterator[Path]:
    for child in sorted(folder.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            if child.name in ("data", "node_modules", "__pycache__"):
                continue
            yield from _walk_yaml(child)
        elif child.suffix in YAML_SUFFIXES:
            yield child


def find_project_file(start: Path) -> Path | None:
    """The nearest specengine.yaml at or above start's folder, stopping at the folder holding .git."""
    folder = start.resolve()
    if folder.is_file() or not folder.exists():
        folder = folder.parent
    while True:
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent
