package io.github.mcphooks.agentscope;

import io.agentscope.core.ReActAgent;
import io.agentscope.core.agent.Agent;
import io.agentscope.core.agent.RuntimeContext;
import io.agentscope.core.event.AgentEvent;
import io.agentscope.core.event.AgentResultEvent;
import io.agentscope.core.message.Msg;
import io.agentscope.core.middleware.ActingInput;
import io.agentscope.core.middleware.AgentInput;
import io.agentscope.core.middleware.MiddlewareBase;
import io.agentscope.core.tool.Toolkit;
import io.github.mcphooks.client.McpHooksClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * HOOK.md hooks, through a running {@code mcp-hooks serve}, as an AgentScope Java 2.x
 * middleware (2.0 deprecates {@code Hook} for {@link MiddlewareBase}). Compiled only against
 * agentscope-core 2.x.
 *
 * <pre>{@code
 * ReActAgent agent = ReActAgent.builder().name("dev").model(model).toolkit(toolkit)
 *         .middleware(McpHooksMiddleware.builder(client).build())
 *         .build();
 * }</pre>
 *
 * <p>What fires where:
 * <ul>
 *   <li>{@code onAgent}, before the call: {@code before_agent}; a deny fails the call with
 *       {@link McpHooksDeniedException}; context is added as a user message after the input.
 *   <li>{@code onActing}: {@code before_tool} for each call; a deny replaces it by a call
 *       (same id) of the stand-in tool {@code mcp_hooks_denied}, which answers with the
 *       reason; a rewrite sets its {@code input} and {@code content}; a hook's ask is a deny
 *       naming the pending ask, or, with {@link Builder#nativeApproval(boolean)}, AgentScope's
 *       own user confirmation ({@link MiddlewareAsk}).
 *   <li>{@code onAgent}, on the call's final answer: {@code before_stop}; a deny runs the
 *       agent again on the reason (as a user message), while the session's blocked stops in
 *       a row, as the server's answer counts them, are at most {@code stopBlockCap}; the
 *       caller gets the last answer.
 *   <li>{@code onAgent}, when the call fails: {@code error} (reported).
 * </ul>
 * Not fired: {@code after_tool}. 2.0's {@code onActing} sees tool results only as stream
 * events it cannot change, so add {@link McpHooksHook} instead of this class where hooks must
 * judge or replace tool output.
 */
public final class McpHooksMiddleware implements MiddlewareBase {
    private final Firing firing;
    /** The asks put to AgentScope's user confirmation, or null (the deny naming the ask). */
    private final MiddlewareAsk asking;

    private McpHooksMiddleware(Builder b) {
        this.firing = new Firing(b.client, b.sessionId, b.workDir, b.stopBlockCap);
        this.asking = b.nativeApproval ? new MiddlewareAsk(firing) : null;
    }

    /** A middleware with the defaults (a fresh session id, the server's project). */
    public McpHooksMiddleware(McpHooksClient client) {
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
    public Flux<AgentEvent> onAgent(Agent agent, RuntimeContext ctx, AgentInput input,
                                    Function<AgentInput, Flux<AgentEvent>> next) {
        return Mono.fromFuture(() -> firing.beforeAgent(agent, input.msgs()))
                .flatMapMany(decision -> {
                    if (decision.denied()) {
                        return Flux.error(new McpHooksDeniedException(decision));
                    }
                    AgentInput first = input;
                    if (!decision.additionalContext().isEmpty()) {
                        List<Msg> msgs = new ArrayList<>(input.msgs());
                        msgs.add(Firing.userMessage(String.join("\n\n",
                                decision.additionalContext())));
                        first = new AgentInput(msgs);
                    }
                    return gated(agent, next, first);
                })
                .onErrorResume(error -> {
                    if (error instanceof McpHooksDeniedException) {
                        return Flux.error(error);
                    }
                    return Mono.fromFuture(() -> firing.error(error, "reply"))
                            .thenMany(Flux.error(error));
                });
    }

    /**
     * One run of the agent, then {@code before_stop} on its answer: the answer (and what
     * follows it) is held until the hooks let the agent stop; a deny drops it and runs the
     * agent again on the reason.
     */
    private Flux<AgentEvent> gated(Agent agent, Function<AgentInput, Flux<AgentEvent>> next,
                                   AgentInput input) {
        return Flux.defer(() -> gatedRun(agent, next, input));
    }

    private Flux<AgentEvent> gatedRun(Agent agent, Function<AgentInput, Flux<AgentEvent>> next,
                                      AgentInput input) {
        List<AgentEvent> held = new ArrayList<>();
        Msg[] answer = new Msg[1];
        Flux<AgentEvent> run = next.apply(input).filter(ev -> {
            if (ev instanceof AgentResultEvent result) {
                answer[0] = result.getResult();
            }
            if (answer[0] != null) {
                held.add(ev);
                return false;
            }
            return true;
        });
        return run.concatWith(Flux.defer(() -> {
            Msg finalMessage = answer[0];
            if (finalMessage == null || Firing.hasToolUse(finalMessage)) {
                return Flux.fromIterable(held);
            }
            return Mono.fromFuture(() -> firing.beforeStop(finalMessage))
                    .flatMapMany(feedback -> feedback.isEmpty() ? Flux.fromIterable(held)
                            : gated(agent, next, new AgentInput(
                                    List.of(Firing.userMessage(feedback.get())))));
        }));
    }

    @Override
    public Flux<AgentEvent> onActing(Agent agent, RuntimeContext ctx, ActingInput input,
                                     Function<ActingInput, Flux<AgentEvent>> next) {
        Toolkit toolkit = agent instanceof ReActAgent react ? react.getToolkit() : null;
        return Flux.fromIterable(input.toolCalls())
                .concatMap(call -> Mono.fromFuture(() -> asking != null
                        ? asking.beforeTool(toolkit, call) : firing.beforeTool(toolkit, call)))
                .collectList()
                .flatMapMany(calls -> next.apply(new ActingInput(calls)));
    }

    /** Options of {@link McpHooksMiddleware}. */
    public static final class Builder {
        private final McpHooksClient client;
        private String sessionId;
        private String workDir;
        private int stopBlockCap = Firing.DEFAULT_STOP_BLOCK_CAP;
        private boolean nativeApproval;

        private Builder(McpHooksClient client) {
            this.client = client;
        }

        /** The {@code session_id} hooks see; default {@code agentscope-java-<12 hex>}. */
        public Builder sessionId(String sessionId) {
            this.sessionId = sessionId;
            return this;
        }

        /** The {@code work_dir} hooks run in; default none sent, so the server's project. */
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

        /**
         * A hook's ask on a tool call becomes AgentScope's own user confirmation (default
         * false: a deny whose reason names the pending ask, for {@code mcp-hooks approve ID}
         * and a retry). The run pauses with {@code GenerateReason.PERMISSION_ASKING} and a
         * {@code RequireUserConfirmEvent} (the call stands in as {@code mcp_hooks_ask} with the
         * tool, its input, the hook's reason and the ask id); resumed with a confirming {@code
         * ConfirmResult}, the call's ask is approved on the server (channel {@code
         * agentscope-java}) and exactly that call runs; rejected, it never runs. A stop's ask
         * is the deny naming the ask, as without.
         */
        public Builder nativeApproval(boolean nativeApproval) {
            this.nativeApproval = nativeApproval;
            return this;
        }

        public McpHooksMiddleware build() {
            return new McpHooksMiddleware(this);
        }
    }
}
