"""Datasets in MLflow's evaluation dataset shape: `inputs`/`expectations` rows in every file format,
a CSV exported from such a table, and datasets read by name from a real MLflow tracking server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.servers import Reply, ScriptedHTTPServer

from specengine.errors import DatasetUnavailable, SpecError
from specengine.source.datasets import Row, iter_rows

RECORD = {
    "inputs": {"question": "What's the weather in Paris?"},
    "expectations": {
        "expected_response": "Sunny, 24°C",
        "expected_facts": ["sunny", "24°C"],
        "guidelines": ["Answer in one sentence"],
    },
}
READ = {
    "input": {"question": "What's the weather in Paris?"},
    "expected": {
        "expected_response": "Sunny, 24°C",
        "expected_facts": ["sunny", "24°C"],
        "guidelines": ["Answer in one sentence"],
    },
}


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(SpecError) as error:
        list(iter_rows(path, path.name))
    return str(error.value)


def test_jsonl_records_are_read_as_input_and_expected(tmp_path):
    exported = {
        **RECORD,
        "outputs": {"response": "old answer"},  # what an earlier run answered: not used
        "tags": {"difficulty": "easy"},
        "dataset_record_id": "dr-1a2b",
        "source_type": "HUMAN",
        "created_time": 1796102864577,
    }
    path = write(tmp_path, "rows.jsonl", json.dumps(RECORD) + "\n\n" + json.dumps(exported) + "\n")
    assert list(iter_rows(path, "rows.jsonl")) == [
        Row(READ, 1),
        Row({**READ, "metadata": {"difficulty": "easy"}, "id": "dr-1a2b"}, 3),
    ]


def test_json_and_yaml_records(tmp_path):
    json_path = write(
        tmp_path, "rows.json", json.dumps([RECORD, {"inputs": {"q": "hi"}, "expectations": None}])
    )
    assert [row.data for row in iter_rows(json_path, "rows.json")] == [READ, {"input": {"q": "hi"}}]
    yaml_path = write(
        tmp_path,
        "rows.yaml",
        '- id: paris\n  labels: [smoke]\n  inputs: {question: "Weather?"}\n'
        "  expectations: {guidelines: [brief]}\n",
    )
    assert list(iter_rows(yaml_path, "rows.yaml")) == [
        Row(
            {
                "id": "paris",
                "labels": ["smoke"],
                "input": {"question": "Weather?"},
                "expected": {"guidelines": ["brief"]},
            },
            1,
        )
    ]


def test_a_given_id_wins_over_the_record_id(tmp_path):
    path = write(
        tmp_path, "rows.jsonl", json.dumps({**RECORD, "id": "paris", "dataset_record_id": "dr-9"}) + "\n"
    )
    assert next(iter_rows(path, "rows.jsonl")).data["id"] == "paris"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"inputs": {"q": 1}, "expected": {"a": 1}},
            "rows.jsonl:1:1: this row has MLflow's 'inputs' and specengine's 'expected': write a row one way"
            " (in MLflow's shape, 'expected' is 'expectations')",
        ),
        (
            {"inputs": {"q": 1}, "expectation": {"a": 1}},
            "rows.jsonl:1:1: unknown key 'expectation' in a row in MLflow's shape"
            " - did you mean 'expectations'?;",
        ),
        (
            {"inputs": "What's up?"},
            "rows.jsonl:1:1: the row's 'inputs' must be a mapping (name: value), not text",
        ),
        ({"inputs": None}, "rows.jsonl:1:1: the row's 'inputs' must be a mapping (name: value), not null"),
        (
            {"inputs": {"q": 1}, "expectations": ["sunny"]},
            "rows.jsonl:1:1: the row's 'expectations' must be a mapping (name: value), not a list",
        ),
        ({"inputs": {}, "dataset_record_id": "a::b"}, "rows.jsonl:1:1: row id 'a::b' may not contain '::'"),
    ],
)
def test_bad_records_are_located(tmp_path, row, message):
    assert error_of(write(tmp_path, "rows.jsonl", json.dumps(row) + "\n")).startswith(message)


def test_csv_exported_from_an_mlflow_table(tmp_path):
    """pandas' to_csv of `to_df()` (an unnamed index column first), with the JSON columns as JSON."""
    path = write(
        tmp_path,
        "rows.csv",
        ",inputs,outputs,expectations,tags,source_type,source,created_time,dataset_record_id\n"
        '0,"{""question"": ""Weather in Paris?""}",,"{""expected_response"": ""Sunny""}",'
        '"{""team"": ""support""}",HUMAN,"DatasetRecordSource(source_type=HUMAN)",1796102864577,dr-1\n'
        '\n1,"{""question"": ""Weather in Oslo?""}",,,,,,,\n',
    )
    assert list(iter_rows(path, "rows.csv")) == [
        Row(
            {
                "input": {"question": "Weather in Paris?"},
                "expected": {"expected_response": "Sunny"},
                "metadata": {"team": "support"},
                "id": "dr-1",
            },
            2,
        ),
        Row({"input": {"question": "Weather in Oslo?"}}, 4),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("inputs,answer\n{},x\n", "rows.csv:1:1: column 'answer' is not a field of an MLflow dataset"),
        ("inputs,inputs\n{},{}\n", "rows.csv:1:1: column 'inputs' appears twice"),
        (
            "inputs\n\"{'q': 1}\"\n",
            "rows.csv:2:1: column 'inputs' must hold JSON (single quotes: a Python dict, not JSON)",
        ),
        ("inputs,expectations\n{}\n", "rows.csv:2:1: this row has 1 values but the header has 2 columns"),
        (
            'inputs\n"[1, 2]"\n',
            "rows.csv:2:1: the row's 'inputs' must be a mapping (name: value), not a list",
        ),
    ],
)
def test_csv_errors_are_located(tmp_path, text, message):
    assert error_of(write(tmp_path, "rows.csv", text)).startswith(message)


# --- datasets stored in MLflow ---------------------------------------------------------------------


@pytest.fixture
def stored_dataset(mlflow_server, monkeypatch):
    """A dataset of three records on the session's MLflow server, under a name unique to the test."""
    import uuid

    from mlflow import MlflowClient
    from mlflow.genai.datasets import create_dataset

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)  # what create_dataset writes to
    experiment = MlflowClient(tracking_uri=mlflow_server.url).create_experiment(
        f"datasets-{uuid.uuid4().hex[:8]}"
    )
    name = f"weather_{uuid.uuid4().hex[:8]}"
    create_dataset(name=name, experiment_id=experiment).merge_records(
        [
            {"inputs": {"question": f"Weather in {city}?"}, "expectations": {"expected_response": weather}}
            for city, weather in (("Paris", "Sunny"), ("Oslo", "Snowy"), ("Tokyo", "Cloudy"))
        ]
    )
    monkeypatch.delenv("MLFLOW_TRACKING_URI")  # the reader must use the URI it is given
    return name


def test_records_are_read_page_by_page_from_the_tracking_server(stored_dataset, mlflow_server, monkeypatch):
    from specengine.mlflow import datasets

    monkeypatch.setattr(datasets, "PAGE_SIZE", 2)
    dataset = datasets.MlflowDataset(stored_dataset, mlflow_server.url)
    records = dataset.records()
    assert sorted(record["inputs"]["question"] for record in records) == [
        "Weather in Oslo?",
        "Weather in Paris?",
        "Weather in Tokyo?",
    ]
    assert all(record["dataset_record_id"].startswith("dr-") for record in records)
    assert dataset.records() is records  # read once per command


def test_an_unknown_name_says_where_it_looked(mlflow_server):
    from specengine.mlflow.datasets import MlflowDataset

    with pytest.raises(DatasetUnavailable) as error:
        MlflowDataset("no_such_dataset", mlflow_server.url).records()
    assert (
        error.value.message
        == f"no evaluation dataset named 'no_such_dataset' in MLflow at {mlflow_server.url}"
    )


FILE_STORE_REFUSAL = {
    "error_code": "FEATURE_DISABLED",
    "message": "search_datasets is not supported with FileStore. This feature requires a SQL-based backend",
}


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=500, body=FILE_STORE_REFUSAL),  # `mlflow server` on a file store, as MLflow 3.17 answers
        Reply(
            status=404, body="<h1>Not Found</h1>", headers={"Content-Type": "text/html"}
        ),  # before MLflow 3.4
    ],
)
def test_a_server_that_cannot_store_evaluation_datasets(reply, monkeypatch):
    from specengine.mlflow.datasets import MlflowDataset

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with ScriptedHTTPServer() as server:
        server.route("/api/3.0/mlflow/datasets/search", lambda request: reply)
        with pytest.raises(DatasetUnavailable) as error:
            MlflowDataset("weather", server.base_url).records()
    message = error.value.message
    assert message.startswith(f"the MLflow tracking server at {server.base_url} ")
    assert "cannot store evaluation datasets" in message
    assert message.endswith("e.g. mlflow server --backend-store-uri sqlite:///mlflow.db")


def test_an_unreachable_server_and_a_password_in_its_uri(monkeypatch):
    from support.servers import free_port

    from specengine.mlflow.datasets import MlflowDataset

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    port = free_port()
    with pytest.raises(DatasetUnavailable) as error:
        MlflowDataset("weather", f"http://user:hunter22@127.0.0.1:{port}").records()
    assert error.value.message == f"cannot reach the MLflow tracking server at http://127.0.0.1:{port}"


# --- through the CLI -------------------------------------------------------------------------------

MLFLOW_SPEC = """
dataset: mlflow:{name}
evals:
  - name: weather
    send: "{{{{ input.question }}}}"
    expect:
      - includes: "{{{{ expected.expected_response }}}}"
"""


def test_a_run_over_an_mlflow_dataset(stored_dataset, mlflow_server, tmp_path, agent_server):
    from support.cli import run_cli, write_project, write_spec

    agent_server.script(
        lambda messages: {"Weather in Paris?": "Sunny", "Weather in Oslo?": "Snowy"}.get(
            messages[-1]["content"], "No idea"
        )
    )
    write_project(tmp_path, endpoints={"agent": agent_server}, mlflow={"tracking_uri": mlflow_server.url})
    write_spec(tmp_path, "specs/weather", MLFLOW_SPEC.format(name=stored_dataset))
    validated = run_cli(["validate", "specs"], cwd=tmp_path)
    assert validated.exit_code == 0, validated.output
    result = run_cli(["run", "specs", "--output", "results.json"], cwd=tmp_path)
    assert result.exit_code == 1, result.output  # Tokyo's Cloudy is not in "No idea"
    cases = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["cases"]
    assert sorted((case["row"].startswith("dr-"), case["status"]) for case in cases) == [
        (True, "failed"),
        (True, "passed"),
        (True, "passed"),
    ]
    assert sorted(user["content"] for body in agent_server.bodies for user in body["messages"]) == [
        "Weather in Oslo?",
        "Weather in Paris?",
        "Weather in Tokyo?",
    ]


def test_a_run_over_a_missing_mlflow_dataset_stops_before_sending(mlflow_server, tmp_path, agent_server):
    from support.cli import run_cli, write_project, write_spec

    write_project(tmp_path, endpoints={"agent": agent_server}, mlflow={"tracking_uri": mlflow_server.url})
    write_spec(tmp_path, "specs/weather", MLFLOW_SPEC.format(name="nowhere"))
    result = run_cli(["run", "specs"], cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"specs/weather.yaml:1:10: no evaluation dataset named 'nowhere' in MLflow at {mlflow_server.url}"
    )
    assert agent_server.bodies == []


def test_without_the_mlflow_client_the_message_gives_the_install_command(tmp_path, agent_server, monkeypatch):
    from importlib import metadata

    from support.cli import run_cli, write_project, write_spec

    real_version = metadata.version

    def version(name: str) -> str:
        if name in ("mlflow", "mlflow-skinny"):
            raise metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(metadata, "version", version)
    write_project(tmp_path, endpoints={"agent": agent_server})
    write_spec(tmp_path, "specs/weather", MLFLOW_SPEC.format(name="weather_qa"))
    result = run_cli(["run", "specs"], cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: dataset: mlflow:weather_qa needs the MLflow client, which is not installed;"
        ' install it with: pip install "specengine[mlflow]"'
    )
    assert agent_server.bodies == []
