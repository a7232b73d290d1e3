"""Results in MLflow: one MLflow run per specengine run, one trace per case and trial, one assessment
per check.

Two halves, kept apart so the mapping can be read and tested without MLflow installed:

- `records`, `run_mapping`, `trace_mapping`, `assessments`: plain functions from the results dict
  (the same dict `report` reads) to plain frozen records. No MLflow import.
- `target`, `client`, `shipper`, `log`: where to log (CLI, project file, environment), turning
  records into MLflow entities and sending them concurrently and in batches, and the one object the
  `run` and `report` commands talk to. MLflow (`specengine[mlflow]`) is imported only there, and only
  when logging was asked for, so `--help` and `validate` never pay for it.

Logging is best-effort: the local results are the record, MLflow is a copy. A tracking server that
is down or refuses a call costs one warning, never a result or the exit code.
"""
