package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** AgentScope's tool names and keys in the shared vocabulary, and a rewrite back. */
class ToolNamesTest {
    @Test
    void builtInToolsReachHooksUnderTheirCanonicalNamesAndKeys() {
        assertEquals("Shell", ToolNames.canonicalName("execute_shell_command"));
        assertEquals("ReadFile", ToolNames.canonicalName("view_text_file"));
        assertEquals("WriteFile", ToolNames.canonicalName("write_text_file"));
        assertEquals("WriteFile", ToolNames.canonicalName("insert_text_file"));
        assertEquals("ListDir", ToolNames.canonicalName("list_directory"));
        assertEquals("my_tool", ToolNames.canonicalName("my_tool"));
        assertEquals(Map.of("path", "/etc/passwd", "ranges", "1-3"), ToolNames.canonicalInput(
                "view_text_file", Map.of("file_path", "/etc/passwd", "ranges", "1-3")));
        assertEquals(Map.of("path", "/tmp"),
                ToolNames.canonicalInput("list_directory", Map.of("dir_path", "/tmp")));
    }

    @Test
    void aRewriteGoesBackInTheToolsOwnKeys() {
        Map<String, Object> rewritten = new LinkedHashMap<>();
        rewritten.put("path", "notes.txt");
        rewritten.put("content", "safe");
        assertEquals(Map.of("file_path", "notes.txt", "content", "safe"),
                ToolNames.hostInput("write_text_file", rewritten));
        assertEquals(Map.of("command", "ls"),
                ToolNames.hostInput("execute_shell_command", Map.of("command", "ls")));
    }

    @Test
    void theEventCarriesTheToolsOwnViewUnderHostWhenRenamed() {
        Map<String, Object> fields = Firing.toolFields("write_text_file",
                Map.of("file_path", ".env", "content", "KEY=1"), "id-1");
        assertEquals("WriteFile", fields.get("tool_name"));
        assertEquals(Map.of("path", ".env", "content", "KEY=1"), fields.get("tool_input"));
        assertEquals(Map.of("host", Map.of("tool_name", "write_text_file",
                "tool_input", Map.of("file_path", ".env", "content", "KEY=1"))),
                fields.get("payload"));
        assertEquals(null, Firing.toolFields("my_tool", Map.of("a", 1), "id-2").get("payload"));
    }
}
