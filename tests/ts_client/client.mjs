// Drive `mcp-hooks serve` with the TypeScript MCP SDK and print what came back as JSON.
//
//   node client.mjs stdio <command> [args...]
//   node client.mjs http <url> [token]
//   node client.mjs denied <url> <token|-> [oauth]
//
// stdio and http: call tools/list, fire_hook_event (a before_tool event for `rm -rf /`) and
// resources/read of hooks://index, and print {tools, outcome, isError, index, protocol}.
// denied: connect with a wrong token (or none, `-`), expect the connection to fail, and print
// {error, requests, redirected}: the error's message, every request the SDK made
// ("METHOD path"), and whether it tried to send a person to an authorization page. With
// `oauth` the transport gets an OAuth client provider, as the MCP Inspector's does, so a 401
// makes the SDK look for OAuth.
//
//   node client.mjs ask <action|none> <content JSON|-> <tool> <arguments JSON> stdio <command> [args...]
//   node client.mjs ask <action|none> <content JSON|-> <tool> <arguments JSON> http <url> <token>
//
// ask: a client with an elicitation handler that answers every form with <action> (accept,
// decline, cancel; with <content> when it accepts), or none: a client without the elicitation
// capability; call <tool> once and print {result, forms}: the tool's result and the message of
// every form shown.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "ask") {
  await ask(target, ...rest);
  process.exit(0);
} else if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else if (mode === "denied") {
  await denied(target, rest[0], rest[1] === "oauth");
  process.exit(0);
} else {
  console.error("usage: client.mjs stdio <command> [args...] | http <url> [token] | denied <url> <token|-> [oauth]");
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

async function denied(url, token, oauth) {
  const requests = [];
  let redirected = false;
  const recording = async (input, init) => {
    const where = new URL(input instanceof Request ? input.url : String(input));
    requests.push(`${init?.method ?? (input instanceof Request ? input.method : "GET")} ${where.pathname}`);
    return fetch(input, init);
  };
  const headers = token && token !== "-" ? { Authorization: `Bearer ${token}` } : {};
  const options = { requestInit: { headers }, fetch: recording };
  if (oauth) {
    let client;
    options.authProvider = {
      get redirectUrl() { return "http://127.0.0.1:9/callback"; },
      get clientMetadata() {
        return { client_name: "ts-e2e", redirect_uris: ["http://127.0.0.1:9/callback"] };
      },
      clientInformation: () => client,
      saveClientInformation: (info) => { client = info; },
      tokens: () => undefined,
      saveTokens: () => {},
      redirectToAuthorization: () => { redirected = true; },
      saveCodeVerifier: () => {},
      codeVerifier: () => "verifier",
    };
  }
  const denied = new Client({ name: "ts-e2e-denied", version: "1.0.0" });
  let error = null;
  try {
    await denied.connect(new StreamableHTTPClientTransport(new URL(url), options));
  } catch (exc) {
    error = String(exc?.message ?? exc);
  }
  console.log(JSON.stringify({ error, requests, redirected }));
}

async function ask(action, content, tool, args, how, where, ...more) {
  const transport = how === "stdio"
    ? new StdioClientTransport({ command: where, args: more, env: process.env, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(where), { requestInit: { headers: { Authorization: `Bearer ${more[0]}` } } });
  const capabilities = action === "none" ? {} : { elicitation: {} };
  const client = new Client({ name: "ts-ask", version: "1.0.0" }, { capabilities });
  const forms = [];
  if (action !== "none") {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      forms.push(request.params.message);
      return action === "accept" ? { action, content: JSON.parse(content) } : { action };
    });
  }
  await client.connect(transport);
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  console.log(JSON.stringify({
    result: { structured: result.structuredContent ?? null, isError: result.isError ?? false,
              text: (result.content ?? []).map((c) => c.text ?? "").join("\n") },
    forms,
  }));
  await client.close();
}
