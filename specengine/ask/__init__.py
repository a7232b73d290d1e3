"""`specengine ask ENDPOINT MESSAGE`: one message to one endpoint, and everything about what happened.

The first thing to try when wiring a new agent: it sends through the same adapter a run uses (every
protocol), records the HTTP exchanges underneath it (exchange.py: a transport that keeps what went
out and what came back, so no protocol needs code of its own here), and shows in plain words the
request as sent (secrets redacted), the raw response cut to a screenful, and what specengine read
from it: the reply, the tool calls with their arguments, the session id, the time. When an `http`
endpoint's `reply`, `tool_calls` or `session_id` expression picks nothing, it says which and what
the response holds instead (explain.py). session.py finds the endpoint and sends the message.
"""
