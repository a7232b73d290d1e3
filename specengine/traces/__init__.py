"""Recorded conversations: production traces and chat logs read as conversations a spec can check.

`read.py` is the way in (a source's conversations, grouped and filtered); one module per format
(`otlp.py` the file, `genai.py` and `openinference.py` the conventions in it, `jsonl.py` chat
logs); `turns.py` builds turns the same way for all of them, from `model.py`'s records.
"""
