package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.ReActAgent;
import io.github.mcphooks.client.McpHooksClient;
import io.agentscope.core.message.ToolResultBlock;
import io.agentscope.core.model.Model;
import io.agentscope.core.tool.Toolkit;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
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

    /**
     * The Java block of docs/agentscope-java.md, compiled as written (but the example's address
     * and token, replaced by the test server's) and run: the agent it builds obeys the guard.
     */
    @Test
    void theDocsExampleRuns() throws Exception {
        String docs = Files.readString(Path.of(System.getProperty("mcphooks.docs")));
        Matcher block = Pattern.compile("```java\n(.*?)```", Pattern.DOTALL).matcher(docs);
        assertTrue(block.find(), "no java block in docs/agentscope-java.md");
        String snippet = block.group(1);
        assertTrue(snippet.contains("\"http://127.0.0.1:8765\"")
                && snippet.contains("System.getenv(\"MCP_HOOKS_TOKEN\")"), snippet);
        snippet = snippet.replace("\"http://127.0.0.1:8765\"", "\"" + served.url + "\"")
                .replace("System.getenv(\"MCP_HOOKS_TOKEN\")", "\"" + ServedHooks.TOKEN + "\"");
        Path src = tmp.resolve("docs-example/src/docs/Example.java");
        Path out = tmp.resolve("docs-example/classes");
        Files.createDirectories(src.getParent());
        Files.createDirectories(out);
        Files.writeString(src, "package docs;\n"
                + "import io.github.mcphooks.agentscope.*;\n"
                + "import io.github.mcphooks.client.McpHooksClient;\n"
                + "import io.agentscope.core.ReActAgent;\n"
                + "import io.agentscope.core.model.Model;\n"
                + "import io.agentscope.core.tool.Toolkit;\n"
                + "@SuppressWarnings({\"removal\", \"deprecation\"})\n"
                + "public class Example {\n"
                + "  public static ReActAgent build(Model model, Toolkit toolkit) {\n"
                + snippet
                + "    return agent;\n  }\n}\n");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        String classpath = System.getProperty("surefire.test.class.path",
                System.getProperty("java.class.path"));
        int rc = javac.run(null, null, null, "-proc:none", "-d", out.toString(), "-cp", classpath,
                src.toString());
        assertEquals(0, rc, "the docs example does not compile");
        try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()},
                getClass().getClassLoader())) {
            Toolkit toolkit = new Toolkit();
            toolkit.registerTool(shell);
            ScriptedModel model = new ScriptedModel(ScriptedModel.shell("call-rm", "rm -rf /"),
                    ScriptedModel.say("refused"));
            ReActAgent agent = (ReActAgent) loader.loadClass("docs.Example")
                    .getMethod("build", Model.class, Toolkit.class).invoke(null, model, toolkit);
            call(agent, "clean up");
            assertTrue(Firing.text(model.toolResults(2).get(0))
                    .contains("Dangerous command blocked"), model.shown(2));
        }
        assertEquals(List.of(), shell.commands());
    }
}
