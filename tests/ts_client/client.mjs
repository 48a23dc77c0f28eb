// Drive `mcp-hooks serve` with the TypeScript MCP SDK and print what came back as JSON.
//
//   node client.mjs stdio <command> [args...]
//   node client.mjs http <url> [token]
//
// Calls tools/list, fire_hook_event (a before_tool event for `rm -rf /`) and resources/read
// of hooks://index, and prints {tools, outcome, isError, index, protocol} on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else {
  console.error("usage: client.mjs stdio <command> [args...] | http <url> [token]");
  process.exit(64);
}

const client = new Client({ name: "ts-e2e", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const fired = await client.callTool({
  name: "fire_hook_event",
  arguments: { event_type: "before_tool", tool_name: "Bash", tool_input: { command: "rm -rf /" } },
});
const index = await client.readResource({ uri: "hooks://index" });
const bad = await client.callTool({ name: "get_hook", arguments: { name: "../etc/passwd" } });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? null, hasOutputSchema: !!t.outputSchema })),
  outcome: fired.structuredContent,
  isError: fired.isError ?? false,
  index: JSON.parse(index.contents[0].text),
  badIsError: bad.isError ?? false,
  protocol: client.getServerVersion(),
}));
await client.close();
