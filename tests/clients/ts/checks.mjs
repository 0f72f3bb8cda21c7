// What the TypeScript client scripts of tests/clients share: a failed check, a tool call's JSON
// answer and the `node script.mjs URL` entry point.

export class CheckFailed extends Error {}

export function check(cond, msg) {
  if (!cond) throw new CheckFailed(msg);
}

/** Calls `name` on an SDK client; its JSON answer (a failed call fails the check). */
export async function tool(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  const text = result.content?.[0]?.text ?? "";
  check(!result.isError, `${name} failed: ${text}`);
  return JSON.parse(text);
}

/** `node SCRIPT URL`: runs `main(url)`; exits 0 when it passed, 1 when a check failed, 2 without a URL. */
export function runWithUrl(main, script, log) {
  const url = process.argv[2];
  if (!url) {
    console.error(`usage: node ${script} http://127.0.0.1:PORT/mcp`);
    process.exit(2);
  }
  main(url).then(
    () => process.exit(0),
    (err) => {
      log(`FAIL: ${err instanceof CheckFailed ? err.message : err?.stack ?? err}`);
      process.exit(1);
    },
  );
}
