package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.ReActAgent;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.MsgRole;
import io.agentscope.core.message.TextBlock;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.tool.Toolkit;
import io.github.mcphooks.client.McpHooksClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real ReActAgent, driven by a {@link ScriptedModel}, whose tool calls and stops pass the
 * HOOK.md hooks of a real {@code mcp-hooks serve} ({@link ServedHooks}); subclasses wire the
 * adapter in (the hook, the middleware).
 */
abstract class AgentScenarios {
    @TempDir
    static Path tmp;
    static ServedHooks served;

    @BeforeAll
    static void serve() throws Exception {
        served = new ServedHooks(tmp);
    }

    @AfterAll
    static void stop() throws Exception {
        if (served != null) {
            served.close();
        }
    }

    /** Add the adapter under test to {@code builder}, firing through {@code client}. */
    abstract ReActAgent.Builder wire(ReActAgent.Builder builder, McpHooksClient client,
                                     int stopBlockCap);

    final RecordingShell shell = new RecordingShell();

    ReActAgent agent(ScriptedModel model, McpHooksClient client, int stopBlockCap) {
        Toolkit toolkit = new Toolkit();
        toolkit.registerTool(shell);
        return wire(ReActAgent.builder().name("dev").sysPrompt("You are a test agent.")
                .model(model).toolkit(toolkit).maxIters(10), client, stopBlockCap).build();
    }

    ReActAgent agent(ScriptedModel model) {
        return agent(model, served.client().build(), 8);
    }

    static Msg ask(String text) {
        return Msg.builder().name("user").role(MsgRole.USER)
                .content(TextBlock.builder().text(text).build()).build();
    }

    static Msg call(ReActAgent agent, String text) {
        // a guard against a hang only
        return agent.call(ask(text)).block(Duration.ofSeconds(180));
    }

    @Test
    void rmRfIsRefusedByTheBundledGuardAndTheToolNeverRuns() throws IOException {
        ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-rm", "rm -rf /"),
                ScriptedModel.say("I will not do that."));
        Msg answer = call(agent(model), "clean up the disk");
        assertEquals(List.of(), shell.commands(), "the refused command reached the tool");
        List<ToolResultBlock> results = model.toolResults(2);
        assertEquals(1, results.size(), model.shown(2));
        ToolResultBlock result = results.get(0);
        assertEquals("call-rm", result.getId());
        String text = Firing.text(result);
        assertTrue(text.contains("Dangerous command blocked"), text);
        assertEquals("I will not do that.", Firing.text(answer));
        assertTrue(served.loggedDecisions().contains("before_tool:deny"), "not in the server's log");
    }

    @Test
    void anAllowedCallRuns() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-ls", "ls -la"),
                ScriptedModel.say("listed"));
        call(agent(model), "list the files");
        assertEquals(List.of("ls -la"), shell.commands());
        assertTrue(Firing.text(model.toolResults(2).get(0)).contains("ran: ls -la"));
    }

    @Test
    void aRewriteReachesTheTool() {
        ScriptedModel model = new ScriptedModel(
                ScriptedModel.shell("call-rw", "please-rewrite this"), ScriptedModel.say("ok"));
        call(agent(model), "do the marked thing");
        assertEquals(List.of("echo rewritten"), shell.commands());
        assertTrue(Firing.text(model.toolResults(2).get(0)).contains("ran: echo rewritten"));
    }

    @Test
    void aBeforeStopGateForcesOneMoreTurnWithItsReason() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.say("done, gate-me"),
                ScriptedModel.say("ran the tests; done"));
        Msg answer = call(agent(model), "fix the bug");
        assertEquals(2, model.turns(), "the gate did not make the agent work on");
        assertTrue(model.shown(2).contains("the tests have not run yet"), model.shown(2));
        assertEquals("ran the tests; done", Firing.text(answer));
    }

    @Test
    void aGateThatNeverLetsGoIsCappedAndTheAgentStops() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.say("still gate-me"));
        Msg answer = call(agent(model, served.client().build(), 2), "fix the bug");
        assertEquals(3, model.turns(), "two blocks honoured, then the stop goes through");
        assertEquals("still gate-me", Firing.text(answer));
    }

    @Test
    void theServersCountEndsAGateThatNeverLetsGoInEveryCallOfTheSession() {
        // one counter, the server's: at its cap (8) its loop guard lets the 9th stop through
        // and starts over, so the session's next call is gated as fully as the first
        ScriptedModel model = new ScriptedModel(ScriptedModel.say("still gate-me"));
        ReActAgent agent = agent(model);
        call(agent, "fix the bug");
        assertEquals(9, model.turns(), "eight blocks honoured, then the server's guard");
        call(agent, "fix the other bug");
        assertEquals(18, model.turns(), "the second call was not gated as the first");
    }

    @Test
    void anAskIsADenyNamingThePendingAskAndAfterApprovalTheSameCallRuns() throws Exception {
        // no native approval: the server answers at once (the client gives up within
        // seconds), the model reads how a person approves; approved out of band, the model's
        // retry of the same call in the same session runs
        ScriptedModel model = new ScriptedModel(
                ScriptedModel.shell("call-ask-1", "please-ask deploy"),
                ScriptedModel.say("a person must approve"),
                ScriptedModel.shell("call-ask-2", "please-ask deploy"),
                ScriptedModel.say("deployed"));
        ReActAgent agent = agent(model);
        call(agent, "deploy");
        assertEquals(List.of(), shell.commands(), "an unanswered ask ran the tool");
        String refused = Firing.text(model.toolResults(2).get(0));
        Matcher id = Pattern.compile("mcp-hooks approve (ask-[0-9a-f]{10})").matcher(refused);
        assertTrue(refused.contains("deploys need a person") && id.find(), refused);
        assertEquals(200, served.approve(id.group(1)));
        call(agent, "deploy now");
        assertEquals(List.of("please-ask deploy"), shell.commands());
        List<String> answered = served.logged("ask_answer").stream()
                .filter(r -> id.group(1).equals(r.get("ask_id")))
                .map(r -> r.get("channel") + ":" + r.get("approved")).toList();
        assertEquals(List.of("http:true"), answered);
    }

    @Test
    void withTheServerDownTheCallIsRefusedSayingWhyAndNothingRuns() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        McpHooksClient down = McpHooksClient.builder().serverUrl("http://127.0.0.1:" + port)
                .token(ServedHooks.TOKEN).build();
        ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-ls", "ls"),
                ScriptedModel.say("could not list"));
        ReActAgent agent = agent(model, down, 1);
        // before_agent is the first event: no hook can judge it, so the input is refused
        McpHooksDeniedException refused = assertThrows(McpHooksDeniedException.class,
                () -> call(agent, "list the files"));
        assertTrue(refused.getMessage().contains(
                "mcp-hooks could not decide this event, so it is blocked")
                && refused.getMessage().contains("connection refused"), refused.getMessage());
        assertEquals(0, model.turns());
        assertEquals(List.of(), shell.commands());
    }
}
