"""Helpers shared by the tests: the CLI runner and file writers, scripted servers, run assertions.

- `support.cli`: run the real CLI (in-process or as a subprocess), write projects and specs.
- `support.servers`: the reply engine every scripted server shares (the loopback HTTP server that
  records requests and sends scripted replies, statuses, dropped connections and SSE; the agent
  script), and the scripted OpenAI-compatible chat agent built on it.
- `support.protocol_servers`: scripted Responses, Databricks and AppKit agents, on the same engine.
- `support.judge_server`: the scripted OpenAI-compatible judge, on the engine's HTTP server.
- `support.runs`: run a spec end to end and read back its results.
- `support.shown`: what a check shows (score, error, reason, expected, got), compared whole.
- `support.mutation`: mutmut over the check engine, scored against tests/mutation-equivalent.txt.
- `support.mlflow_server`: a real `mlflow server` (the session's one, booted early), and a TCP
  proxy that can be cut to take the server away from a client in the middle of a run.
"""
