// A chat route built with Vercel's AI SDK (`ai` 6) and its scripted model (MockLanguageModelV3, no key),
// answering useChat's UI message stream on POST /api/chat, as a Next.js route handler would.
//
// The agent helps with orders. "where is order A-17?" calls lookup_order (its input streamed in two
// deltas), then says where the order is; "cancel it" finds the order in the conversation the client
// resent (the lookup_order call of the assistant's message) and calls cancel_order. The planted bug:
// the order id loses its dash (cancel_order({order_id: "A17"})) while the reply names the right order,
// so only an argument check on the second turn finds it. A message with "crash" makes the model throw:
// the stream carries an `error` chunk inside a 200 answer.
//
// Usage: node server.mjs PORT (prints "listening" once it serves on 127.0.0.1:PORT).
import { createServer } from "node:http";
import { convertToModelMessages, stepCountIs, streamText, tool } from "ai";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { z } from "zod";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function finish(reason) {
  return { type: "finish", finishReason: { unified: reason, raw: reason }, usage };
}

function text(words) {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    ...words.map((delta) => ({ type: "text-delta", id: "t1", delta })),
    { type: "text-end", id: "t1" },
    finish("stop"),
  ];
}

function call(id, toolName, input) {
  const json = JSON.stringify(input);
  const half = Math.floor(json.length / 2);
  return [
    { type: "stream-start", warnings: [] },
    { type: "tool-input-start", id, toolName },
    { type: "tool-input-delta", id, delta: json.slice(0, half) },
    { type: "tool-input-delta", id, delta: json.slice(half) },
    { type: "tool-input-end", id },
    { type: "tool-call", toolCallId: id, toolName, input: json },
    finish("tool-calls"),
  ];
}

function contentText(message) {
  return typeof message.content === "string"
    ? message.content
    : message.content.filter((part) => part.type === "text").map((part) => part.text).join("");
}

function orderInConversation(prompt) {
  for (const message of [...prompt].reverse()) {
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    for (const part of [...message.content].reverse()) {
      if (part.type === "tool-call" && part.toolName === "lookup_order") {
        const input = typeof part.input === "string" ? JSON.parse(part.input) : part.input;
        return input.order_id;
      }
    }
  }
  return undefined;
}

function script(prompt) {
  const last = prompt[prompt.length - 1];
  if (last.role === "tool") {
    const result = last.content[last.content.length - 1].output.value;
    return text(["Order ", `${orderInConversation(prompt) ?? result.order} `, `is ${result.status}.`]);
  }
  const said = contentText(last);
  if (said.includes("crash")) throw new Error("the order database is down");
  const order = said.match(/\b([A-Z]-\d+)\b/);
  if (order) return call("call_lookup", "lookup_order", { order_id: order[1] });
  if (said.includes("cancel")) {
    const known = orderInConversation(prompt);
    if (!known) return text(["Which order?"]);
    return call("call_cancel", "cancel_order", { order_id: known.replace("-", "") }); // the planted bug
  }
  return text(["How can I help ", "with your order?"]);
}

const model = new MockLanguageModelV3({
  doStream: async ({ prompt }) => ({ stream: simulateReadableStream({ chunks: script(prompt) }) }),
});

const tools = {
  lookup_order: tool({
    description: "Look an order up.",
    inputSchema: z.object({ order_id: z.string() }),
    execute: async ({ order_id }) => ({ order: order_id, status: "shipped" }),
  }),
  cancel_order: tool({
    description: "Cancel an order.",
    inputSchema: z.object({ order_id: z.string() }),
    execute: async ({ order_id }) => ({ order: order_id, status: "cancelled" }),
  }),
};

const server = createServer(async (request, response) => {
  if (request.method !== "POST" || request.url !== "/api/chat") {
    response.writeHead(404, { "content-type": "application/json" }).end('{"error": "not found"}');
    return;
  }
  let raw = "";
  for await (const chunk of request) raw += chunk;
  try {
    const body = JSON.parse(raw);
    const result = streamText({
      model,
      messages: await convertToModelMessages(body.messages),
      tools,
      stopWhen: stepCountIs(3),
    });
    result.pipeUIMessageStreamToResponse(response, { onError: (error) => String(error.message ?? error) });
  } catch (error) {
    response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: String(error) }));
  }
});

server.listen(Number(process.argv[2]), "127.0.0.1", () => console.log("listening"));
