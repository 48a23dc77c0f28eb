package io.github.mcphooks.agentscope;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * AgentScope Java's built-in tools in mcp-hooks' shared tool vocabulary, so that a HOOK.md
 * hook matching {@code tool: Shell} and reading {@code tool_input.command} guards {@code
 * execute_shell_command} as it guards Claude Code's {@code Bash}:
 *
 * <table>
 *   <caption>AgentScope tool to canonical tool</caption>
 *   <tr><th>AgentScope tool</th><th>canonical</th><th>keys renamed</th></tr>
 *   <tr><td>{@code execute_shell_command}</td><td>{@code Shell}</td><td>none
 *       ({@code command}; {@code timeout}, {@code charset} pass through)</td></tr>
 *   <tr><td>{@code view_text_file}</td><td>{@code ReadFile}</td><td>{@code file_path} to
 *       {@code path} ({@code ranges} passes through)</td></tr>
 *   <tr><td>{@code write_text_file}</td><td>{@code WriteFile}</td><td>{@code file_path} to
 *       {@code path} ({@code content}; {@code ranges} passes through)</td></tr>
 *   <tr><td>{@code insert_text_file}</td><td>{@code WriteFile}</td><td>{@code file_path} to
 *       {@code path} ({@code content}; {@code line_number} passes through)</td></tr>
 *   <tr><td>{@code list_directory}</td><td>{@code ListDir}</td><td>{@code dir_path} to
 *       {@code path}</td></tr>
 * </table>
 *
 * <p>Any other tool (your own {@code @Tool} methods, MCP tools, {@code call_<agent>}
 * sub-agents) reaches hooks under its own name and keys. The AgentScope name and input go
 * along under the event's {@code payload.host}; a rewrite ({@code modified_input}) comes back
 * in the tool's own keys.
 */
public final class ToolNames {
    private record Entry(String canonical, Map<String, String> renames) {
    }

    private static final Map<String, Entry> TABLE = Map.of(
            "execute_shell_command", new Entry("Shell", Map.of()),
            "view_text_file", new Entry("ReadFile", Map.of("file_path", "path")),
            "write_text_file", new Entry("WriteFile", Map.of("file_path", "path")),
            "insert_text_file", new Entry("WriteFile", Map.of("file_path", "path")),
            "list_directory", new Entry("ListDir", Map.of("dir_path", "path")));

    private ToolNames() {
    }

    /** The AgentScope tool names this table maps. */
    public static java.util.Set<String> mapped() {
        return TABLE.keySet();
    }

    /** The name hooks see for {@code toolName} (unchanged when it is not in the table). */
    public static String canonicalName(String toolName) {
        Entry entry = TABLE.get(toolName);
        return entry == null ? toolName : entry.canonical;
    }

    /** {@code input} in canonical keys (a copy; keys not renamed are kept as they are). */
    public static Map<String, Object> canonicalInput(String toolName, Map<String, ?> input) {
        Map<String, Object> out = new LinkedHashMap<>();
        Entry entry = TABLE.get(toolName);
        if (input == null) {
            return out;
        }
        if (entry != null) { // renamed keys first: they win over a canonical key also sent
            entry.renames.forEach((host, canon) -> {
                if (input.containsKey(host)) {
                    out.put(canon, input.get(host));
                }
            });
        }
        for (Map.Entry<String, ?> e : input.entrySet()) {
            boolean renamed = entry != null && entry.renames.containsKey(e.getKey());
            if (!renamed && !out.containsKey(e.getKey())) {
                out.put(e.getKey(), e.getValue());
            }
        }
        return out;
    }

    /** A rewritten canonical input back in {@code toolName}'s own keys (a whole input). */
    public static Map<String, Object> hostInput(String toolName, Map<String, ?> canonical) {
        Map<String, Object> out = new LinkedHashMap<>();
        Entry entry = TABLE.get(toolName);
        Map<String, String> back = new LinkedHashMap<>();
        if (entry != null) {
            entry.renames.forEach((host, canon) -> back.put(canon, host));
        }
        for (Map.Entry<String, ?> e : canonical.entrySet()) {
            out.put(back.getOrDefault(e.getKey(), e.getKey()), e.getValue());
        }
        return out;
    }
}
