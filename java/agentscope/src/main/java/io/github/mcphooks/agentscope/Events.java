package io.github.mcphooks.agentscope;

import java.util.Set;

/** The canonical events this adapter fires, and which of them a deny can stop. */
final class Events {
    static final String BEFORE_AGENT = "before_agent";
    static final String BEFORE_TOOL = "before_tool";
    static final String AFTER_TOOL = "after_tool";
    static final String AFTER_TOOL_FAILURE = "after_tool_failure";
    static final String BEFORE_STOP = "before_stop";
    static final String ERROR = "error";

    /** Reported after the fact: a fault of ours there is a warning, never a deny. */
    private static final Set<String> CANNOT_BLOCK = Set.of(
            "session_end", "after_stop", "post_compact", AFTER_TOOL_FAILURE,
            "reasoning_chunk", "tool_output_chunk", ERROR);

    private Events() {
    }

    static boolean canBlock(String event) {
        return !CANNOT_BLOCK.contains(event);
    }
}
