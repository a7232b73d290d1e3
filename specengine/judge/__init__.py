"""LLM judges: autoevals scorers over an OpenAI-compatible server, with a verdict cache."""
