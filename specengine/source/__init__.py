"""Stage 1, source: reading spec, project and dataset files into data that keeps every line and column."""
