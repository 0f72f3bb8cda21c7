#!/usr/bin/env node
// Push to a real client: the official MCP TypeScript SDK subscribes to an agent's inbox resource
// and receives notifications/resources/updated when mail for that agent commits.
//
// Usage: node push.mjs http://127.0.0.1:PORT/mcp
//
// Flow: connect (the SDK opens the session's GET stream) -> ensure_project, register two agents ->
// resources/subscribe to the recipient's inbox -> a second client sends it mail -> the subscribed
// client is told, naming the inbox URI -> resources/read shows the message -> unsubscribe.
// Exit 0 when every check passed.

import { randomUUID } from "node:crypto";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { CheckFailed, check, runWithUrl, tool } from "./checks.mjs";

const log = (msg) => console.log(`[ts-sdk-push] ${msg}`);


async function connect(url) {
  const client = new Client({ name: "mailroom-ts-push", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function main(url) {
  const client = await connect(url);
  const caps = client.getServerCapabilities();
  check(caps?.resources?.subscribe === true, `resources.subscribe is ${caps?.resources?.subscribe}`);
  const updates = [];
  let arrived;
  const notified = new Promise((resolve) => {
    arrived = resolve;
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (note) => {
    updates.push(note.params.uri);
    arrived();
  });

  const project = `/tmp/ts-push-${randomUUID().slice(0, 10)}`;
  const { slug } = await tool(client, "ensure_project", { human_key: project });
  for (const name of ["BlueLake", "GreenCastle"]) {
    await tool(client, "register_agent", { project_key: project, name, program: "ts-push", model: "test" });
  }
  await tool(client, "set_contact_policy", { project_key: project, agent_name: "GreenCastle", policy: "open" });
  const uri = `resource://inbox/GreenCastle?project=${slug}`;
  await client.subscribeResource({ uri });
  log(`ok   subscribed to ${uri}`);

  const other = await connect(url);
  await tool(other, "send_message", {
    project_key: project, sender_name: "BlueLake", to: ["GreenCastle"], subject: "pushed", body_md: "hello",
  });
  await other.close();
  // Bounded so a missing notification fails instead of hanging.
  const bound = new Promise((_, reject) => setTimeout(() => reject(new CheckFailed("no notification within 20 s")), 20000));
  await Promise.race([notified, bound]);
  check(updates.length === 1 && updates[0] === uri, `expected one update for ${uri}, got ${JSON.stringify(updates)}`);
  log("ok   notifications/resources/updated arrived, naming the inbox");

  const read = await client.readResource({ uri });
  const inbox = JSON.parse(read.contents[0].text);
  const subjects = (inbox.messages ?? []).map((m) => m.subject);
  check(JSON.stringify(subjects) === JSON.stringify(["pushed"]), `inbox after the notification: ${subjects}`);
  log("ok   the inbox resource holds the message it announced");
  await client.unsubscribeResource({ uri });
  log("ok   unsubscribed");
  await client.close();
  log("PASS");
}

runWithUrl(main, "push.mjs", log);
