"""Recorded attributes read: JSON text fast and within the same depth limit as every answer;
OpenLLMetry's flattened messages, tokens and session; Bedrock content blocks (Strands); and which id
a span's conversation is."""

from __future__ import annotations

import json
import math
from pathlib import Path

from specengine.sharding import shard_of
from specengine.source.sources import source_config
from specengine.traces import genai, openllmetry, read
from specengine.traces.blocks import block_messages, blocks_of, unblocked
from specengine.traces.model import CallMade, Conversation, Message, TraceParts
from specengine.traces.otlp import SPAN, Span, read_file, span_of
from specengine.traces.read import _conversation_id
from specengine.traces.values import parsed
from specengine.untrusted_json import MAX_DEPTH


def test_recorded_json_is_read_as_values_and_anything_else_stays_text():
    assert parsed('{"order_id": "ORD-1", "n": [1, 2]}') == {"order_id": "ORD-1", "n": [1, 2]}
    assert parsed(b'["a"]') == ["a"]
    assert parsed("Please refund ORD-1") == "Please refund ORD-1"
    assert parsed({"already": "a value"}) == {"already": "a value"}
    assert math.isnan(parsed('{"score": NaN}')["score"])  # orjson refuses NaN; json reads it
    assert parsed("[18446744073709551616]") == [2**64]  # past 64 bits, likewise


def test_recorded_json_nested_deeper_than_the_limit_stays_text():
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    deeper = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert isinstance(parsed(at_limit), list)
    assert parsed(deeper) == deeper
    wide = "[" + ", ".join(["{}"] * (MAX_DEPTH * 2)) + "]"  # many brackets, shallow
    assert parsed(wide) == [{}] * (MAX_DEPTH * 2)


FIXTURES = Path(__file__).parent / "fixtures" / "traces"


def _spans(name: str) -> list[Span]:
    return [span_of(raw) for kind, raw in read_file(FIXTURES / name) if kind == SPAN]


def test_openllmetry_flattened_messages_are_read_as_the_history_from_the_last_user_message():
    """The last model call of the planted conversation (OpenLLMetry 0.54.0, recorded): its input is
    the whole history, read from the last user message on with the earlier user message counted,
    and the tool message answering the call of the same id."""
    last = _spans("openllmetry-0.54.0-flattened.json")[7]
    parts = TraceParts(last.trace_id, "f.json")
    assert genai.take_span(last, parts) and parts.conversation == "conv-0001"
    (call,) = parts.calls
    assert call.input == (
        Message("user"),
        Message("user", "I ordered ORD-0001 and ORD-9001; please refund ORD-9001"),
        Message("assistant", "", (CallMade("issue_refund", {"order_id": "ORD-0001"}, "call_ORD-0001"),)),
        Message("tool", '{"refunded": "ORD-0001"}', call_id="call_ORD-0001"),
    )
    assert call.output == (Message("assistant", "Done: order ORD-0001 is refunded."),)
    assert (call.input_tokens, call.output_tokens, call.parent) == (50, 10, last.parent_id)


def _span(attributes: dict[str, object]) -> Span:
    return Span("ab" * 16, "cd" * 8, None, "chat", 1, 2, attributes)


def test_openllmetry_tokens_parts_and_older_function_calls_are_read_by_every_name_written():
    parts = TraceParts("t", "f.json")
    older = {
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": json.dumps(
            [{"type": "text", "text": "Refund "}, {"type": "text", "text": "it"}]
        ),
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.function_call.name": "issue_refund",
        "gen_ai.completion.0.function_call.arguments": '{"order_id": "ORD-1"}',
        "gen_ai.usage.prompt_tokens": 7,
        "gen_ai.usage.completion_tokens": 3,
    }
    assert genai.take_span(_span(older), parts)
    assert genai.take_span(
        _span({"llm.usage.prompt_tokens": 5, "llm.usage.completion_tokens": 2, **_said()}), parts
    )
    first, second = parts.calls
    assert first.input == (Message("user", "Refund it"),)
    assert first.output == (Message("assistant", "", (CallMade("issue_refund", {"order_id": "ORD-1"}),)),)
    assert [(call.input_tokens, call.output_tokens) for call in parts.calls] == [(7, 3), (5, 2)]
    assert second.input == (Message("user", '[{"not": "parts"}]'),)


def test_openllmetry_s_completions_api_prompt_and_answers_without_a_role_are_the_user_s_and_the_assistant_s():
    parts = TraceParts("t", "f.json")
    completion = {
        "llm.request.type": "completion",
        "gen_ai.prompt.0.user": "Refund ORD-1",
        "gen_ai.prompt.prompt_filter_results": "[]",  # not a message: not numbered
        "gen_ai.completion.0.finish_reason": "stop",
        "gen_ai.completion.0.content": "Done.",
    }
    assert genai.take_span(_span(completion), parts)
    assert (parts.calls[0].input, parts.calls[0].output) == (
        (Message("user", "Refund ORD-1"),),
        (Message("assistant", "Done."),),
    )


def _said() -> dict[str, object]:
    return {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": '[{"not": "parts"}]'}


def test_a_content_less_openllmetry_span_is_a_call_without_messages_and_others_are_not_read_as_it():
    parts = TraceParts("t", "f.json")
    assert genai.take_span(_span({"llm.request.type": "chat"}), parts)
    assert parts.calls[0].input == parts.calls[0].output == ()
    assert not genai.take_span(_span({"llm.request.type": "embedding"}), parts)
    genai_form = {"llm.request.type": "chat", "gen_ai.operation.name": "chat"}  # messages still to come
    assert genai.take_span(_span(genai_form), parts) and parts.calls[-1].span_id == "cd" * 8
    assert len(parts.calls) == 2


def test_a_span_s_conversation_is_its_conversation_id_then_traceloop_s_session_then_session_id_on_any_span():
    conversation = {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv"}}
    traceloop = {"key": openllmetry.SESSION_ID, "value": {"stringValue": "traceloop"}}
    session = {"key": "session.id", "value": {"stringValue": "session"}}
    chat = {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}
    assert _conversation_id([session, traceloop, conversation]) == "conv"
    assert _conversation_id([session, traceloop, chat]) == "traceloop"
    assert _conversation_id([session]) == _conversation_id([session, chat]) == "session"
    number = {"key": openllmetry.SESSION_ID, "value": {"intValue": "7"}}
    assert _conversation_id([number]) is None
    parts = TraceParts("t", "f.json")
    genai.take_span(_span({openllmetry.SESSION_ID: "traceloop", "session.id": "session"}), parts)
    assert parts.conversation == "traceloop"  # what the store groups by, the shard's key with it


def test_traceloop_s_session_groups_a_conversation_s_traces_and_is_the_shard_key():
    config = source_config("prod", {"otlp": "openllmetry-0.54.0-flattened.json"})
    whole = [item for item in read.conversations(config, FIXTURES) if isinstance(item, Conversation)]
    assert [(item.key, len(item.trace_ids), len(item.turns)) for item in whole] == [
        ("conv-0000", 2, 2),
        ("conv-0001", 2, 2),
    ]
    for index in (1, 2):
        read.forget_sources()
        mine = [
            item.key
            for item in read.conversations(config, FIXTURES, (index, 2))
            if isinstance(item, Conversation)
        ]
        assert mine == [item.key for item in whole if shard_of(item.key, 2) == index]


def test_bedrock_content_blocks_are_read_and_other_lists_are_not_taken_for_them():
    use = {"toolUse": {"toolUseId": "c1", "name": "issue_refund", "input": {"order_id": "ORD-1"}}}
    result = {
        "toolResult": {
            "toolUseId": "c1",
            "status": "success",
            "content": [{"text": '{"refunded": '}, {"json": 1}],
        }
    }
    assert block_messages("assistant", [{"text": "Refunding."}, use]) == [
        Message("assistant", "Refunding.", (CallMade("issue_refund", {"order_id": "ORD-1"}, "c1"),))
    ]
    assert block_messages("user", [result]) == [Message("tool", '{"refunded": 1', call_id="c1")]
    assert blocks_of(json.dumps([{"type": "text", "text": "hi"}])) is None  # the OpenAI chat shape's parts
    assert blocks_of([{"image": {}}]) is None and blocks_of("Please refund [ORD-1]") is None
    assert unblocked('[{"text": "{\\"refunded\\": \\"ORD-1\\"}"}]') == {"refunded": "ORD-1"}
    assert unblocked('[{"text": "a"}, {"toolUse": {}}]') == [
        {"text": "a"},
        {"toolUse": {}},
    ]  # not a result's text


def test_the_calls_a_model_call_s_input_says_were_asked_for_are_counted_once_each():
    """A call's input names the calls its turn asked for before it: counted when the model call that
    asked is missing, not again when it is there (by id, else by name and arguments, as many times
    as the input asks), and an earlier turn's calls stay in that turn."""
    from specengine.traces.model import ModelCall
    from specengine.traces.turns import conversation_of

    user, again = Message("user", "Where are A1 and A1?"), Message("user", "And B2?")
    lookup = CallMade("lookup_order", {"order_id": "A1"})
    twice = Message("assistant", "", (lookup, lookup))
    result = Message("tool", "shipped")
    first = ModelCall(1, 2, (user,), (twice,))
    second = ModelCall(3, 4, (user, twice, result, result), (Message("assistant", "Both shipped."),))
    named = CallMade("lookup_order", {"order_id": "B2"}, "c2")
    later = (user, twice, Message("assistant", "Both shipped."), again, Message("assistant", "", (named,)))
    third = ModelCall(5, 6, (*later, Message("tool", "late", call_id="c2")), (Message("assistant", "Late."),))

    def turns(*calls: ModelCall) -> list[tuple[str, list[tuple[str, object, object]]]]:
        parts = TraceParts("t", "f.json", calls=list(calls))
        read = conversation_of("t", "s", [parts])
        return [
            (turn.user, [(use.name, use.args, use.result) for use in turn.tool_calls]) for turn in read.turns
        ]

    both = [("lookup_order", {"order_id": "A1"}, None)] * 2
    late = ("And B2?", [("lookup_order", {"order_id": "B2"}, "late")])
    assert turns(first, second, third) == [(user.text, both), late]
    assert turns(second, third) == [(user.text, both), late]  # the first call's span is missing
    assert turns(third) == [late]  # an earlier turn's calls are not this turn's
