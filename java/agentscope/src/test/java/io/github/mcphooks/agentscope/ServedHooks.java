package io.github.mcphooks.agentscope;

import io.github.mcphooks.client.McpHooksClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A real {@code mcp-hooks serve --transport http} on a free loopback port, started from the
 * repository's .venv ({@code -Dmcphooks.bin}), whose user hooks folder (a temp dir) holds the
 * bundled {@code block-dangerous-commands} copied from {@code hooks/} and the test
 * hooks below. HOME and the XDG folders point into the temp dir too.
 */
final class ServedHooks implements AutoCloseable {
    static final String TOKEN = "java-test-token-" + Long.toHexString(System.nanoTime());
    private static final Pattern ANNOUNCE = Pattern.compile("serving \\w+ at (http://\\S+)/mcp");

    final Path root;
    final Path userDir;
    final Path projectDir;
    final Path log;
    final String url;
    private final Process process;
    private final List<String> stderr = new ArrayList<>();

    ServedHooks(Path root) throws IOException, InterruptedException {
        this.root = root;
        this.userDir = root.resolve("user-hooks");
        this.projectDir = root.resolve("project");
        this.log = root.resolve("events.jsonl");
        Files.createDirectories(projectDir);
        installHooks();
        String bin = System.getProperty("mcphooks.bin", "");
        if (bin.isEmpty() || !Files.isExecutable(Path.of(bin))) {
            throw new IllegalStateException("no mcp-hooks at -Dmcphooks.bin=" + bin + ": run `make"
                    + " .venv/.installed-stamp` in the repository (or pass the path of an mcp-hooks"
                    + " command)");
        }
        Path home = root.resolve("home");
        ProcessBuilder pb = new ProcessBuilder(bin, "serve", "--transport", "http", "--port", "0",
                "--token", TOKEN, "--user-dir", userDir.toString(),
                "--project-dir", projectDir.toString(), "--log", log.toString());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("MCP_HOOKS_") || k.startsWith("XDG_"));
        env.put("HOME", home.toString());
        env.put("XDG_CONFIG_HOME", home.resolve(".config").toString());
        env.put("XDG_STATE_HOME", home.resolve(".local/state").toString());
        env.put("XDG_CACHE_HOME", home.resolve(".cache").toString());
        pb.directory(projectDir.toFile());
        pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        process = pb.start();
        BufferedReader lines = new BufferedReader(new InputStreamReader(process.getErrorStream(),
                StandardCharsets.UTF_8));
        CompletableFuture<String> announced = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try {
                for (String line; (line = lines.readLine()) != null; ) {
                    synchronized (stderr) {
                        stderr.add(line);
                    }
                    Matcher m = ANNOUNCE.matcher(line);
                    if (m.find()) {
                        announced.complete(m.group(1));
                    }
                }
            } catch (IOException ignored) {
                // the process ended
            }
            announced.completeExceptionally(new IllegalStateException(
                    "mcp-hooks serve ended before it announced its address: " + stderr()));
        }, "mcp-hooks-serve-stderr");
        reader.setDaemon(true);
        reader.start();
        try {
            // a guard against a hang only: the server announces within seconds
            url = announced.get(120, TimeUnit.SECONDS);
        } catch (Exception exc) {
            process.destroyForcibly();
            throw new IllegalStateException("mcp-hooks serve did not start: " + stderr(), exc);
        }
    }

    String stderr() {
        synchronized (stderr) {
            return String.join("\n", stderr);
        }
    }

    McpHooksClient.Builder client() {
        return McpHooksClient.builder().serverUrl(url + "/mcp").token(TOKEN)
                .userDir(userDir).projectDir(projectDir);
    }

    /** The decisions the server's event log recorded, in order ({@code event_type:decision}). */
    List<String> loggedDecisions() throws IOException {
        if (!Files.exists(log)) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        for (String line : Files.readAllLines(log)) {
            Object parsed = Jackson.parse(line);
            if (parsed instanceof Map<?, ?> m && "event".equals(m.get("kind"))) {
                out.add(m.get("event_type") + ":" + m.get("decision"));
            }
        }
        return out;
    }

    /** The records of the server's event log of {@code kind} ({@code ask}, {@code ask_answer}). */
    List<Map<?, ?>> logged(String kind) throws IOException {
        List<Map<?, ?>> out = new ArrayList<>();
        if (Files.exists(log)) {
            for (String line : Files.readAllLines(log)) {
                if (Jackson.parse(line) instanceof Map<?, ?> m && kind.equals(m.get("kind"))) {
                    out.add(m);
                }
            }
        }
        return out;
    }

    /**
     * Approve the ask {@code askId} as an operator would, out of band: {@code POST
     * /asks/<id>/approve} with the server's token (docs/ask.md); the HTTP status.
     */
    int approve(String askId) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url + "/asks/" + askId
                        + "/approve"))
                .header("Authorization", "Bearer " + TOKEN)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"by\": \"ann\"}"))
                .timeout(Duration.ofSeconds(60)) // a guard against a hang only
                .build();
        return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString())
                .statusCode();
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
        }
    }

    // -- the hooks -----------------------------------------------------------------------

    private void installHooks() throws IOException {
        Path library = Path.of(System.getProperty("mcphooks.library", "../hooks"));
        copyTree(library.resolve("block-dangerous-commands"), userDir.resolve("block-dangerous-commands"));
        hook("rewrite-marked", "pre-tool-call", "matcher:\n  tool: Shell\n  pattern: 'please-rewrite'\n",
                "cat >/dev/null\necho '{\"modified_input\": {\"command\": \"echo rewritten\"}}'\n");
        hook("redact-output", "post-tool-call", "matcher:\n  tool: Shell\n  pattern: 'print-secret'\n",
                "cat >/dev/null\necho '{\"modified_output\": \"[redacted by hook]\"}'\n");
        hook("stop-gate", "pre-agent-turn-stop", "",
                "payload=$(cat)\ncase \"$payload\" in *gate-me*) ;; *) exit 0 ;; esac\n"
                        + "echo 'the tests have not run yet: run them before you stop' >&2\nexit 2\n");
        hook("ask-marked", "pre-tool-call", "matcher:\n  tool: Shell\n  pattern: 'please-ask'\n",
                "cat >/dev/null\necho '{\"decision\": \"ask\", \"reason\": \"deploys need a person\"}'\n");
        hook("house-rules", "pre-agent-turn", "",
                "payload=$(cat)\ncase \"$payload\" in *context-please*) ;; *) exit 0 ;; esac\n"
                        + "echo '{\"additional_context\": \"house rule: answer in French\"}'\n");
    }

    private void hook(String name, String trigger, String extra, String script) throws IOException {
        Path dir = userDir.resolve(name);
        Files.createDirectories(dir.resolve("scripts"));
        Files.writeString(dir.resolve("HOOK.md"), "---\nname: " + name + "\ndescription: A test "
                + "hook of the AgentScope Java adapter.\ntrigger: " + trigger + "\n" + extra
                + "timeout: 20000\n---\n\n# " + name + "\n");
        Path run = dir.resolve("scripts").resolve("run");
        Files.writeString(run, "#!/bin/sh\n" + script);
        Files.setPosixFilePermissions(run, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    private static void copyTree(Path from, Path to) throws IOException {
        if (!Files.isDirectory(from)) {
            throw new IllegalStateException("no bundled hook at " + from
                    + " (-Dmcphooks.library: the repository's hooks/)");
        }
        try (Stream<Path> paths = Files.walk(from)) {
            paths.forEach(p -> {
                Path target = to.resolve(from.relativize(p).toString());
                try {
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(target);
                    } else if (!p.getFileName().toString().endsWith(".pyc")) {
                        Files.copy(p, target, StandardCopyOption.COPY_ATTRIBUTES);
                    }
                } catch (IOException exc) {
                    throw new UncheckedIOException(exc);
                }
            });
        }
    }
}
