-- The index of a project's runs. Rebuilt from .specengine/runs/*.json and .specengine/reviews.jsonl
-- whenever they change; `specengine query` reads it (tables runs, cases, checks, reviews).

CREATE TABLE runs (
  run_id TEXT PRIMARY KEY,
  file TEXT NOT NULL UNIQUE,          -- the results file's name in .specengine/runs/
  name TEXT NOT NULL,                 -- the file's stem when named on purpose, else the run id
  started_at TEXT NOT NULL,           -- RFC 3339, UTC
  specs TEXT NOT NULL,                -- JSON list of spec files
  suites TEXT NOT NULL,               -- JSON list of suites
  config TEXT,
  shard TEXT,                         -- JSON {index, count, plan_hash} for a shard's results
  selection TEXT,                     -- JSON: what the run was asked to run (results' `selection`); NULL in older files
  cases INTEGER NOT NULL,
  passed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  errored INTEGER NOT NULL,
  skipped INTEGER NOT NULL,
  gates_skipped INTEGER NOT NULL,
  duration_s REAL,
  judge_calls INTEGER NOT NULL,
  judge_cache_hits INTEGER NOT NULL,
  judge_tokens INTEGER NOT NULL,
  agent_tokens INTEGER,               -- the agent's tokens (summary.usage.total_tokens); NULL when unreported
  pass_rate REAL,                     -- passed / (passed + failed + errored); NULL when nothing ran
  summary TEXT NOT NULL,              -- JSON: the summary exactly as the results file holds it
  written_ns INTEGER NOT NULL         -- when the file was written (orders runs that started in the same second)
);
CREATE INDEX runs_by_time ON runs (started_at, written_ns);

CREATE TABLE cases (
  run_id TEXT NOT NULL,
  case_id TEXT NOT NULL,
  position INTEGER NOT NULL,          -- plan order
  suite TEXT NOT NULL,
  spec TEXT NOT NULL,
  eval TEXT NOT NULL,
  line INTEGER,
  row TEXT,                           -- the dataset row's id
  labels TEXT NOT NULL,               -- JSON list
  status TEXT NOT NULL,               -- passed, failed, error or skipped
  n_trials INTEGER NOT NULL,
  passed_trials INTEGER NOT NULL,
  duration_s REAL NOT NULL,
  reason TEXT NOT NULL,               -- why it did not pass, as the reports word it
  reply TEXT NOT NULL,                -- the agent's last reply (first trial)
  transcript TEXT NOT NULL,           -- fingerprint of the transcripts (reviews attach to it)
  shape TEXT NOT NULL,                -- fingerprint of the case's checks (changes with the spec)
  cell TEXT,                          -- the matrix cell it ran in; NULL outside a matrix run
  PRIMARY KEY (run_id, case_id)
);
CREATE INDEX cases_by_id ON cases (case_id, transcript);
CREATE INDEX cases_by_shape ON cases (case_id, shape, run_id, status, passed_trials, n_trials);  -- a case's runs of one spec (the queue's regressions)

CREATE TABLE checks (
  run_id TEXT NOT NULL,
  case_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  name TEXT NOT NULL,
  matcher TEXT NOT NULL,              -- includes, judge, called_tool_with, ...
  line INTEGER,
  turn INTEGER,
  gate INTEGER NOT NULL,              -- 1: a gate, 0: a soft check
  status TEXT NOT NULL,               -- over the case's trials
  score REAL,                         -- mean over the trials
  margin REAL,                        -- the smallest distance of a trial's score from its threshold
  uncertain INTEGER NOT NULL,         -- 1: a judge's samples disagreed in some trial
  PRIMARY KEY (run_id, case_id, position)
);
CREATE INDEX checks_by_matcher ON checks (matcher);

CREATE TABLE reviews (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL,               -- order in the review store (later supersedes earlier)
  run_id TEXT NOT NULL,               -- the run it was made in (it applies to every run with the same reply)
  case_id TEXT NOT NULL,
  check_name TEXT,                    -- NULL: a review of the case's verdict
  verdict TEXT NOT NULL,              -- correct or incorrect (of the engine's verdict when reviewed)
  human TEXT NOT NULL,                -- the reviewer's outcome: passed or failed
  engine TEXT NOT NULL,               -- the engine's status when reviewed
  note TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  at TEXT NOT NULL,
  transcript TEXT NOT NULL
);
CREATE INDEX reviews_by_case ON reviews (case_id, transcript);

CREATE TABLE latest (                 -- each case id's newest run, the run before it and its trend (index/latest.py)
  case_id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  status TEXT NOT NULL,
  transcript TEXT NOT NULL,
  shape TEXT NOT NULL,
  previous_run TEXT,
  previous_status TEXT,
  trend TEXT,                         -- results/trend.py's label in the newest run: flaky, regressed, fixed or NULL
  recent TEXT NOT NULL                -- JSON [[run_id, status, passed_trials, n_trials]]: the runs of its spec it read
);

CREATE TABLE suite_counts (
  run_id TEXT NOT NULL,
  suite TEXT NOT NULL,
  cases INTEGER NOT NULL,
  passed INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  errored INTEGER NOT NULL,
  skipped INTEGER NOT NULL,
  PRIMARY KEY (run_id, suite)
);

CREATE TABLE case_documents (         -- each case's whole entry, JSON compressed with zlib
  run_id TEXT NOT NULL,
  case_id TEXT NOT NULL,
  document BLOB NOT NULL,
  PRIMARY KEY (run_id, case_id)
);

CREATE TABLE sources (                -- the files the index was built from, to see what changed
  file TEXT PRIMARY KEY,              -- a name in .specengine/runs/, or 'reviews.jsonl'
  mtime_ns INTEGER NOT NULL,
  size INTEGER NOT NULL,
  run_id TEXT,                        -- NULL when the file could not be used
  problem TEXT                        -- why not
);
