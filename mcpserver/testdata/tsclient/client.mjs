// Drives `wasmpy mcp` (a subprocess over stdio) with the official
// TypeScript MCP SDK: a third-party client checking what the Go tests
// cannot, that another implementation reads our tools, schemas, structured
// results, errors and progress notifications as the protocol means them.
//
//   node client.mjs WASMPY_BINARY
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, ErrorCode } from "@modelcontextprotocol/sdk/types.js";

const binary = process.argv[2];
if (!binary) {
  console.error("usage: node client.mjs WASMPY_BINARY");
  process.exit(2);
}
const tmp = mkdtempSync(join(tmpdir(), "wasmpy-mcp-ts-"));
const transport = new StdioClientTransport({
  command: binary,
  args: ["mcp", "--db", join(tmp, "provenance.db")],
  stderr: "inherit",
});
const client = new Client({ name: "wasmpy-ts-test", version: "1.0.0" });

function text(res) {
  return res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function expectProtocolError(promise, code, fragment) {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof McpError, `want an McpError, got ${err}`);
    assert.equal(err.code, code, err.message);
    assert.match(err.message, fragment);
    return;
  }
  assert.fail(`want a protocol error matching ${fragment}`);
}

const checks = [];
async function check(name, fn) {
  await fn();
  checks.push(name);
}

try {
  await client.connect(transport);

  await check("list tools", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const want of ["run_python", "write_file", "read_file", "list_files", "session_create", "session_fork", "session_close", "text_summarize", "extract_entities"]) {
      assert.ok(names.includes(want), `tools/list lacks ${want}: ${names}`);
    }
    const run = tools.find((t) => t.name === "run_python");
    assert.match(run.description, /no network/);
    assert.equal(run.inputSchema.required[0], "code");
    const sum = tools.find((t) => t.name === "text_summarize");
    assert.deepEqual(sum.inputSchema.required, ["text"]);
    assert.equal(sum.outputSchema.type, "object");
  });

  await check("run code, with streamed output", async () => {
    // The SDK runs notification handlers a microtask late, and drops the
    // progress of a request whose response came in the same read: so count
    // the notifications as the transport delivers them, in wire order.
    const wire = [];
    const deliver = transport.onmessage;
    transport.onmessage = (msg, extra) => {
      if (msg.method === "notifications/progress") wire.push(msg.params);
      deliver(msg, extra);
    };
    const res = await client.callTool(
      { name: "run_python", arguments: { code: "for i in range(3):\n    print('line', i, flush=True)\nsubmit_result({'squares': [i*i for i in range(4)]})" } },
      undefined,
      { onprogress: () => {} },
    );
    transport.onmessage = deliver;
    assert.equal(res.isError, undefined, text(res));
    assert.equal(res.structuredContent.stdout, "line 0\nline 1\nline 2\n");
    assert.deepEqual(res.structuredContent.output, { squares: [0, 1, 4, 9] });
    assert.match(text(res), /stdout:\nline 0/);
    assert.deepEqual(wire.map((p) => p.message), ["line 0\n", "line 1\n", "line 2\n"], "one notification a flushed line, before the result");
    assert.ok(wire.every((p, i) => i === 0 || p.progress > wire[i - 1].progress), "progress increases");
    assert.ok(wire.every((p) => p._meta.stream === "stdout"));
  });

  await check("a Python session across turns", async () => {
    let res = await client.callTool({ name: "session_create", arguments: {} });
    const id = res.structuredContent.session_id;
    assert.equal(typeof id, "string", text(res));
    res = await client.callTool({ name: "run_python", arguments: { session_id: id, code: "import statistics\ndata = [2, 4, 4, 4, 5, 5, 7, 9]\ndef spread(): return statistics.pstdev(data)" } });
    assert.equal(res.isError, undefined, text(res));
    assert.equal(res.structuredContent.session.turn, 1);
    res = await client.callTool({ name: "run_python", arguments: { session_id: id, code: "data.append(10)\nprint(len(data), spread() > 2)" } });
    assert.equal(res.structuredContent.stdout, "9 True\n");
    res = await client.callTool({ name: "session_fork", arguments: { session_id: id } });
    const fork = res.structuredContent.session_id;
    await client.callTool({ name: "run_python", arguments: { session_id: fork, code: "data.clear()" } });
    res = await client.callTool({ name: "run_python", arguments: { session_id: id, code: "print(len(data))" } });
    assert.equal(res.structuredContent.stdout, "9\n", "the fork is independent");
    res = await client.callTool({ name: "run_python", arguments: { code: "print('data' in globals())" } });
    assert.equal(res.structuredContent.stdout, "False\n", "a plain run sees no session state");
    res = await client.callTool({ name: "session_close", arguments: { session_id: id } });
    assert.equal(res.structuredContent.closed, true);
    res = await client.callTool({ name: "run_python", arguments: { session_id: id, code: "print(data)" } });
    assert.equal(res.isError, true);
    assert.match(text(res), /unknown_session/);
  });

  await check("files across turns (the MCP session's workspace)", async () => {
    let res = await client.callTool({ name: "write_file", arguments: { path: "data/prices.json", content: "[3, 1, 4, 1, 5]" } });
    assert.equal(res.structuredContent.path, "data/prices.json");
    res = await client.callTool({
      name: "run_python",
      arguments: { code: "import json\nprices = json.load(open('data/prices.json'))\njson.dump({'total': sum(prices)}, open('state.json', 'w'))" },
    });
    assert.equal(res.isError, undefined, text(res));
    assert.deepEqual(res.structuredContent.files.map((f) => f.path), ["state.json"]);
    res = await client.callTool({ name: "run_python", arguments: { code: "import json\nprint(json.load(open('state.json'))['total'] * 2)" } });
    assert.equal(res.structuredContent.stdout, "28\n");
    res = await client.callTool({ name: "read_file", arguments: { path: "state.json" } });
    assert.deepEqual(JSON.parse(res.structuredContent.content), { total: 14 });
    res = await client.callTool({ name: "list_files", arguments: {} });
    assert.deepEqual(res.structuredContent.files.map((f) => f.path), ["data/prices.json", "state.json"]);
  });

  await check("call a skill", async () => {
    const res = await client.callTool({
      name: "text_summarize",
      arguments: { text: "wasmpy runs Python in WebAssembly. It is isolated. Nothing leaks out. Every run is fresh.", max_sentences: 2 },
    });
    assert.equal(res.isError, undefined, text(res));
    assert.equal(typeof res.structuredContent.summary, "string");
    assert.ok(res.structuredContent.summary.length > 0);
  });

  await check("errors", async () => {
    const res = await client.callTool({ name: "run_python", arguments: { code: "import json\njson.loads('{')" } });
    assert.equal(res.isError, true);
    assert.equal(res.structuredContent.error.kind, "exception");
    assert.equal(res.structuredContent.error.type, "json.decoder.JSONDecodeError");
    assert.match(text(res), /run failed \(error kind: exception\): json.decoder.JSONDecodeError/);
    const slow = await client.callTool({ name: "run_python", arguments: { code: "while True: pass", limits: { timeout_ms: 200 } } });
    assert.equal(slow.isError, true);
    assert.equal(slow.structuredContent.error.kind, "timeout");
    await expectProtocolError(client.callTool({ name: "no_such_tool", arguments: {} }), ErrorCode.InvalidParams, /unknown tool/);
    await expectProtocolError(client.callTool({ name: "run_python", arguments: { code: 7 } }), ErrorCode.InvalidParams, /"code": want a string/);
    await expectProtocolError(client.callTool({ name: "text_summarize", arguments: { text: "" } }), ErrorCode.InvalidParams, /at \/text/);
  });

  console.log(`mcp-ts: ok (${checks.join("; ")})`);
} catch (err) {
  console.error(`mcp-ts: FAIL after [${checks.join("; ")}]: ${err.stack || err}`);
  process.exitCode = 1;
} finally {
  await client.close();
  rmSync(tmp, { recursive: true, force: true });
}
