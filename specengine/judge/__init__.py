"""LLM judges: autoevals' prompts sent through the openai SDK on our httpx client; a verdict cache."""
