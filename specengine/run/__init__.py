"""Stage 4, run: prepare the plan, schedule trials against endpoints, write results, pick the exit code.

Called, the package is the Python API's `specengine.run(...)` (api.py; callable_package.py says why).
"""

from specengine.callable_package import make_callable

make_callable(__name__)
