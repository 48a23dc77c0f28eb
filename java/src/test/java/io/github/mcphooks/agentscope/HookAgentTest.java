package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.ReActAgent;
import io.agentscope.core.message.ToolResultBlock;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The scenarios through {@link McpHooksHook} (agentscope-core 1.0.x and 2.0.x). */
class HookAgentTest extends AgentScenarios {
    @Override
    ReActAgent.Builder wire(ReActAgent.Builder builder, McpHooksClient client, int cap) {
        return builder.hook(McpHooksHook.builder(client).stopBlockCap(cap).build());
    }

    @Test
    void theRefusalReadsAsTheRefusedToolsOwnResult() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-rm", "rm -rf ~"),
                ScriptedModel.say("ok"));
        call(agent(model), "tidy my home");
        ToolResultBlock result = model.toolResults(2).get(0);
        assertEquals("execute_shell_command", result.getName());
    }

    @Test
    void afterToolReplacesTheOutputTheModelReads() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-s", "print-secret"),
                ScriptedModel.say("ok"));
        call(agent(model), "show me the secret");
        assertEquals(List.of("print-secret"), shell.commands());
        assertEquals("[redacted by hook]", Firing.text(model.toolResults(2).get(0)));
    }

    @Test
    void beforeAgentContextReachesTheModel() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.say("d'accord"));
        call(agent(model), "context-please: hello");
        assertTrue(model.shown(1).contains("house rule: answer in French"), model.shown(1));
    }
}
