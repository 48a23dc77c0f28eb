package io.github.mcphooks.agentscope;

import io.github.mcphooks.client.Answer;
import io.github.mcphooks.client.McpHooksClient;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * What the hooks decided about one event: the server's {@code Outcome} (the JSON of {@code
 * mcp-hooks fire --json}), or, when the server could not be asked or its answer could not be
 * believed, the adapter's own answer saying why ({@link #forwardFailure()}): a deny, fail
 * closed, unless the client was built with {@code failOpen(true)}. The outcome's JSON is read
 * with Jackson ({@link Jackson}); the client hands it over as it was signed.
 */
public final class Decision {
    private final String eventType;
    private final boolean denied;
    private final String reason;
    private final String blockedBy;
    private final Map<String, Object> modifiedInput;
    private final Object modifiedOutput;
    private final List<String> additionalContext;
    private final boolean continueWorking;
    private final List<String> warnings;
    private final String forwardFailure;
    private final Integer stopBlockCount;
    private final Ask ask;

    /**
     * A hook's ask still waiting for a person (the outcome's {@code ask}, docs/ask.md): its
     * id ({@code mcp-hooks approve ID}), the hook that asked, its reason, and the tool input
     * it is about (canonical keys, as the tool would get it).
     */
    public record Ask(String id, String hook, String reason, Map<String, Object> toolInput) {
    }

    Decision(String eventType, boolean denied, String reason, String blockedBy,
             Map<String, Object> modifiedInput, Object modifiedOutput,
             List<String> additionalContext, boolean continueWorking, List<String> warnings,
             String forwardFailure, Integer stopBlockCount) {
        this(eventType, denied, reason, blockedBy, modifiedInput, modifiedOutput,
                additionalContext, continueWorking, warnings, forwardFailure, stopBlockCount,
                null);
    }

    Decision(String eventType, boolean denied, String reason, String blockedBy,
             Map<String, Object> modifiedInput, Object modifiedOutput,
             List<String> additionalContext, boolean continueWorking, List<String> warnings,
             String forwardFailure, Integer stopBlockCount, Ask ask) {
        this.eventType = eventType;
        this.denied = denied;
        this.reason = reason;
        this.blockedBy = blockedBy;
        this.modifiedInput = modifiedInput == null ? null
                : Collections.unmodifiableMap(new LinkedHashMap<>(modifiedInput));
        this.modifiedOutput = modifiedOutput;
        this.additionalContext = List.copyOf(additionalContext);
        this.continueWorking = continueWorking;
        this.warnings = List.copyOf(warnings);
        this.forwardFailure = forwardFailure;
        this.stopBlockCount = stopBlockCount;
        this.ask = ask;
    }

    /**
     * The ask a hook left pending, or null: with a deny, the fallback (its reason names the
     * id); with an allow, an ask the caller's framework is to put to a person ({@code
     * McpHooksMiddleware.Builder.nativeApproval}), or one the fallback let through.
     */
    public Ask ask() {
        return ask;
    }

    /** The canonical event these hooks answered ({@code before_tool}, ...). */
    public String eventType() {
        return eventType;
    }

    /** The event is refused: the tool must not run, the stop must not happen, ... */
    public boolean denied() {
        return denied;
    }

    /** Why it was denied (or the warning of an allow that failed open); may be null. */
    public String reason() {
        return reason;
    }

    /** The hook that denied ({@code mcp-hooks} when the client itself could not decide). */
    public String blockedBy() {
        return blockedBy;
    }

    /** The tool input a hook rewrote ({@code before_tool}), in canonical keys; or null. */
    public Map<String, Object> modifiedInput() {
        return modifiedInput;
    }

    /** The tool output a hook replaced ({@code after_tool}); or null. */
    public Object modifiedOutput() {
        return modifiedOutput;
    }

    /** Text the hooks want the agent to read. */
    public List<String> additionalContext() {
        return additionalContext;
    }

    /** A {@code before_stop} hook wants the agent to keep working on {@link #reason()}. */
    public boolean continueWorking() {
        return continueWorking;
    }

    /** Warnings of the run (a hook that failed open, a stop let through at the cap, ...). */
    public List<String> warnings() {
        return warnings;
    }

    /**
     * Why the server's answer was not used (unreachable, timed out, unsigned, 4xx ...), or
     * null when this is the server's verified outcome.
     */
    public String forwardFailure() {
        return forwardFailure;
    }

    /**
     * {@code before_stop}: where the server's loop guard stands for this session (the
     * outcome's {@code stop_block_count}): this block's place in the row of blocked stops, 0
     * when the stop goes through. Empty for other events and for a failed forward.
     */
    public OptionalInt stopBlockCount() {
        return stopBlockCount == null ? OptionalInt.empty() : OptionalInt.of(stopBlockCount);
    }

    /** The text a model reads in place of a refused call or output. */
    String refusal(String what) {
        if (reason != null && !reason.isBlank()) {
            return reason;
        }
        return "this " + what + " was blocked by hook " + blockedBy;
    }

    /**
     * What {@code client} brought back: the server's outcome, or a fault (fail closed, or open
     * if the client says so) when there is none or it is not an outcome.
     */
    static Decision of(McpHooksClient client, Answer answer) {
        if (answer.failure() != null) {
            return fault(answer.eventType(), answer.failure(), client.failOpen());
        }
        try {
            return fromOutcome(Jackson.parse(answer.outcome()));
        } catch (IllegalArgumentException exc) {
            String why = client.serverUrl() + " answered something that is not an outcome: "
                    + exc.getMessage();
            return fault(answer.eventType(), client.failed(answer.eventType(), why).failure(),
                    client.failOpen());
        }
    }

    /** The verified answer of a server, read from its JSON. */
    static Decision fromOutcome(Object parsed) {
        if (!(parsed instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("an outcome must be a JSON object");
        }
        Object event = map.get("event_type");
        if (!(event instanceof String eventType)) {
            throw new IllegalArgumentException("outcome.event_type: must be a string");
        }
        Object decision = map.containsKey("decision") ? map.get("decision") : "allow";
        if (!"allow".equals(decision) && !"deny".equals(decision)) {
            throw new IllegalArgumentException("outcome.decision: must be allow or deny");
        }
        Object input = map.get("modified_input");
        if (input != null && !(input instanceof Map)) {
            throw new IllegalArgumentException("outcome.modified_input: must be an object");
        }
        Object count = map.get("stop_block_count");
        if (count != null && !(count instanceof Integer)) {
            throw new IllegalArgumentException("outcome.stop_block_count: must be an integer");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> modifiedInput = (Map<String, Object>) input;
        return new Decision(eventType, "deny".equals(decision), text(map.get("reason")),
                text(map.get("blocked_by")), modifiedInput, map.get("modified_output"),
                strings(map.get("additional_context"), "additional_context"),
                Boolean.TRUE.equals(map.get("continue_working")),
                strings(map.get("warnings"), "warnings"), null, (Integer) count,
                ask(map.get("ask")));
    }

    private static Ask ask(Object value) {
        if (value == null) {
            return null;
        }
        if (!(value instanceof Map<?, ?> ask) || !(ask.get("id") instanceof String id)
                || id.isEmpty()) {
            throw new IllegalArgumentException("outcome.ask: must be null or an object with an id");
        }
        Object input = ask.get("tool_input");
        if (input != null && !(input instanceof Map)) {
            throw new IllegalArgumentException("outcome.ask.tool_input: must be an object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> toolInput = input == null ? Map.of()
                : Collections.unmodifiableMap(new LinkedHashMap<>((Map<String, Object>) input));
        return new Ask(id, text(ask.get("hook")), text(ask.get("reason")), toolInput);
    }

    /** The client's own answer when the forward failed: fail closed, or open if asked. */
    static Decision fault(String eventType, String why, boolean failOpen) {
        if (failOpen || !Events.canBlock(eventType)) {
            String how = failOpen ? "failOpen" : eventType + " cannot block";
            return new Decision(eventType, false, null, null, null, null, List.of(), false,
                    List.of("mcp-hooks: " + why + "; allowed (" + how + ")"), why, null);
        }
        String reason = "mcp-hooks could not decide this event, so it is blocked: " + why
                + " (to let such events through instead: McpHooksClient.builder().failOpen(true))";
        return new Decision(eventType, true, reason, "mcp-hooks", null, null, List.of(),
                "before_stop".equals(eventType),
                List.of("fault: " + why + "; blocked (failOpen off)"), why, null);
    }

    private static String text(Object value) {
        return value == null ? null : value.toString();
    }

    private static List<String> strings(Object value, String field) {
        if (value == null) {
            return List.of();
        }
        if (!(value instanceof List<?> list)) {
            throw new IllegalArgumentException("outcome." + field + ": must be a list");
        }
        List<String> out = new ArrayList<>();
        for (Object item : list) {
            out.add(String.valueOf(item));
        }
        return out;
    }

    @Override
    public String toString() {
        return "Decision{" + eventType + ": " + (denied ? "deny" : "allow")
                + (reason == null ? "" : ", reason=" + reason)
                + (modifiedInput == null ? "" : ", modified_input=" + modifiedInput)
                + (continueWorking ? ", continue_working" : "")
                + (ask == null ? "" : ", ask=" + ask.id())
                + (forwardFailure == null ? "" : ", forward failed: " + forwardFailure) + "}";
    }
}
