"""Reports built from a results dict: the formats (formats.py) with their writers, the console, the
comparison of two runs, merge."""
