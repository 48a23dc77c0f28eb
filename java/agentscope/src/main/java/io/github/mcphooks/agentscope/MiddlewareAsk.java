package io.github.mcphooks.agentscope;

import io.agentscope.core.message.ToolCallState;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.permission.PermissionContextState;
import io.agentscope.core.permission.PermissionDecision;
import io.agentscope.core.permission.PermissionBehavior;
import io.agentscope.core.tool.ToolBase;
import io.agentscope.core.tool.ToolCallParam;
import io.agentscope.core.tool.Toolkit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import reactor.core.publisher.Mono;

/**
 * A hook's ask as AgentScope Java's own user confirmation ({@link
 * McpHooksMiddleware.Builder#nativeApproval(boolean)}, agentscope-core 2.x only).
 *
 * <p>AgentScope 2.0 pauses a call for a person when the tool's permission check answers
 * {@code ASK}: the run ends with {@link io.agentscope.core.message.GenerateReason#PERMISSION_ASKING}
 * and a {@code RequireUserConfirmEvent}, the call is in {@link ToolCallState#ASKING} state, and
 * the caller resumes with a message carrying {@code ConfirmResult}s under {@code
 * Msg.METADATA_CONFIRM_RESULTS}: confirmed, the call comes back {@link ToolCallState#ALLOWED}
 * and runs; rejected, AgentScope writes a {@code DENIED} result ("Permission denied by user")
 * and it never runs. A middleware cannot answer that check itself, so an asked call is
 * replaced (same id) by a call of the stand-in {@link AskTool}, whose permission check is
 * {@code ASK}: the person sees the tool, its exact input, the hook's reason and the ask id.
 *
 * <p>When a call this middleware deferred comes back {@code ALLOWED} (the person confirmed
 * it, as the model's call or as the stand-in), {@code before_tool} fires again with {@code
 * confirmed=<ask id>}: the server approves that ask when it is the one pending for exactly
 * this call (channel {@code agentscope-java}, logged), the chain goes on (a later hook can
 * still deny), and the call runs as confirmed. A confirmation that changed the input is
 * another call: asked anew. The stand-in itself never runs a tool: a call whose permission
 * step did not ask (another middleware let it through) gets the refusal, so a call nobody
 * confirmed never runs on a deferred ask.
 */
final class MiddlewareAsk {
    static final String CHANNEL = "agentscope-java";
    static final String ASK_NATIVE = "ask=native&channel=" + CHANNEL;
    private static final int KEPT = 1024; // deferred calls kept (asked, never resumed: dropped)

    private final Firing firing;
    /** The asks deferred to AgentScope, by tool-use id: ask id. */
    private final Map<String, String> deferred = new LinkedHashMap<>();

    MiddlewareAsk(Firing firing) {
        this.firing = firing;
    }

    /**
     * The call to run in place of {@code call}: as {@link Firing#beforeTool}, or, for a hook's
     * ask, the stand-in whose permission check asks the person.
     */
    CompletableFuture<ToolUseBlock> beforeTool(Toolkit toolkit, ToolUseBlock given) {
        if (DeniedTool.NAME.equals(given.getName())) {
            return CompletableFuture.completedFuture(given);
        }
        ToolUseBlock call = AskTool.NAME.equals(given.getName()) ? AskTool.unwrapped(given) : given;
        if (call == null) {
            return CompletableFuture.completedFuture(Firing.denied(toolkit, given, AskTool.NAME
                    + " stands for a call an mcp-hooks hook asked about and takes its tool_name"
                    + " and tool_input; call the tool itself instead"));
        }
        boolean confirmed = call.getState() == ToolCallState.ALLOWED;
        String askId = confirmed ? take(call.getId()) : null;
        String query = ASK_NATIVE + (askId == null ? "" : "&confirmed=" + askId);
        return firing.beforeToolDecision(call, query).thenApply(decision -> {
            Decision.Ask ask = decision.ask();
            if (ask != null && !decision.denied()) {
                keep(call.getId(), ask.id());
                return AskTool.standIn(toolkit, call, ask);
            }
            ToolUseBlock run = firing.applied(toolkit, call, decision);
            // confirmed (or let through by AgentScope's gate): its permission step is done
            boolean keepState = !decision.denied() && call.getState() != null;
            return keepState ? run.withState(call.getState()) : run;
        });
    }

    private String take(String callId) {
        if (callId == null) {
            return null;
        }
        synchronized (deferred) {
            return deferred.remove(callId);
        }
    }

    private void keep(String callId, String askId) {
        if (callId == null) {
            return;
        }
        synchronized (deferred) {
            if (deferred.size() >= KEPT) {
                deferred.remove(deferred.keySet().iterator().next());
            }
            deferred.put(callId, askId);
        }
    }

    /**
     * The stand-in of a call a hook asked about: its permission check asks the person (a
     * {@code safety} reason, so no mode or allow rule of AgentScope's permission engine
     * passes it by itself), and run anyway it refuses.
     */
    static final class AskTool extends ToolBase {
        static final String NAME = "mcp_hooks_ask";
        static final String TOOL_NAME = "tool_name";
        static final String TOOL_INPUT = "tool_input";
        static final String REASON = "reason";
        static final String ASK_ID = "ask_id";

        AskTool() {
            super(NAME, "Stands for a tool call an mcp-hooks hook asked a person to approve."
                            + " Do not call it yourself.",
                    Map.of("type", "object",
                            "properties", Map.of(
                                    TOOL_NAME, Map.of("type", "string"),
                                    TOOL_INPUT, Map.of("type", "object"),
                                    REASON, Map.of("type", "string"),
                                    ASK_ID, Map.of("type", "string")),
                            "required", List.of(TOOL_NAME, TOOL_INPUT)),
                    false, true, false, null, false, false);
        }

        static ToolUseBlock standIn(Toolkit toolkit, ToolUseBlock call, Decision.Ask ask) {
            if (toolkit != null) {
                synchronized (toolkit) {
                    if (toolkit.getTool(NAME) == null) {
                        toolkit.registerAgentTool(new AskTool());
                    }
                }
            }
            Map<String, Object> input = new LinkedHashMap<>();
            input.put(TOOL_NAME, call.getName());
            input.put(TOOL_INPUT, call.getInput() == null ? Map.of() : call.getInput());
            input.put(REASON, (ask.hook() == null ? "" : ask.hook() + ": ") + ask.reason());
            input.put(ASK_ID, ask.id());
            return ToolUseBlock.builder().id(call.getId()).name(NAME).input(input)
                    .content(Jackson.write(input)).metadata(call.getMetadata()).build();
        }

        /**
         * The call a stand-in stands for, in the stand-in's state (ALLOWED: confirmed); null
         * when it names none (the model called the stand-in with other input).
         */
        @SuppressWarnings("unchecked")
        static ToolUseBlock unwrapped(ToolUseBlock standIn) {
            Map<String, Object> input = standIn.getInput() == null ? Map.of() : standIn.getInput();
            Object name = input.get(TOOL_NAME);
            Object args = input.get(TOOL_INPUT);
            if (!(name instanceof String tool) || tool.isEmpty() || NAME.equals(tool)
                    || !(args instanceof Map<?, ?>)) {
                return null;
            }
            Map<String, Object> toolInput = (Map<String, Object>) args;
            ToolUseBlock call = ToolUseBlock.builder().id(standIn.getId()).name(tool)
                    .input(toolInput).content(Jackson.write(toolInput))
                    .metadata(standIn.getMetadata()).build();
            return standIn.getState() == null ? call : call.withState(standIn.getState());
        }

        @Override
        public Mono<PermissionDecision> checkPermissions(Map<String, Object> toolInput,
                                                         PermissionContextState context) {
            Object reason = toolInput == null ? null : toolInput.get(REASON);
            Object askId = toolInput == null ? null : toolInput.get(ASK_ID);
            return Mono.just(PermissionDecision.builder()
                    .behavior(PermissionBehavior.ASK)
                    .message("a person must approve this call: " + reason + " (mcp-hooks ask "
                            + askId + ")")
                    .decisionReason("mcp-hooks safety: a hook asks a person to approve this"
                            + " exact call")
                    .build());
        }

        @Override
        public Mono<ToolResultBlock> callAsync(ToolCallParam param) {
            Map<String, Object> input = param.getInput();
            if (input == null || input.isEmpty()) {
                input = param.getToolUseBlock() == null ? Map.of()
                        : param.getToolUseBlock().getInput();
            }
            Object reason = input == null ? null : input.get(REASON);
            Object askId = input == null ? null : input.get(ASK_ID);
            return Mono.just(ToolResultBlock.error("a person must approve this call (" + reason
                    + "; mcp-hooks ask " + askId + "); AgentScope's permission step did not ask"
                    + " anyone, so it was not run"));
        }
    }
}
