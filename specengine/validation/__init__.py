"""Stage 2, validation: every problem in every spec and project file, located and in plain words."""
