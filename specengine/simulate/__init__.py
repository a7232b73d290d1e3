"""Simulated users: a model that plays the user of a `simulate:` step, one message at a time."""
