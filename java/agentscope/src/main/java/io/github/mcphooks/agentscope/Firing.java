package io.github.mcphooks.agentscope;

import io.agentscope.core.agent.Agent;
import io.agentscope.core.message.ContentBlock;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.MsgRole;
import io.agentscope.core.message.TextBlock;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.tool.Toolkit;
import io.github.mcphooks.client.McpHooksClient;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What {@link McpHooksHook} and {@link McpHooksMiddleware} share: AgentScope's objects turned
 * into events for the {@link McpHooksClient}, and its {@link Decision}s turned back into
 * AgentScope's objects. Uses only the API that agentscope-core 1.0.x and 2.0.x have in common.
 *
 * <p>It keeps no stop count: the server's loop guard counts a session's blocked stops and says
 * where it stands in each {@code before_stop} answer ({@link Decision#stopBlockCount()}).
 */
final class Firing {
    /** The default stop cap: consecutive before_stop blocks, as the server's default. */
    static final int DEFAULT_STOP_BLOCK_CAP = 8;
    /**
     * How a hook's ask reaches a person when nothing else is said: the deny at once, naming
     * the pending ask (the client gives up within seconds, so the server must not wait);
     * {@code mcp-hooks approve ID}, then the same call passes when the model makes it again.
     */
    static final String ASK_NOW = "ask=now";

    final McpHooksClient client;
    final String sessionId;
    final String workDir;
    final int stopBlockCap;
    /** before_tool context, by tool-use id, for the tool's result. */
    private final Map<String, List<String>> contextById = new ConcurrentHashMap<>();
    /** before_stop blocks in a row that the server did not count (failed forwards). */
    private final AtomicInteger uncounted = new AtomicInteger();

    Firing(McpHooksClient client, String sessionId, String workDir, int stopBlockCap) {
        if (client == null) {
            throw new IllegalArgumentException("mcp-hooks: a McpHooksClient is required");
        }
        if (stopBlockCap < 0) {
            throw new IllegalArgumentException("mcp-hooks: stopBlockCap must be >= 0, got "
                    + stopBlockCap);
        }
        this.client = client;
        this.sessionId = sessionId != null ? sessionId
                : "agentscope-java-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        this.workDir = workDir;
        this.stopBlockCap = stopBlockCap;
    }

    /** How many before_stop blocks in a row are honoured (at least one, as the engine's). */
    int stopCap() {
        return Math.max(stopBlockCap, 1);
    }

    CompletableFuture<Decision> fire(String event, Map<String, Object> fields) {
        return fire(event, fields, ASK_NOW);
    }

    /** {@link #fire(String, Map)} with the query saying how a hook's ask is answered. */
    CompletableFuture<Decision> fire(String event, Map<String, Object> fields, String query) {
        Map<String, Object> all = new LinkedHashMap<>();
        all.put("event_type", event);
        all.put("session_id", sessionId);
        if (workDir != null) {
            all.put("work_dir", workDir);
        }
        all.putAll(fields);
        String json;
        try {
            json = Jackson.write(all);
        } catch (IllegalArgumentException exc) {
            return CompletableFuture.completedFuture(Decision.of(client,
                    client.failed(event, "the event could not be sent: " + exc)));
        }
        return client.sendAsync(event, json, query)
                .thenApply(answer -> Decision.of(client, answer));
    }

    // -- before_agent ------------------------------------------------------------------------

    CompletableFuture<Decision> beforeAgent(Agent agent, List<Msg> input) {
        Map<String, Object> payload = new LinkedHashMap<>();
        Msg last = input == null || input.isEmpty() ? null : input.get(input.size() - 1);
        payload.put("prompt", text(last));
        payload.put("agent_name", agent == null ? null : agent.getName());
        return fire(Events.BEFORE_AGENT, Map.of("payload", payload));
    }

    // -- before_tool -------------------------------------------------------------------------

    /**
     * The call to run in place of {@code call}: itself, its rewrite (input and the raw JSON
     * {@code content} both set: AgentScope validates {@code content}), or, when denied, a call
     * with the same id of the stand-in tool that answers with the reason (registered on
     * {@code toolkit} on first use). A rewrite that cannot be applied is refused.
     */
    CompletableFuture<ToolUseBlock> beforeTool(Toolkit toolkit, ToolUseBlock call) {
        if (DeniedTool.NAME.equals(call.getName())) {
            return CompletableFuture.completedFuture(call);
        }
        return beforeToolDecision(call, ASK_NOW)
                .thenApply(decision -> applied(toolkit, call, decision));
    }

    /** {@code before_tool} for {@code call}, the ask answered as {@code query} says. */
    CompletableFuture<Decision> beforeToolDecision(ToolUseBlock call, String query) {
        Map<String, Object> input = call.getInput() == null ? Map.of() : call.getInput();
        return fire(Events.BEFORE_TOOL, toolFields(call.getName(), input, call.getId()), query);
    }

    /** The call {@code decision} lets run in place of {@code call} (see beforeTool). */
    ToolUseBlock applied(Toolkit toolkit, ToolUseBlock call, Decision decision) {
        if (decision.denied()) {
            return denied(toolkit, call, decision.refusal("tool call"));
        }
        if (!decision.additionalContext().isEmpty() && call.getId() != null) {
            contextById.put(call.getId(), decision.additionalContext());
        }
        if (decision.modifiedInput() == null) {
            return call;
        }
        Map<String, Object> rewritten = ToolNames.hostInput(call.getName(),
                decision.modifiedInput());
        return ToolUseBlock.builder()
                .id(call.getId())
                .name(call.getName())
                .input(rewritten)
                .content(Jackson.write(rewritten))
                .metadata(call.getMetadata())
                .build();
    }

    static ToolUseBlock denied(Toolkit toolkit, ToolUseBlock call, String reason) {
        if (toolkit != null) {
            DeniedTool.registerOn(toolkit);
        }
        Map<String, Object> input = new LinkedHashMap<>();
        input.put(DeniedTool.TOOL_NAME, call.getName());
        input.put(DeniedTool.REASON, reason);
        return ToolUseBlock.builder()
                .id(call.getId())
                .name(DeniedTool.NAME)
                .input(input)
                .content(Jackson.write(input))
                .build();
    }

    static Map<String, Object> toolFields(String name, Map<String, Object> input, String id) {
        Map<String, Object> fields = new LinkedHashMap<>();
        String canonical = ToolNames.canonicalName(name);
        Map<String, Object> canonicalInput = ToolNames.canonicalInput(name, input);
        fields.put("tool_name", canonical);
        fields.put("tool_input", canonicalInput);
        fields.put("tool_use_id", id);
        if (!canonical.equals(name) || !canonicalInput.equals(input)) {
            Map<String, Object> host = new LinkedHashMap<>();
            host.put("tool_name", name);
            host.put("tool_input", input);
            fields.put("payload", Map.of("host", host));
        }
        return fields;
    }

    // -- after_tool, after_tool_failure ------------------------------------------------------

    /**
     * The result the model should read in place of {@code result}, or empty to keep it:
     * {@code after_tool} (a deny replaces it by the reason, {@code modified_output} replaces
     * its text) or, for an error result, {@code after_tool_failure} (reported; its context is
     * appended). The before_tool context of the call is appended too.
     */
    CompletableFuture<Optional<ToolResultBlock>> afterTool(ToolUseBlock call,
                                                          ToolResultBlock result) {
        List<String> before = call.getId() == null ? null : contextById.remove(call.getId());
        Map<String, Object> input = call.getInput() == null ? Map.of() : call.getInput();
        Map<String, Object> fields = toolFields(call.getName(), input, call.getId());
        String output = text(result);
        boolean failed = isError(result);
        if (failed) {
            fields.put("error", output);
        } else {
            fields.put("tool_output", output);
        }
        return fire(failed ? Events.AFTER_TOOL_FAILURE : Events.AFTER_TOOL, fields)
                .thenApply(after -> {
                    String replaced;
                    if (after.denied() && !failed) {
                        replaced = "Error: " + after.refusal("tool output");
                    } else if (after.modifiedOutput() != null && !failed) {
                        Object out = after.modifiedOutput();
                        replaced = out instanceof String s ? s : Jackson.write(out);
                    } else if (!after.additionalContext().isEmpty() || before != null) {
                        replaced = output;
                    } else {
                        return Optional.empty();
                    }
                    List<String> parts = new ArrayList<>();
                    parts.add(replaced);
                    if (!after.denied() || failed) {
                        parts.addAll(after.additionalContext());
                        if (before != null) {
                            parts.addAll(before);
                        }
                    }
                    return Optional.of(new ToolResultBlock(result.getId(), result.getName(),
                            List.of(TextBlock.builder().text(String.join("\n\n", parts)).build()),
                            result.getMetadata()));
                });
    }

    /** ToolResultBlock.error's form ("Error: ...") in both versions, or 2.x's ERROR state. */
    static boolean isError(ToolResultBlock result) {
        String text = text(result);
        if (text.startsWith("Error: ") || text.startsWith("[ERROR]")) {
            return true;
        }
        try {
            Method state = result.getClass().getMethod("getState");
            Object value = state.invoke(result);
            return value instanceof Enum<?> e && e.name().equals("ERROR");
        } catch (ReflectiveOperationException exc) {
            return false; // 1.0.x: no state
        }
    }

    // -- before_stop -------------------------------------------------------------------------

    /**
     * What the agent must be told to keep working on, or empty to let it stop: {@code
     * before_stop} for {@code finalMessage}. A block is honoured while its place in the row of
     * the session's blocked stops is at most {@link #stopCap()}: the place the server's loop
     * guard counted ({@link Decision#stopBlockCount()}; at its own cap the server lets the
     * stop through and starts over), or, for a block the server did not count (a failed
     * forward, a server too old to say), its place among such blocks in a row.
     */
    CompletableFuture<Optional<String>> beforeStop(Msg finalMessage) {
        Map<String, Object> payload = new LinkedHashMap<>();
        payload.put("stop_reason", "end_turn");
        payload.put("final_message", text(finalMessage));
        return fire(Events.BEFORE_STOP, Map.of("payload", payload)).thenApply(decision -> {
            if (!decision.denied() && !decision.continueWorking()) {
                uncounted.set(0);
                return Optional.empty();
            }
            if (placeInRow(decision) > stopCap()) {
                uncounted.set(0);
                return Optional.empty();
            }
            String reason = decision.reason();
            return Optional.of(reason != null && !reason.isBlank() ? reason
                    : "a before_stop hook (" + decision.blockedBy() + ") said keep working");
        });
    }

    /** A blocked stop's place in its row: the server's count, else among the uncounted. */
    private int placeInRow(Decision blocked) {
        if (blocked.stopBlockCount().isPresent()) {
            uncounted.set(0);
            return blocked.stopBlockCount().getAsInt();
        }
        return uncounted.incrementAndGet();
    }

    // -- error -------------------------------------------------------------------------------

    CompletableFuture<Decision> error(Throwable error, String phase) {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("error", error == null ? "unknown error"
                : error.getClass().getSimpleName() + ": " + error.getMessage());
        fields.put("payload", Map.of("phase", phase));
        return fire(Events.ERROR, fields);
    }

    // -- text --------------------------------------------------------------------------------

    static Msg userMessage(String text) {
        return Msg.builder().name("user").role(MsgRole.USER)
                .content(TextBlock.builder().text(text).build()).build();
    }

    static boolean hasToolUse(Msg msg) {
        return msg != null && msg.hasContentBlocks(ToolUseBlock.class);
    }

    static String text(Msg msg) {
        if (msg == null) {
            return "";
        }
        String text = msg.getTextContent();
        return text == null ? "" : text;
    }

    static String text(ToolResultBlock result) {
        if (result == null || result.getOutput() == null) {
            return "";
        }
        List<String> parts = new ArrayList<>();
        for (ContentBlock block : result.getOutput()) {
            if (block instanceof TextBlock t && t.getText() != null) {
                parts.add(t.getText());
            }
        }
        return String.join("\n", parts);
    }
}
