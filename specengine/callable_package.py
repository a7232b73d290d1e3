"""A stage package that is also the API function of the same name: `specengine.run(...)`.

`specengine.run` and `specengine.validate` are the Python API's functions (api.py) and the names of
two stage packages. Importing a package sets it as its parent's attribute, so once anything imports
`specengine.run.prepare` the attribute is the package, whatever `specengine/__init__.py` put there.
The package is made callable instead: calling it calls the API's function, and everything else
(`specengine.run.prepare`, `mock.patch("specengine.run....")`) is the package, as before.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import Any


class CallablePackage(types.ModuleType):
    """A package whose call is `specengine.api.<its name>`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        function = getattr(import_module("specengine.api"), self.__name__.rsplit(".", 1)[-1])
        return function(*args, **kwargs)


def make_callable(name: str) -> None:
    """Make the package `name` (being imported) callable as the API's function of its last name."""
    sys.modules[name].__class__ = CallablePackage
