package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.ReActAgent;
import io.agentscope.core.agent.Agent;
import io.agentscope.core.agent.RuntimeContext;
import io.agentscope.core.event.AgentEvent;
import io.agentscope.core.event.ConfirmResult;
import io.agentscope.core.event.RequireUserConfirmEvent;
import io.agentscope.core.message.GenerateReason;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.MsgRole;
import io.agentscope.core.message.TextBlock;
import io.agentscope.core.message.ToolCallState;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.middleware.ActingInput;
import io.agentscope.core.middleware.MiddlewareBase;
import io.agentscope.core.tool.Toolkit;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import reactor.core.publisher.Flux;

/**
 * A hook's ask as AgentScope Java's own user confirmation ({@code
 * McpHooksMiddleware.builder(client).nativeApproval(true)}, agentscope-core 2.x): a real
 * ReActAgent with a {@link ScriptedModel}, a real {@code mcp-hooks serve} whose {@code
 * ask-marked} hook asks about every shell command with {@code please-ask} ({@link
 * ServedHooks}), and the person's answer given as AgentScope's {@code ConfirmResult}.
 */
class MiddlewareAskTest {
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

    final RecordingShell shell = new RecordingShell();
    final List<RequireUserConfirmEvent> shown = new ArrayList<>();

    /** Sees the confirmations AgentScope asks for, as an application's UI would. */
    final class Watcher implements MiddlewareBase {
        @Override
        public Flux<AgentEvent> onActing(Agent agent, RuntimeContext ctx, ActingInput input,
                                         Function<ActingInput, Flux<AgentEvent>> next) {
            return next.apply(input).doOnNext(ev -> {
                if (ev instanceof RequireUserConfirmEvent asked) {
                    shown.add(asked);
                }
            });
        }
    }

    /** Lets every call through AgentScope's permission step unasked (a careless app). */
    static final class ApproveEverything implements MiddlewareBase {
        @Override
        public Flux<AgentEvent> onActing(Agent agent, RuntimeContext ctx, ActingInput input,
                                         Function<ActingInput, Flux<AgentEvent>> next) {
            return next.apply(new ActingInput(input.toolCalls().stream()
                    .map(c -> c.withState(ToolCallState.ALLOWED)).toList()));
        }
    }

    ReActAgent agent(ScriptedModel model, MiddlewareBase... inner) {
        Toolkit toolkit = new Toolkit();
        toolkit.registerTool(shell);
        ReActAgent.Builder builder = ReActAgent.builder().name("dev")
                .sysPrompt("You are a test agent.").model(model).toolkit(toolkit).maxIters(10)
                .middleware(new Watcher())
                .middleware(McpHooksMiddleware.builder(served.client().build())
                        .nativeApproval(true).build());
        for (MiddlewareBase m : inner) {
            builder.middleware(m);
        }
        return builder.build();
    }

    static Msg run(ReActAgent agent, Msg msg) {
        return agent.call(msg).block(Duration.ofSeconds(180)); // a guard against a hang only
    }

    static Msg user(String text) {
        return Msg.builder().name("user").role(MsgRole.USER)
                .content(TextBlock.builder().text(text).build()).build();
    }

    static Msg answer(ConfirmResult... results) {
        return Msg.builder().name("user").role(MsgRole.USER)
                .content(TextBlock.builder().text("answered").build())
                .metadata(Map.of(Msg.METADATA_CONFIRM_RESULTS, List.of(results))).build();
    }

    /** The calls a paused run waits on, as its reply shows them. */
    static List<ToolUseBlock> asking(Msg reply) {
        assertEquals(GenerateReason.PERMISSION_ASKING, reply.getGenerateReason(),
                "the run did not pause for a confirmation");
        return reply.getContentBlocks(ToolUseBlock.class).stream()
                .filter(c -> c.getState() == ToolCallState.ASKING).toList();
    }

    static ScriptedModel deploying(String id) {
        return new ScriptedModel(ScriptedModel.shell(id, "please-ask deploy prod"),
                ScriptedModel.say("deployed"));
    }

    List<String> answersTo(String askId) throws Exception {
        return served.logged("ask_answer").stream()
                .filter(r -> askId.equals(r.get("ask_id")) && !"host".equals(r.get("channel")))
                .map(r -> r.get("channel") + ":" + r.get("approved")).toList();
    }

    @Test
    void aConfirmedCallRunsWithExactlyItsArgumentsAndTheApprovalIsLogged() throws Exception {
        ScriptedModel model = deploying("call-n1");
        ReActAgent agent = agent(model);
        List<ToolUseBlock> waiting = asking(run(agent, user("deploy")));
        assertEquals(List.of(), shell.commands(), "the asked call ran before anyone confirmed");
        assertEquals(1, waiting.size(), waiting.toString());
        assertEquals("call-n1", waiting.get(0).getId());
        // what the person is shown: the stand-in naming the tool, its input, reason and ask
        assertEquals(1, shown.size());
        ToolUseBlock standIn = shown.get(0).getToolCalls().get(0);
        assertEquals("mcp_hooks_ask", standIn.getName());
        assertEquals("execute_shell_command", standIn.getInput().get("tool_name"));
        assertEquals(Map.of("command", "please-ask deploy prod"),
                standIn.getInput().get("tool_input"));
        assertTrue(String.valueOf(standIn.getInput().get("reason"))
                .contains("deploys need a person"), standIn.getInput().toString());
        String askId = String.valueOf(standIn.getInput().get("ask_id"));
        assertTrue(served.logged("ask").stream().anyMatch(r -> askId.equals(r.get("ask_id"))),
                "the ask is not in the server's log");

        Msg done = run(agent, answer(new ConfirmResult(true, waiting.get(0))));
        assertEquals(List.of("please-ask deploy prod"), shell.commands());
        assertEquals("deployed", Firing.text(done));
        assertEquals(List.of("agentscope-java:true"), answersTo(askId));
    }

    @Test
    void confirmingTheShownStandInRunsTheRealCall() throws Exception {
        ReActAgent agent = agent(deploying("call-n2"));
        asking(run(agent, user("deploy")));
        ToolUseBlock standIn = shown.get(0).getToolCalls().get(0);
        run(agent, answer(new ConfirmResult(true, standIn)));
        assertEquals(List.of("please-ask deploy prod"), shell.commands());
        assertEquals(List.of("agentscope-java:true"),
                answersTo(String.valueOf(standIn.getInput().get("ask_id"))));
    }

    @Test
    void aRejectedCallNeverRunsAndTheModelReadsSo() throws Exception {
        ScriptedModel model = deploying("call-n3");
        ReActAgent agent = agent(model);
        ToolUseBlock call = asking(run(agent, user("deploy"))).get(0);
        String askId = String.valueOf(shown.get(0).getToolCalls().get(0).getInput().get("ask_id"));
        run(agent, answer(new ConfirmResult(false, call)));
        assertEquals(List.of(), shell.commands(), "a rejected call ran");
        assertTrue(model.shown(2).contains("Permission denied by user"), model.shown(2));
        assertEquals(List.of(), answersTo(askId), "a rejection approved the ask");
    }

    @Test
    void aConfirmationThatChangedTheInputIsAskedAgain() throws Exception {
        ReActAgent agent = agent(deploying("call-n4"));
        ToolUseBlock call = asking(run(agent, user("deploy"))).get(0);
        Map<String, Object> other = Map.of("command", "please-ask deploy everything");
        ToolUseBlock changed = ToolUseBlock.builder().id(call.getId()).name(call.getName())
                .input(other).content(Jackson.write(other)).build();
        List<ToolUseBlock> again = asking(run(agent, answer(new ConfirmResult(true, changed))));
        assertEquals(List.of(), shell.commands(), "a changed call ran on another's approval");
        assertEquals(1, again.size());
        assertEquals(2, shown.size(), "the changed call was not shown to the person");
        assertEquals(other, shown.get(1).getToolCalls().get(0).getInput().get("tool_input"));
    }

    @Test
    void aCallWhosePermissionStepNeverAskedDoesNotRun() throws Exception {
        ScriptedModel model = deploying("call-n5");
        Msg reply = run(agent(model, new ApproveEverything()), user("deploy"));
        assertNotNull(reply);
        assertEquals(List.of(), shell.commands(), "an ask nobody was shown ran the tool");
        assertEquals(0, shown.size());
        assertTrue(model.shown(2).contains("a person must approve this call"), model.shown(2));
    }

    @Test
    void aCallNoHookAsksAboutRunsUnasked() {
        ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-n6", "ls -la"),
                ScriptedModel.say("listed"));
        Msg reply = run(agent(model), user("list"));
        assertEquals(List.of("ls -la"), shell.commands());
        assertEquals("listed", Firing.text(reply));
        assertEquals(0, shown.size());
    }
}
