package io.github.mcphooks.agentscope;

import io.agentscope.core.message.ContentBlock;
import io.agentscope.core.message.Msg;
import io.agentscope.core.message.MsgRole;
import io.agentscope.core.message.TextBlock;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.model.ChatResponse;
import io.agentscope.core.model.GenerateOptions;
import io.agentscope.core.model.Model;
import io.agentscope.core.model.ToolSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import reactor.core.publisher.Flux;

/**
 * A real AgentScope {@link Model} that answers from a script: turn n returns {@code turns[n]}
 * (the last one again once the script runs out), and every call's messages are kept, so a
 * test can read what the model was shown.
 */
final class ScriptedModel implements Model {
    private final List<List<ContentBlock>> turns;
    final List<List<Msg>> calls = new ArrayList<>();

    @SafeVarargs
    ScriptedModel(List<ContentBlock>... turns) {
        this.turns = List.of(turns);
    }

    static List<ContentBlock> shell(String id, String command) {
        return List.of(ToolUseBlock.builder().id(id).name("execute_shell_command")
                .input(Map.of("command", command))
                .content(Jackson.write(Map.of("command", command))).build());
    }

    static List<ContentBlock> say(String text) {
        return List.of(TextBlock.builder().text(text).build());
    }

    @Override
    public synchronized Flux<ChatResponse> stream(List<Msg> messages, List<ToolSchema> tools,
                                                  GenerateOptions options) {
        calls.add(List.copyOf(messages));
        List<ContentBlock> turn = turns.get(Math.min(calls.size(), turns.size()) - 1);
        return Flux.just(ChatResponse.builder().id("turn-" + calls.size()).content(turn)
                .finishReason("stop").build());
    }

    @Override
    public String getModelName() {
        return "scripted";
    }

    synchronized int turns() {
        return calls.size();
    }

    /** The tool results the model was shown on turn {@code turn} (1-based), in order. */
    synchronized List<ToolResultBlock> toolResults(int turn) {
        List<ToolResultBlock> out = new ArrayList<>();
        for (Msg msg : calls.get(turn - 1)) {
            out.addAll(msg.getContentBlocks(ToolResultBlock.class));
        }
        return out;
    }

    /** Every text the model was shown on turn {@code turn}, system prompt included. */
    synchronized String shown(int turn) {
        StringBuilder out = new StringBuilder();
        for (Msg msg : calls.get(turn - 1)) {
            out.append(msg.getRole()).append(": ").append(Firing.text(msg)).append('\n');
            for (ToolResultBlock r : msg.getContentBlocks(ToolResultBlock.class)) {
                out.append("result ").append(r.getName()).append(": ").append(Firing.text(r))
                        .append('\n');
            }
        }
        return out.toString();
    }

    static boolean isUser(Msg msg) {
        return msg.getRole() == MsgRole.USER;
    }
}
