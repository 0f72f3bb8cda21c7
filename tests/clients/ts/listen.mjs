#!/usr/bin/env node
// MCP 2026-07-28 with a real client: the official MCP TypeScript SDK 2.x (@modelcontextprotocol/
// client) connects with versionNegotiation 'auto', which probes server/discover and speaks the
// stateless revision when the server offers it, then listens to an agent's inbox with
// subscriptions/listen (client.listen).
//
// Usage: node listen.mjs http://127.0.0.1:PORT/mcp
//
// Flow: connect (server/discover, no initialize) -> the era is modern, version 2026-07-28 ->
// ensure_project, register two agents -> listen to the recipient's inbox (the acknowledged filter
// names it) -> send it mail -> notifications/resources/updated names the inbox -> resources/read
// shows the message -> close the subscription (it ends 'local') -> a listen naming an unknown
// agent is refused naming the field -> the server still answers. Exit 0 when every check passed.

import { randomUUID } from "node:crypto";

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

import { CheckFailed, check, runWithUrl, tool } from "./checks.mjs";

const log = (msg) => console.log(`[ts-sdk-listen] ${msg}`);


async function main(url) {
  const client = new Client(
    { name: "mailroom-ts-listen", version: "0.0.0" },
    { versionNegotiation: { mode: "auto" } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  check(client.getProtocolEra() === "modern", `era: ${client.getProtocolEra()}`);
  check(
    client.getNegotiatedProtocolVersion() === "2026-07-28",
    `negotiated ${client.getNegotiatedProtocolVersion()}`,
  );
  const discovered = client.getDiscoverResult();
  check(discovered?.supportedVersions?.includes("2025-11-25"), "supportedVersions lacks 2025-11-25");
  check(client.getServerVersion()?.name === "mcp-agent-mail", `server: ${client.getServerVersion()?.name}`);
  log("ok   server/discover: the modern era at 2026-07-28, no initialize");

  const project = `/tmp/ts-listen-${randomUUID().slice(0, 8)}`;
  const slug = (await tool(client, "ensure_project", { human_key: project })).slug;
  for (const name of ["BlueLake", "GreenCastle"]) {
    await tool(client, "register_agent", { project_key: project, name, program: "ts-listen", model: "test" });
  }
  await tool(client, "set_contact_policy", { project_key: project, agent_name: "GreenCastle", policy: "open" });
  const uri = `resource://inbox/GreenCastle?project=${slug}`;

  const updates = [];
  let arrived;
  const notified = new Promise((resolve) => {
    arrived = resolve;
  });
  client.setNotificationHandler("notifications/resources/updated", (note) => {
    updates.push(note.params.uri);
    arrived();
  });
  const subscription = await client.listen({ resourceSubscriptions: [uri] });
  check(
    JSON.stringify(subscription.honoredFilter.resourceSubscriptions) === JSON.stringify([uri]),
    `honored filter: ${JSON.stringify(subscription.honoredFilter)}`,
  );
  log(`ok   subscriptions/listen acknowledged ${uri}`);

  await tool(client, "send_message", {
    project_key: project, sender_name: "BlueLake", to: ["GreenCastle"], subject: "pushed", body_md: "hello",
  });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckFailed("no notification within 20 s")), 20000);
  });
  await Promise.race([notified, timeout]);
  clearTimeout(timer);
  check(updates[0] === uri, `notified of ${JSON.stringify(updates)}, subscribed to ${uri}`);
  log("ok   notifications/resources/updated arrived on the listen stream, naming the inbox");

  const read = await client.readResource({ uri });
  const inbox = JSON.parse(read.contents[0].text);
  const subjects = (inbox.messages ?? []).map((m) => m.subject);
  check(JSON.stringify(subjects) === JSON.stringify(["pushed"]), `inbox: ${JSON.stringify(subjects)}`);
  log("ok   the inbox resource holds the message it announced");

  await subscription.close();
  check((await subscription.closed) === "local", "the subscription did not end locally");
  log("ok   the subscription closed");

  let refused;
  try {
    const bad = await client.listen({ resourceSubscriptions: [`resource://inbox/Nobody?project=${slug}`] });
    await bad.close();
  } catch (e) {
    refused = e;
  }
  check(refused !== undefined, "a listen naming an unknown agent was acknowledged");
  check(String(refused.message).includes("resourceSubscriptions[0]"), `refusal: ${refused.message}`);
  log("ok   a listen naming an unknown agent is refused, naming the field");
  const tools = await client.listTools();
  check(tools.tools.length > 40, `tools/list after the refusal: ${tools.tools.length}`);
  log("ok   the server still answers");
  await client.close();
  log("PASS");
}

runWithUrl(main, "listen.mjs", log);
