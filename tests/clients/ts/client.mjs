#!/usr/bin/env node
// Independent-client test: drive a running mailroom server with the official MCP TypeScript SDK.
//
// Usage: node client.mjs http://127.0.0.1:PORT/mcp
// (MAILROOM_CLIENT_BEARER=TOKEN sends a bearer token with every request.)
//
// Flow: initialize (Client.connect) -> tools/list -> ensure_project -> register_agent x2 ->
// set_contact_policy(open) -> send_message -> fetch_inbox (message arrived, subject/body match) ->
// send_message from an unknown sender (isError, "not found"). Exit 0 when every check passed.

import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { isDeepStrictEqual } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const PREFIX = "ts-sdk-client";
const REQUIRED_TOOLS = ["ensure_project", "register_agent", "send_message", "fetch_inbox", "set_contact_policy"];
const KNOWN_PROTOCOLS = ["2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"];

class CheckFailed extends Error {}

const log = (msg) => console.log(`[${PREFIX}] ${msg}`);

function check(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

function short(value, limit = 600) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text !== undefined && text.length > limit ? `${text.slice(0, limit)}...(truncated)` : String(text);
}

function sdkVersion() {
  try {
    const require = createRequire(import.meta.url);
    // The package's exports map hides package.json, so locate it from the resolved entry point.
    const entry = require.resolve("@modelcontextprotocol/sdk/client/index.js");
    const root = entry.slice(0, entry.indexOf("/dist/"));
    return JSON.parse(readFileSync(`${root}/package.json`, "utf8")).version;
  } catch {
    return "unknown";
  }
}

class Runner {
  constructor(client) {
    this.client = client;
    this.schemas = new Map();
    this.checks = 0;
  }

  ok(msg) {
    this.checks += 1;
    log(`ok   ${msg}`);
  }

  // Add an auth token argument only if the server's schema for `tool` declares it.
  withToken(tool, args, param, token) {
    const props = this.schemas.get(tool)?.properties ?? {};
    return token && Object.hasOwn(props, param) ? { ...args, [param]: token } : args;
  }

  // Call a tool; return [parsed JSON of the text content (or the raw text on expected errors), raw result].
  async call(tool, args, { expectError = false } = {}) {
    const result = await this.client.callTool({ name: tool, arguments: args });
    const isError = result.isError === true;
    check(Array.isArray(result.content) && result.content.length > 0, `${tool}: result has no content list: ${short(result)}`);
    const texts = result.content.filter((c) => c?.type === "text").map((c) => c.text);
    check(texts.length > 0 && typeof texts[0] === "string", `${tool}: result has no text content item: ${short(result)}`);
    const text = texts[0];
    if (expectError) {
      check(isError, `${tool}: expected isError=true, got a success result: ${short(result)}`);
      return [text, result];
    }
    check(!isError, `${tool}(${short(args, 300)}) returned isError=true: ${short(text)}`);
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      throw new CheckFailed(`${tool}: text content is not JSON (${e.message}): ${short(text)}`);
    }
    const structured = result.structuredContent;
    check(structured !== undefined && structured !== null, `${tool}: result has no structuredContent: ${short(result)}`);
    if (Array.isArray(parsed)) {
      check(
        isDeepStrictEqual(structured, { result: parsed }),
        `${tool}: list result: structuredContent should be {"result": <text JSON>}; ` +
          `text=${short(parsed, 300)} structuredContent=${short(structured, 300)}`,
      );
    } else {
      check(
        isDeepStrictEqual(structured, parsed),
        `${tool}: structuredContent differs from the text content's JSON; ` +
          `text=${short(parsed, 300)} structuredContent=${short(structured, 300)}`,
      );
    }
    return [parsed, result];
  }

  async run(transport) {
    const version = this.client.getServerVersion();
    const caps = this.client.getServerCapabilities();
    const protocol = transport.protocolVersion;
    log(`initialized: protocolVersion=${protocol} serverInfo=${JSON.stringify(version)} session=${transport.sessionId ?? "none"}`);
    check(KNOWN_PROTOCOLS.includes(protocol), `initialize: unexpected protocolVersion ${JSON.stringify(protocol)}`);
    check(caps && typeof caps === "object" && "tools" in caps, `initialize: server capabilities lack 'tools': ${short(caps)}`);
    this.ok("initialize (tools capability advertised)");

    const { tools } = await this.client.listTools();
    for (const t of tools) this.schemas.set(t.name, t.inputSchema ?? {});
    const missing = REQUIRED_TOOLS.filter((t) => !this.schemas.has(t));
    check(missing.length === 0, `tools/list: missing tools ${JSON.stringify(missing)}; server listed ${JSON.stringify([...this.schemas.keys()].sort())}`);
    for (const t of REQUIRED_TOOLS) {
      check(this.schemas.get(t).type === "object", `tools/list: ${t} inputSchema is not an object schema`);
    }
    this.ok(`tools/list (${tools.length} tools, required ones present)`);

    const humanKey = `/tmp/ts-client-${randomUUID().slice(0, 12)}`;
    const [project] = await this.call("ensure_project", { human_key: humanKey });
    check(project && typeof project === "object" && !Array.isArray(project), `ensure_project: expected an object, got ${short(project)}`);
    check(project.human_key === humanKey, `ensure_project: human_key ${JSON.stringify(project.human_key)} != ${JSON.stringify(humanKey)}`);
    check(Number.isInteger(project.id) && typeof project.slug === "string" && project.slug.length > 0, `ensure_project: missing id/slug: ${short(project)}`);
    this.ok(`ensure_project -> id=${project.id} slug=${project.slug}`);

    const tokens = {};
    for (const [name, task] of [["BlueLake", "ts client sender"], ["GreenCastle", "ts client recipient"]]) {
      const [agent] = await this.call("register_agent", {
        project_key: humanKey,
        program: "ts-sdk-client",
        model: "test-model",
        name,
        task_description: task,
      });
      check(agent && agent.name === name, `register_agent: expected an agent named ${name}, got ${short(agent)}`);
      tokens[name] = agent.registration_token;
      this.ok(`register_agent ${name}`);
    }

    const [policy] = await this.call(
      "set_contact_policy",
      this.withToken("set_contact_policy", { project_key: humanKey, agent_name: "GreenCastle", policy: "open" }, "registration_token", tokens.GreenCastle),
    );
    check(policy && policy.policy === "open", `set_contact_policy: expected policy 'open', got ${short(policy)}`);
    this.ok("set_contact_policy GreenCastle -> open");

    const marker = randomUUID().slice(0, 8);
    const subject = `Hello from the TypeScript SDK ${marker}`;
    const body = `Body **markdown** from the TypeScript SDK client.\n\nmarker: ${marker}`;
    const [sent] = await this.call(
      "send_message",
      this.withToken(
        "send_message",
        { project_key: humanKey, sender_name: "BlueLake", to: ["GreenCastle"], subject, body_md: body },
        "sender_token",
        tokens.BlueLake,
      ),
    );
    check(sent && typeof sent === "object" && !Array.isArray(sent), `send_message: expected an object, got ${short(sent)}`);
    check(!("error" in sent), `send_message: delivery failed: ${short(sent)}`);
    check(sent.count === 1, `send_message: expected count 1, got ${short(sent)}`);
    check(Array.isArray(sent.deliveries) && sent.deliveries.length === 1, `send_message: expected one delivery, got ${short(sent)}`);
    const payload = sent.deliveries[0].payload ?? {};
    check(payload.subject === subject, `send_message: payload subject mismatch: ${short(payload)}`);
    const messageId = payload.id;
    check(Number.isInteger(messageId), `send_message: payload has no integer id: ${short(payload)}`);
    this.ok(`send_message BlueLake -> GreenCastle (message id ${messageId})`);

    const [inbox] = await this.call(
      "fetch_inbox",
      this.withToken("fetch_inbox", { project_key: humanKey, agent_name: "GreenCastle", include_bodies: true }, "registration_token", tokens.GreenCastle),
    );
    check(Array.isArray(inbox), `fetch_inbox: expected a JSON list, got ${short(inbox)}`);
    const msg = inbox.find((m) => m && m.id === messageId);
    check(msg, `fetch_inbox: message ${messageId} not in GreenCastle's inbox: ${short(inbox)}`);
    check(msg.subject === subject, `fetch_inbox: subject ${JSON.stringify(msg.subject)} != ${JSON.stringify(subject)}`);
    check(msg.body_md === body, `fetch_inbox: body_md ${JSON.stringify(msg.body_md)} != ${JSON.stringify(body)}`);
    check(msg.from === "BlueLake", `fetch_inbox: from ${JSON.stringify(msg.from)} != "BlueLake"`);
    check(msg.kind === "to", `fetch_inbox: kind ${JSON.stringify(msg.kind)} != "to"`);
    this.ok("fetch_inbox GreenCastle: message arrived with subject, body, from, kind");

    const [text] = await this.call(
      "send_message",
      { project_key: humanKey, sender_name: "PurpleBadger", to: ["GreenCastle"], subject: "should fail", body_md: "unknown sender" },
      { expectError: true },
    );
    check(text.toLowerCase().includes("not found"), `send_message (unknown sender): error text lacks 'not found': ${short(text)}`);
    this.ok(`send_message from unknown sender -> isError (${short(text, 120)})`);
  }
}

async function main() {
  const url = process.argv[2];
  if (!url) {
    console.error("usage: node client.mjs http://127.0.0.1:PORT/mcp");
    return 2;
  }
  const timeoutMs = Number(process.env.MAILROOM_CLIENT_TIMEOUT ?? "60") * 1000;
  log(`@modelcontextprotocol/sdk ${sdkVersion()}, node ${process.version}, url ${url}`);

  const client = new Client({ name: "mailroom-ts-client-test", version: "0.0.0" });
  // With MAILROOM_CLIENT_BEARER set, every request carries it as a bearer token.
  const bearer = process.env.MAILROOM_CLIENT_BEARER;
  const requestInit = bearer ? { headers: { Authorization: `Bearer ${bearer}` } } : undefined;
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed(`timed out after ${timeoutMs / 1000}s talking to ${url}`)), timeoutMs);
  });
  const runner = new Runner(client);
  try {
    await Promise.race([
      (async () => {
        await client.connect(transport);
        await runner.run(transport);
      })(),
      timeout,
    ]);
    log(`PASS: ${runner.checks} checks passed`);
    return 0;
  } catch (e) {
    if (e instanceof CheckFailed) {
      log(`FAIL: ${e.message}`);
    } else {
      console.error(e);
      const cause = e?.cause ? ` (cause: ${e.cause.message ?? e.cause})` : "";
      log(`FAIL: ${e?.name ?? "Error"}: ${e?.message ?? e}${cause}`);
    }
    return 1;
  } finally {
    clearTimeout(timer);
    try {
      await Promise.race([client.close(), new Promise((r) => setTimeout(r, 2000))]);
    } catch {
      // closing is best effort
    }
  }
}

process.exitCode = await main();
// Do not wait for lingering sockets (e.g. a pending SSE GET) to drain.
process.exit(process.exitCode);
