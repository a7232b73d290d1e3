"""What a command does, below the command line: one module per command with a flow of its own, named
as its command in commands/ (`run.py`, `regrade.py`, `freeze.py`).

A flow strings the stages together (prepare, run or regrade, record, report, exit code) for its
command, for `specengine.api` (the `run` flow, which the pytest plugin calls too) and for `serve`
(the `freeze` flow); the stages themselves stay in their packages, and nothing here imports the
command line.
"""
