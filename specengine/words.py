"""How a count reads in a message: `1 case`, `3 cases`, `2 fixes`, spelt one way by every command
and report."""


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun, plural unless `n` is 1 (`plural`, else the noun and an s)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
