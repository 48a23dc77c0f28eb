package io.github.mcphooks.agentscope;

import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.tool.AgentTool;
import io.agentscope.core.tool.ToolCallParam;
import io.agentscope.core.tool.Toolkit;
import java.util.List;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * The stand-in that answers a refused tool call. AgentScope has no way to refuse one call and
 * go on ({@code Mono.error} from a hook aborts the whole {@code agent.call()}), so a denied
 * call is replaced by a call with the same id to this tool, which runs nothing and returns
 * {@code "Error: <the hook's reason>"} as the call's result: the model reads why, the real
 * tool never runs. It is registered on the agent's toolkit when the first call is denied, so
 * from then on the model's tool list shows it too.
 */
final class DeniedTool implements AgentTool {
    static final String NAME = "mcp_hooks_denied";
    static final String TOOL_NAME = "tool_name";
    static final String REASON = "reason";

    static void registerOn(Toolkit toolkit) {
        synchronized (toolkit) {
            if (toolkit.getTool(NAME) == null) {
                toolkit.registerAgentTool(new DeniedTool());
            }
        }
    }

    @Override
    public String getName() {
        return NAME;
    }

    @Override
    public String getDescription() {
        return "Answers a tool call that an mcp-hooks hook refused. Do not call it yourself.";
    }

    @Override
    public Map<String, Object> getParameters() {
        return Map.of(
                "type", "object",
                "properties", Map.of(
                        TOOL_NAME, Map.of("type", "string", "description", "the refused tool"),
                        REASON, Map.of("type", "string", "description", "why it was refused")),
                "required", List.of(TOOL_NAME, REASON));
    }

    @Override
    public Mono<ToolResultBlock> callAsync(ToolCallParam param) {
        Map<String, Object> input = param.getInput();
        if (input == null || input.isEmpty()) {
            input = param.getToolUseBlock() == null ? Map.of() : param.getToolUseBlock().getInput();
        }
        Object reason = input == null ? null : input.get(REASON);
        Object tool = input == null ? null : input.get(TOOL_NAME);
        return Mono.just(ToolResultBlock.error(reason != null ? reason.toString()
                : "the call to " + tool + " was refused by an mcp-hooks hook"));
    }
}
