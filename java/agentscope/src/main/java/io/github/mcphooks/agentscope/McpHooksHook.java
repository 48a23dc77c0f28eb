package io.github.mcphooks.agentscope;

import io.agentscope.core.hook.ErrorEvent;
import io.agentscope.core.hook.Hook;
import io.agentscope.core.hook.HookEvent;
import io.agentscope.core.hook.PostActingEvent;
import io.agentscope.core.hook.PostReasoningEvent;
import io.agentscope.core.hook.PreActingEvent;
import io.agentscope.core.hook.PreCallEvent;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.tool.ToolResultMessageBuilder;
import io.github.mcphooks.client.McpHooksClient;
import java.lang.reflect.Method;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * HOOK.md hooks, through a running {@code mcp-hooks serve}, as an AgentScope Java {@link Hook}
 * (agentscope-core 1.0.x; in 2.0.x hooks still run, deprecated, beside {@link
 * McpHooksMiddleware}).
 *
 * <pre>{@code
 * ReActAgent agent = ReActAgent.builder().name("dev").model(model).toolkit(toolkit)
 *         .hook(McpHooksHook.builder(client).build())
 *         .build();
 * }</pre>
 *
 * <p>What fires where:
 * <ul>
 *   <li>{@code PreCallEvent}: {@code before_agent}; a deny fails the call with {@link
 *       McpHooksDeniedException}; context goes into the system message ({@code
 *       appendSystemContent}, 2.x) or is added as a user message after the input (1.x).
 *   <li>{@code PreActingEvent}: {@code before_tool}; a deny replaces the call by one (same
 *       id) of the stand-in tool {@code mcp_hooks_denied}, which answers with the reason, so
 *       the tool does not run and the agent goes on; a rewrite sets the call's {@code input}
 *       and {@code content}; context is appended to the tool's result.
 *   <li>{@code PostActingEvent}: {@code after_tool} ({@code modified_output} replaces the
 *       result's text, a deny replaces it by the reason), or {@code after_tool_failure} for an
 *       error result (reported, context appended).
 *   <li>{@code PostReasoningEvent} with no tool call (the agent is about to answer): {@code
 *       before_stop}; a deny sends the agent back to reasoning with the reason as a user
 *       message ({@code gotoReasoning}), while the session's blocked stops in a row, as the
 *       server's answer counts them, are at most {@code stopBlockCap}.
 *   <li>{@code ErrorEvent}: {@code error} (reported).
 * </ul>
 * Tool names and inputs reach hooks in the shared vocabulary ({@link ToolNames}).
 */
@SuppressWarnings({"removal", "deprecation"})
public final class McpHooksHook implements Hook {
    /** The default priority: last of AgentScope's range, so it judges each call as it runs. */
    public static final int DEFAULT_PRIORITY = 1000;

    private final Firing firing;
    private final int priority;

    private McpHooksHook(Builder b) {
        this.firing = new Firing(b.client, b.sessionId, b.workDir, b.stopBlockCap);
        this.priority = b.priority;
    }

    /** A hook with the defaults (a fresh session id, the server's project as work dir). */
    public McpHooksHook(McpHooksClient client) {
        this(builder(client));
    }

    public static Builder builder(McpHooksClient client) {
        return new Builder(client);
    }

    /** The session id the hooks see. */
    public String sessionId() {
        return firing.sessionId;
    }

    @Override
    public int priority() {
        return priority;
    }

    @Override
    public <T extends HookEvent> Mono<T> onEvent(T event) {
        if (event instanceof PreActingEvent e) {
            return Mono.fromFuture(firing.beforeTool(e.getToolkit(), e.getToolUse()))
                    .map(call -> {
                        if (call != e.getToolUse()) {
                            e.setToolUse(call);
                        }
                        return event;
                    });
        }
        if (event instanceof PostActingEvent e) {
            return postActing(e).thenReturn(event);
        }
        if (event instanceof PostReasoningEvent e) {
            Msg reasoning = e.getReasoningMessage();
            if (reasoning == null || Firing.hasToolUse(reasoning)) {
                return Mono.just(event);
            }
            return Mono.fromFuture(firing.beforeStop(reasoning)).map(feedback -> {
                feedback.ifPresent(text -> e.gotoReasoning(Firing.userMessage(text)));
                return event;
            });
        }
        if (event instanceof PreCallEvent e) {
            return Mono.fromFuture(firing.beforeAgent(e.getAgent(), e.getInputMessages()))
                    .flatMap(decision -> {
                        if (decision.denied()) {
                            return Mono.error(new McpHooksDeniedException(decision));
                        }
                        if (!decision.additionalContext().isEmpty()) {
                            addContext(e, String.join("\n\n", decision.additionalContext()));
                        }
                        return Mono.just(event);
                    });
        }
        if (event instanceof ErrorEvent e && !(e.getError() instanceof McpHooksDeniedException)) {
            return Mono.fromFuture(firing.error(e.getError(), "reply")).thenReturn(event);
        }
        return Mono.just(event);
    }

    private Mono<Void> postActing(PostActingEvent e) {
        ToolUseBlock call = e.getToolUse();
        if (DeniedTool.NAME.equals(call.getName())) {
            // the refusal reads as the refused tool's own result
            Object original = call.getInput() == null ? null : call.getInput().get(DeniedTool.TOOL_NAME);
            if (original != null) {
                ToolUseBlock as = ToolUseBlock.builder().id(call.getId())
                        .name(original.toString()).input(Map.of()).content("{}").build();
                setResult(e, e.getToolResult(), as);
            }
            return Mono.empty();
        }
        return Mono.fromFuture(firing.afterTool(call, e.getToolResult()))
                .doOnNext(replaced -> replaced.ifPresent(r -> setResult(e, r, call)))
                .then();
    }

    private static void setResult(PostActingEvent e, ToolResultBlock result, ToolUseBlock call) {
        ToolResultBlock named = result.withIdAndName(call.getId(), call.getName());
        e.setToolResult(named);
        e.setToolResultMsg(ToolResultMessageBuilder.buildToolResultMsg(named, call,
                e.getAgent().getName()));
    }

    /** 2.x: {@code appendSystemContent}; 1.x (no system message on the event): a user message. */
    private static void addContext(PreCallEvent e, String text) {
        try {
            Method append = e.getClass().getMethod("appendSystemContent", String.class);
            append.invoke(e, text);
            return;
        } catch (ReflectiveOperationException exc) {
            // 1.0.x
        }
        List<Msg> input = new ArrayList<>(e.getInputMessages() == null ? List.of()
                : e.getInputMessages());
        input.add(Firing.userMessage(text));
        e.setInputMessages(input);
    }

    /** Options of {@link McpHooksHook}. */
    public static final class Builder {
        private final McpHooksClient client;
        private String sessionId;
        private String workDir;
        private int stopBlockCap = Firing.DEFAULT_STOP_BLOCK_CAP;
        private int priority = DEFAULT_PRIORITY;

        private Builder(McpHooksClient client) {
            this.client = client;
        }

        /** The {@code session_id} hooks see; default {@code agentscope-java-<12 hex>}. */
        public Builder sessionId(String sessionId) {
            this.sessionId = sessionId;
            return this;
        }

        /**
         * The {@code work_dir} hooks run in (a folder the server serves, see its {@code
         * --root}); default none sent, so the server's own project.
         */
        public Builder workDir(Path workDir) {
            this.workDir = workDir == null ? null : workDir.toAbsolutePath().toString();
            return this;
        }

        /**
         * Consecutive before_stop blocks honoured, as the server counts them per session
         * (default 8, as the server's {@code --stop-block-cap}; 0 counts as 1).
         */
        public Builder stopBlockCap(int cap) {
            this.stopBlockCap = cap;
            return this;
        }

        /** AgentScope priority, lower runs first (default {@value #DEFAULT_PRIORITY}). */
        public Builder priority(int priority) {
            this.priority = priority;
            return this;
        }

        public McpHooksHook build() {
            return new McpHooksHook(this);
        }
    }
}
