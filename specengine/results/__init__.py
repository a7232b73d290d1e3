"""Results as data: the outcome model and rules, the crash-safe log writer, and the reader for reports."""
