"""`specengine serve`: a local web app over a project's runs, for the loop that evaluation really is.

Runs over time, a run's cases with filters that live in the URL, a case's transcript, checks and
history, any two runs compared, human reviews of verdicts, judge agreement, reruns and exports; and
the same as JSON under `/api/`. Pages are rendered on the server from the index (`specengine.index`)
with Jinja2 templates and one small script, so they open offline and fast. Built on Starlette and
uvicorn, installed with the `serve` extra; nothing here is imported unless the app is started.

Safe by default: it binds 127.0.0.1, refuses requests whose Host is not the served address (DNS
rebinding) and state changes from other origins, escapes every reply, and forbids inline scripts.
"""
