"""Reports built from a results dict: JUnit, GitHub annotations, Markdown, HTML, comparison, merge."""
