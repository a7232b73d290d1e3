"""A support agent in production, traced by real instrumentation, and the OTLP files it leaves.

The agent is what a team would write: the `openai` client against a model (here `ScriptedModel`,
a scripted OpenAI-compatible server), a loop that runs the tools the model asks for, and the
OpenTelemetry SDK exporting what the instrumentation records. Two instrumentations can record it:

- `genai`: `opentelemetry-instrumentation-openai-v2` (GenAI semantic conventions, the current
  attribute form) for the `chat` spans, and `opentelemetry-util-genai`'s handler for the
  application's `invoke_agent` span (carrying `gen_ai.conversation.id`) and `execute_tool` spans;
- `openinference`: `openinference-instrumentation-openai` (flattened `llm.*` attributes) with
  `using_session` for the session id;
- `events`: `opentelemetry-instrumentation-openai-v2` with content captured as events only
  (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=event_only`): `chat` spans without content,
  the messages in a `gen_ai.client.inference.operation.details` log record tied to each, written
  after the spans as `{"resourceLogs": [...]}` lines; each conversation is one trace under an
  application span;
- `older`: the same, recorded by `elastic-opentelemetry-instrumentation-openai` with content
  captured (`true`): the GenAI conventions' older event form, a log record a message
  (`gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`);
- `azure`: `azure-ai-inference`'s `ChatCompletionsClient` in place of the `openai` client, traced by
  its own `AIInferenceInstrumentor` (content recording on): the older event form as the `chat`
  span's own events, each body as JSON text in `gen_ai.event.content`; one trace a conversation;
- `strands`: a Strands Agents agent (its `OpenAIModel`, two `@tool`s, `trace_attributes` giving
  `session.id`), traced by Strands itself: the older events as span events of its `chat` spans, each
  content as JSON text of Bedrock Converse content blocks; `strands-latest`: the same with
  `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`, the messages as
  `gen_ai.client.inference.operation.details` span events;
- `openllmetry`: Traceloop's `opentelemetry-instrumentation-openai` (0.54 or earlier: flattened
  `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes) with `traceloop-sdk`'s span processor and
  `set_association_properties` for the session id, a trace a turn. Neither installs beside the test
  extra: `tests/fixtures/traces/README.md` says how its recording there was made.

Spans are written as the OpenTelemetry Collector's file exporter writes them: one
`{"resourceSpans": [...]}` object per line, `MessageToDict(encode_spans(batch))`.

The model's script plants a production bug: a refund request that names two orders
("I ordered ORD-0044 and ORD-0045; please refund ORD-0045") refunds the first one named.
`conversations(n)` makes n two-turn conversations with that request in one of every hundred.
Each recording runs in a child process (the instrumentations patch the `openai` module for good).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from support.servers import AgentServer, Reply

ORDER = re.compile(r"ORD-\d+")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
    for name, description in (("lookup_order", "Where an order is"), ("issue_refund", "Refund an order"))
]


USAGE = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}  # what every answer reports


def model_reply(messages: Sequence[Mapping[str, Any]]) -> Reply:
    """What the scripted model answers: a tool call for a request, a sentence for a tool's result."""
    last = messages[-1]
    if last.get("role") == "tool":
        result = json.loads(str(last.get("content") or "{}"))
        if "refunded" in result:
            return Reply(content=f"Done: order {result['refunded']} is refunded.", usage=USAGE)
        return Reply(content=f"Order {result.get('order_id')} is {result.get('status')}.", usage=USAGE)
    text = str(last.get("content") or "")
    orders = ORDER.findall(text)
    if not orders:
        return Reply(content="How can I help with your order?", usage=USAGE)
    # the planted bug: with two orders named, the first one is refunded, not the one asked for
    tool = "issue_refund" if "refund" in text.lower() else "lookup_order"
    call = {"name": tool, "args": {"order_id": orders[0]}, "id": f"call_{orders[0]}"}
    return Reply(tool_calls=[call], usage=USAGE)


class ScriptedModel(AgentServer):
    """The model the support agent calls (OpenAI chat completions), scripted by `model_reply`."""

    def __init__(self) -> None:
        super().__init__()
        self.script(model_reply)

    @property
    def v1_url(self) -> str:
        return self.url_for("/v1")


def conversations(count: int, bug_every: int = 100) -> list[dict[str, Any]]:
    """`count` conversations of two user messages; every `bug_every`-th asks to refund the second
    of two orders (the planted bug's trigger)."""
    out = []
    for number in range(count):
        order = f"ORD-{number:04d}"
        second = (
            f"I ordered {order} and ORD-9{number:03d}; please refund ORD-9{number:03d}"
            if number % bug_every == bug_every - 1
            else f"Please refund order {order}"
        )
        out.append({"id": f"conv-{number:04d}", "messages": [f"Where is my order {order}?", second]})
    return out


AGENT = textwrap.dedent(
    """
    import json, os, sys
    from google.protobuf.json_format import MessageToDict
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    job = json.loads(sys.argv[1])
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    if job["style"] == "openllmetry":  # Traceloop's processor: it writes the association properties
        from traceloop.sdk.tracing.tracing import get_default_span_processor, set_association_properties
        provider.add_span_processor(get_default_span_processor(disable_batch=True, exporter=exporter))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)

    if job["style"] == "genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        from opentelemetry.util.genai.handler import get_telemetry_handler
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        handler = get_telemetry_handler(tracer_provider=provider)
    elif job["style"] in ("events", "older"):
        from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
        if job["style"] == "events":
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        else:  # Elastic's instrumentation: a log record a message
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry._logs import set_logger_provider
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
        log_exporter = InMemoryLogRecordExporter()
        logger_provider = LoggerProvider(resource=provider.resource)
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
        if job["style"] == "events":
            OpenAIInstrumentor().instrument(tracer_provider=provider, logger_provider=logger_provider)
        else:  # Elastic's hands a logger_provider to get_logger as a version: it takes the global one
            set_logger_provider(logger_provider)
            OpenAIInstrumentor().instrument(tracer_provider=provider)
        tracer = provider.get_tracer("support-agent")
    elif job["style"] == "azure":  # Azure AI Inference's tracing: a span event a message
        from azure.core.settings import settings
        settings.tracing_implementation = "opentelemetry"
        from azure.ai.inference.tracing import AIInferenceInstrumentor
        AIInferenceInstrumentor().instrument(enable_content_recording=True)
        tracer = provider.get_tracer("support-agent")
    elif job["style"].startswith("strands"):  # Strands traces itself, to the global provider
        tracer = provider.get_tracer("support-agent")
    elif job["style"] == "openllmetry":  # Traceloop's OpenLLMetry before 0.55: flattened attributes
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        tracer = provider.get_tracer("support-agent")
    else:
        import contextlib
        from openinference.instrumentation import using_session, using_tags
        from openinference.instrumentation.openai import OpenAIInstrumentor
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        tracer = provider.get_tracer("support-agent")

    if job["style"] == "azure":
        from azure.ai.inference import ChatCompletionsClient
        from azure.core.credentials import AzureKeyCredential
        azure = ChatCompletionsClient(endpoint=job["base_url"], credential=AzureKeyCredential("unused"))

        def complete(history):
            reply = azure.complete(messages=history, tools=job["tools"], model="support-model")
            message = reply.choices[0].message
            return message.content, [call.as_dict() for call in message.tool_calls or []]
    else:
        import openai
        client = openai.OpenAI(base_url=job["base_url"], api_key="unused", max_retries=0)

        def complete(history):
            reply = client.chat.completions.create(
                model="support-model", messages=history, tools=job["tools"]
            )
            message = reply.choices[0].message
            return message.content, [call.model_dump() for call in message.tool_calls or []]

    def run_tool(name, args):
        if name == "issue_refund":
            return {"refunded": args["order_id"]}
        return {"order_id": args["order_id"], "status": "shipped"}

    def answer(history):
        while True:
            content, calls = complete(history)
            history.append({"role": "assistant", "content": content,
                            **({"tool_calls": calls} if calls else {})})
            if not calls:
                return content
            for call in calls:
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                args = json.loads(arguments)
                if job["style"] in ("events", "older", "openllmetry", "azure"):
                    result = run_tool(name, args)
                elif job["style"] == "genai":
                    with handler.tool(name, tool_call_id=call["id"]) as tool:
                        tool.arguments = args
                        result = run_tool(name, args)
                        tool.tool_result = result
                else:
                    with tracer.start_as_current_span("tool " + name, attributes={
                        "openinference.span.kind": "TOOL", "tool.name": name,
                        "input.value": arguments}) as span:
                        result = run_tool(name, args)
                        span.set_attribute("output.value", json.dumps(result))
                history.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})

    if job["style"].startswith("strands"):  # Strands Agents runs the loop and traces it itself
        from strands import Agent, tool
        from strands.models.openai import OpenAIModel
        strands_model = OpenAIModel(
            client_args={"base_url": job["base_url"], "api_key": "unused", "max_retries": 0},
            model_id="support-model",
        )

        @tool
        def lookup_order(order_id: str) -> dict:
            "Where an order is"
            return run_tool("lookup_order", {"order_id": order_id})

        @tool
        def issue_refund(order_id: str) -> dict:
            "Refund an order"
            return run_tool("issue_refund", {"order_id": order_id})

    def write(path):
        spans = exporter.get_finished_spans()
        exporter.clear()
        with open(path, "w", encoding="utf-8") as out:
            for start in range(0, len(spans), job["batch"]):
                batch = encode_spans(spans[start:start + job["batch"]])
                batch = MessageToDict(batch, use_integers_for_enums=True)
                out.write(json.dumps(batch) + "\\n")
            if job["style"] in ("events", "older"):
                logs = encode_logs(log_exporter.get_finished_logs())
                logs = MessageToDict(logs, use_integers_for_enums=True)
                log_exporter.clear()
                out.write(json.dumps(logs) + "\\n")

    for conversation in job["conversations"]:
        if conversation.get("out"):  # the spans so far go to this file
            write(conversation["out"])
            continue
        history = [{"role": "system", "content": "You are the support agent of an online shop."}]
        if job["style"].startswith("strands"):  # its session on every span, by `trace_attributes`
            agent = Agent(model=strands_model, tools=[lookup_order, issue_refund], callback_handler=None,
                          system_prompt=history[0]["content"],
                          trace_attributes={"session.id": conversation["id"]})
            for text in conversation["messages"]:
                agent(text)
            continue
        if job["style"] in ("events", "older", "azure"):  # one trace a conversation, grouped by trace id
            with tracer.start_as_current_span("conversation " + conversation["id"]):
                for text in conversation["messages"]:
                    history.append({"role": "user", "content": text})
                    answer(history)
            continue
        if job["style"] == "openllmetry":  # a trace a turn, grouped by the session id on every span
            set_association_properties({"session_id": conversation["id"]})
        for text in conversation["messages"]:
            history.append({"role": "user", "content": text})
            if job["style"] == "openllmetry":
                with tracer.start_as_current_span("support.turn"):
                    answer(history)
            elif job["style"] == "genai":
                with handler.invoke_local_agent(agent_name="support", request_model="support-model") as agent:
                    agent.conversation_id = conversation["id"]
                    answer(history)
            else:
                tags = contextlib.nullcontext()
                if conversation.get("tags"):  # OpenInference's tag.tags: labels a spec filters by
                    tags = using_tags(conversation["tags"])
                with using_session(conversation["id"]), tags:
                    with tracer.start_as_current_span("support", attributes={
                        "openinference.span.kind": "AGENT", "input.value": text}) as span:
                        span.set_attribute("output.value", answer(history) or "")

    write(job["out"])
    """
)


def record(
    style: str,
    model: ScriptedModel,
    out: Path,
    conversation_list: list[dict[str, Any]],
    batch: int = 50,
    captured: bool = True,
) -> Path:
    """Run the traced agent over `conversation_list` in a child process; its spans land in `out`.
    `captured=False` leaves message content uncaptured, the instrumentations' default."""
    job = {
        "style": style,
        "base_url": model.v1_url,
        "tools": TOOLS,
        "conversations": conversation_list,
        "out": str(out),
        "batch": batch,
    }
    env = {
        **os.environ,
        "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "span_only",
    }
    if style == "events":  # the messages in log records, not on the spans
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "event_only"
    if style == "strands":  # Strands' default: the older events, on its spans
        del env["OTEL_SEMCONV_STABILITY_OPT_IN"]
    if style == "older":  # a log record a message, content captured by `true`, no opt-in read
        env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        del env["OTEL_SEMCONV_STABILITY_OPT_IN"]
    if not captured:
        del env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]
    subprocess.run(
        [sys.executable, "-c", AGENT, json.dumps(job)], env=env, check=True, capture_output=True, timeout=120
    )
    return out
