"""Stage 2, validate: every problem in every spec and project file, located and in plain words."""
