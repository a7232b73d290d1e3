"""Stage 4, run: prepare the plan, schedule trials against the endpoints, write results, pick the exit code."""
