"""Stage 4, run: prepare the plan, schedule trials against endpoints, write results, pick the exit code."""
