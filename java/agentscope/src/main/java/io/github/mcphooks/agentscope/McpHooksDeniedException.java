package io.github.mcphooks.agentscope;

/**
 * A {@code before_agent} hook refused the input: {@code agent.call(...)} fails with this, its
 * message the hook's reason (AgentScope has no other way to refuse a call before it starts).
 */
public final class McpHooksDeniedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Decision decision;

    McpHooksDeniedException(Decision decision) {
        super(decision.refusal("input"));
        this.decision = decision;
    }

    /** The hooks' whole decision. */
    public Decision decision() {
        return decision;
    }
}
