#!/usr/bin/env node
// Independent-client test of the stdio transport with the official MCP TypeScript SDK.
//
// Usage: node stdio.mjs path/to/mailroom
//
// Five stdio clients (StdioClientTransport, each starting its own `mailroom serve --stdio`)
// work at once on one fresh data directory: each registers an agent, sends one message to
// every other and reads its inbox. Checks: every message delivered exactly once; one server
// (started in the background by the first bridge) served them all and outlives them. The
// server is stopped at the end. Exit 0 when every check passed.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const PREFIX = "ts-sdk-stdio";
const CLIENTS = 5;
const PROJECT = "/tmp/mailroom-stdio-ts-project";

class CheckFailed extends Error {}
const log = (msg) => console.log(`[${PREFIX}] ${msg}`);
function check(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  const text = result.content?.[0]?.text ?? "";
  check(!result.isError, `${name}(${JSON.stringify(args)}) failed: ${text}`);
  return JSON.parse(text);
}

const serverPid = (dataDir) => {
  try {
    return Number.parseInt(readFileSync(join(dataDir, "server.pid"), "utf8").trim(), 10);
  } catch {
    return undefined;
  }
};

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function main(binary) {
  const work = mkdtempSync(join(tmpdir(), "mailroom-stdio-ts-"));
  const dataDir = join(work, "data");
  // Port 0: the background server picks a free port (tests run side by side).
  const env = { ...process.env, HTTP_PORT: "0" };
  const clients = [];
  try {
    for (let i = 0; i < CLIENTS; i++) {
      const transport = new StdioClientTransport({
        command: binary,
        args: ["serve", "--stdio", "--data-dir", dataDir],
        env,
        stderr: "ignore",
      });
      clients.push({ client: new Client({ name: `${PREFIX}-${i}`, version: "1.0.0" }), transport });
    }
    await Promise.all(clients.map(({ client, transport }) => client.connect(transport)));
    log(`${CLIENTS} stdio clients connected at once`);
    await call(clients[0].client, "ensure_project", { human_key: PROJECT });
    const names = await Promise.all(
      clients.map(async ({ client }) => {
        const agent = await call(client, "register_agent", {
          project_key: PROJECT,
          program: "ts-sdk",
          model: "stdio-test",
        });
        await call(client, "set_contact_policy", {
          project_key: PROJECT,
          agent_name: agent.name,
          policy: "open",
        });
        return agent.name;
      }),
    );
    check(new Set(names).size === CLIENTS, `five distinct agents: ${names}`);
    log(`registered ${names.join(", ")}`);
    await Promise.all(
      clients.map(async ({ client }, i) => {
        for (const other of names.filter((n) => n !== names[i])) {
          await call(client, "send_message", {
            project_key: PROJECT,
            sender_name: names[i],
            to: [other],
            subject: `${names[i]} to ${other}`,
            body_md: "over stdio",
          });
        }
      }),
    );
    const inboxes = await Promise.all(
      clients.map(({ client }, i) =>
        call(client, "fetch_inbox", { project_key: PROJECT, agent_name: names[i], limit: 100 }),
      ),
    );
    inboxes.forEach((messages, i) => {
      const got = messages.map((m) => m.subject).sort();
      const want = names
        .filter((n) => n !== names[i])
        .map((n) => `${n} to ${names[i]}`)
        .sort();
      check(JSON.stringify(got) === JSON.stringify(want), `${names[i]}'s inbox: ${got}, expected ${want}`);
    });
    log(`every one of ${CLIENTS * (CLIENTS - 1)} messages delivered exactly once`);
    const pid = serverPid(dataDir);
    check(pid !== undefined && alive(pid), "a server runs for the data directory");
    const record = JSON.parse(readFileSync(join(dataDir, "server.json"), "utf8"));
    check(record.pid === pid, `server.json names the lock holder: ${record.pid} vs ${pid}`);
    await Promise.all(clients.map(({ client }) => client.close()));
    await new Promise((resolve) => setTimeout(resolve, 500));
    check(alive(pid), "the background server outlives its stdio clients");
    const serverLog = readFileSync(join(dataDir, "server.log"), "utf8");
    check(serverLog.split("mailroom listening").length === 2, `one server started:\n${serverLog}`);
    check(!serverLog.includes("Another mailroom server"), `no second one tried:\n${serverLog}`);
    log("the background server outlived its clients");
    return 0;
  } catch (e) {
    log(`FAIL: ${e instanceof CheckFailed ? e.message : e.stack}`);
    return 1;
  } finally {
    await Promise.all(clients.map(({ client }) => client.close().catch(() => {})));
    const pid = serverPid(dataDir);
    if (pid !== undefined && alive(pid)) {
      process.kill(pid, "SIGTERM");
      for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
      if (alive(pid)) process.kill(pid, "SIGKILL");
    }
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv.length !== 3) {
  console.error("usage: node stdio.mjs path/to/mailroom");
  process.exit(2);
}
process.exit(await main(process.argv[2]));
