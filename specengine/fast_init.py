"""A faster `__init__` for the frozen dataclasses a run makes for every case.

A frozen dataclass's generated `__init__` sets each field through `object.__setattr__`, which costs
five times a plain assignment: about 1.7 µs for a CheckResult against 0.35 µs, and a case makes a
dozen such objects (its turn, tool calls, matcher results, check and trial results).
`@fast_init` gives such a class an `__init__` with the same signature that stores the fields in
the instance's `__dict__` directly; everything else stays as `@dataclass(frozen=True)` made it
(assignment still raises FrozenInstanceError, hashing, equality, `replace`, pickling).

Only the parts of dataclasses these classes use are covered: positional-or-keyword and keyword-only
fields, `default` and `default_factory`, `init=False` fields. A class with
`__post_init__`, `InitVar`s or `__slots__` is refused. tests/test_fast_init.py holds every
decorated class to the `__init__` dataclasses generated for it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

DECORATED: list[type] = []  # every class given a fast __init__, for the differential test


class _NoDefault:
    def __repr__(self) -> str:
        return "<factory default>"


_FACTORY = _NoDefault()  # the default of a field whose default comes from its factory


def fast_init(cls: type[T]) -> type[T]:
    """Replace the generated `__init__` of a frozen dataclass `cls` with one that assigns straight
    into `__dict__`; the dataclasses one stays as `cls.__dataclass_init__`."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"{cls.__name__}: fast_init is for frozen dataclasses")
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: fast_init does not cover __post_init__ or __slots__")
    namespace: dict[str, Any] = {"_FACTORY": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body = ["    _fields = self.__dict__"]
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if isinstance(field.type, dataclasses.InitVar):
            raise TypeError(f"{cls.__name__}: fast_init does not cover InitVar fields")
        name = field.name
        has_default = field.default is not dataclasses.MISSING
        has_factory = field.default_factory is not dataclasses.MISSING
        if not field.init:  # a plain default stays the class attribute, as dataclasses leaves it
            if has_factory:
                namespace[f"_factory_{name}"] = field.default_factory
                body.append(f"    _fields[{name!r}] = _factory_{name}()")
            continue
        if has_factory:
            parameter = f"{name}=_FACTORY"
            namespace[f"_factory_{name}"] = field.default_factory
            body.append(f"    _fields[{name!r}] = _factory_{name}() if {name} is _FACTORY else {name}")
        else:
            if has_default:
                namespace[f"_default_{name}"] = field.default
            parameter = f"{name}=_default_{name}" if has_default else name
            body.append(f"    _fields[{name!r}] = {name}")
        (keyword if field.kw_only else positional).append(parameter)
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + "\n".join(body) + "\n"
    exec(source, namespace)  # noqa: S102 - the source is built above from field names alone
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    setattr(cls, "__dataclass_init__", cls.__init__)  # noqa: B010
    setattr(cls, "__init__", init)  # noqa: B010
    DECORATED.append(cls)
    return cls
