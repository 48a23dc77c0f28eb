package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.ReActAgent;
import io.github.mcphooks.client.McpHooksClient;
import org.junit.jupiter.api.Test;

/** The scenarios through {@link McpHooksMiddleware} (agentscope-core 2.0.x only). */
class MiddlewareAgentTest extends AgentScenarios {
    @Override
    ReActAgent.Builder wire(ReActAgent.Builder builder, McpHooksClient client, int cap) {
        return builder.middleware(McpHooksMiddleware.builder(client).stopBlockCap(cap).build());
    }

    @Test
    void beforeAgentContextReachesTheModel() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.say("d'accord"));
        call(agent(model), "context-please: hello");
        assertTrue(model.shown(1).contains("house rule: answer in French"), model.shown(1));
    }
}
