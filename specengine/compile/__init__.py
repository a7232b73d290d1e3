"""Stage 3, compile: valid specs into a Plan of frozen cases, steps and checks; no network I/O."""
