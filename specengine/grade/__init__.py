"""Stage 5, grade: score a trial's transcript with matchers and judges; knows no HTTP."""
