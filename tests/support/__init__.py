"""Helpers shared by the tests: the CLI runner and file writers, scripted servers, run assertions.

- `support.cli`: run the real CLI (in-process or as a subprocess), write projects and specs.
- `support.servers`: the scripted OpenAI-compatible agent and the loopback HTTP server it runs on.
- `support.protocol_servers`: scripted Responses, Databricks and AppKit servers.
- `support.judge_server`: the scripted OpenAI-compatible judge.
- `support.runs`: run a spec end to end and read back its results.
"""
