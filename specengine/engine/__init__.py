"""Stage 4, the run engine: prepare the plan, schedule trials against endpoints, record results, and
pick the exit code. Each command's flow is in `flows/`."""
