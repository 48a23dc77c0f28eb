package io.github.mcphooks.agentscope;

import io.agentscope.core.tool.Tool;
import io.agentscope.core.tool.ToolParam;
import java.util.ArrayList;
import java.util.List;

/**
 * A tool named as AgentScope's own shell tool ({@code execute_shell_command}, key {@code
 * command}) that records the commands it is asked to run instead of running them: the test can
 * see whether a refused command would have reached the shell, and nothing is ever executed.
 */
public final class RecordingShell {
    final List<String> commands = new ArrayList<>();

    @Tool(name = "execute_shell_command", description = "Execute a shell command")
    public synchronized String execute(
            @ToolParam(name = "command", description = "The shell command") String command) {
        commands.add(command);
        return "ran: " + command;
    }

    synchronized List<String> commands() {
        return List.copyOf(commands);
    }
}
