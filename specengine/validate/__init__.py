"""Stage 2, validate: every problem in every spec and project file, located and in plain words.

Called, the package is the Python API's `specengine.validate(...)` (api.py; callable_package.py says why).
"""

from specengine.callable_package import make_callable

make_callable(__name__)
