package io.github.mcphooks.agentscope;

import io.agentscope.core.ReActAgent;
import io.agentscope.core.hook.PreActingEvent;
import io.agentscope.core.message.ToolUseBlock;
import io.agentscope.core.tool.Toolkit;
import io.github.mcphooks.client.McpHooksClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The figures of bench/bench_java.py (no JMH): per {@code before_tool} event, interleaved in
 * one run against one running {@code mcp-hooks serve}:
 *
 * <ul>
 *   <li>{@code hook}: {@link McpHooksHook#onEvent} on a {@code PreActingEvent} for {@code
 *       execute_shell_command {"command": "rm -f build/out.o"}} (the bundled guard runs on it
 *       and allows it): the tool-name mapping, the signed request, the server's checks and
 *       hooks, and the answer's verification;
 *   <li>{@code client}: the same event through {@link McpHooksClient#send} alone, its answer
 *       read into a {@link Decision};
 *   <li>{@code bare}: a bare HTTP round trip to the same server ({@code POST /hooks/fire}
 *       without the v2 headers, answered 401 at once), from the same JVM's HttpClient.
 * </ul>
 * Usage: {@code BenchMain URL TOKEN EVENTS WARMUP}; prints one JSON object of microseconds.
 */
@SuppressWarnings({"removal", "deprecation"})
public final class BenchMain {
    private BenchMain() {
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String token = args[1];
        int events = Integer.parseInt(args[2]);
        int warmup = Integer.parseInt(args[3]);
        McpHooksClient client = McpHooksClient.builder().serverUrl(url).token(token)
                .timeout(Duration.ofSeconds(30)).build();
        McpHooksHook hook = McpHooksHook.builder(client).sessionId("bench-java").build();
        Toolkit toolkit = new Toolkit();
        ReActAgent agent = ReActAgent.builder().name("bench").model(new ScriptedModel(
                ScriptedModel.say("unused"))).toolkit(toolkit).build();
        ToolUseBlock call = ToolUseBlock.builder().id("bench").name("execute_shell_command")
                .input(Map.of("command", "rm -f build/out.o"))
                .content("{\"command\":\"rm -f build/out.o\"}").build();
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("event_type", "before_tool");
        fields.put("session_id", "bench-java");
        fields.putAll(Firing.toolFields(call.getName(), call.getInput(), call.getId()));

        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest bare = HttpRequest.newBuilder(URI.create(client.serverUrl() + "/hooks/fire"))
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build();

        List<Long> hookNs = new ArrayList<>();
        List<Long> clientNs = new ArrayList<>();
        List<Long> bareNs = new ArrayList<>();
        for (int i = 0; i < warmup + events; i++) {
            long t0 = System.nanoTime();
            HttpResponse<byte[]> r = http.send(bare, HttpResponse.BodyHandlers.ofByteArray());
            long t1 = System.nanoTime();
            if (r.statusCode() != 401) {
                throw new IllegalStateException("the bare request was answered " + r.statusCode());
            }
            PreActingEvent event = new PreActingEvent(agent, toolkit, call);
            hook.onEvent(event).block();
            long t2 = System.nanoTime();
            if (event.getToolUse() != call) {
                throw new IllegalStateException("the bench call was not allowed: "
                        + event.getToolUse().getInput());
            }
            Decision d = Decision.of(client, client.send("before_tool", Jackson.write(fields)));
            long t3 = System.nanoTime();
            if (d.denied() || d.forwardFailure() != null) {
                throw new IllegalStateException("the bench event was not allowed: " + d);
            }
            if (i >= warmup) {
                bareNs.add(t1 - t0);
                hookNs.add(t2 - t1);
                clientNs.add(t3 - t2);
            }
        }
        System.out.println("{\"events\": " + events + ", \"hook\": " + stats(hookNs)
                + ", \"client\": " + stats(clientNs) + ", \"bare\": " + stats(bareNs) + "}");
    }

    private static String stats(List<Long> ns) {
        List<Long> sorted = new ArrayList<>(ns);
        Collections.sort(sorted);
        int n = sorted.size();
        double median = n % 2 == 1 ? sorted.get(n / 2)
                : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2.0;
        double p99 = sorted.get(Math.min(n - 1, (int) Math.ceil(0.99 * n) - 1));
        return String.format(java.util.Locale.ROOT, "{\"median_us\": %.1f, \"p99_us\": %.1f}",
                median / 1000.0, p99 / 1000.0);
    }
}
