"""The index of a project's runs: one SQLite file, `.specengine/index.sqlite`, rebuilt at will.

The results files in `.specengine/runs/` stay the source of truth; the index holds what pages and
queries need (one row per run, case and check, each case's full entry compressed, and the human
reviews) so that listing 100 runs of 1,000 cases reads a few rows instead of parsing 100 files. It
follows the files: a file that is new or changed (by time and size) is read again, a file that is
gone drops out, and a changed review store is read again. Deleting the index loses nothing.

Only the standard library's sqlite3 is used, so `specengine query`, `agreement` and the hook that
indexes a finished run work without the web extra. The index itself is `database.RunIndex`; this
package only says where things are, because every run loads its hook (hook.py), and a project that
has no index must not pay for loading it.
"""

from pathlib import Path

INDEX_FILE = Path(".specengine") / "index.sqlite"
RUNS_FOLDER = Path(".specengine") / "runs"
