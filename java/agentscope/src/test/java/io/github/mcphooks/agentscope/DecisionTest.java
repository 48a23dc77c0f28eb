package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.mcphooks.client.Answer;
import io.github.mcphooks.client.McpHooksClient;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * What the adapter makes of the client's {@link Answer}s: the outcome read with Jackson, or a
 * fault that fails closed (open with {@code failOpen(true)}; events that cannot block pass).
 * The client's side of the same exchanges (signing, verifying) is its McpHooksClientTest.
 */
class DecisionTest {
    static McpHooksClient client(boolean failOpen) {
        return McpHooksClient.builder().serverUrl("http://127.0.0.1:1").token("t")
                .failOpen(failOpen).build();
    }

    static Decision of(String event, String outcome, String failure) {
        return Decision.of(client(false), new Answer(event, outcome, failure));
    }

    @Test
    void aVerifiedOutcomeIsTheDecision() {
        Decision d = of("before_tool", "{\"event_type\": \"before_tool\", "
                + "\"decision\": \"deny\", \"reason\": \"no r\\u00e9m\", \"blocked_by\": \"g\", "
                + "\"additional_context\": [\"ctx\"], \"hooks\": [], \"warnings\": []}", null);
        assertTrue(d.denied(), d.toString());
        assertEquals("no r\u00e9m", d.reason());
        assertEquals("g", d.blockedBy());
        assertEquals(List.of("ctx"), d.additionalContext());
        assertNull(d.forwardFailure());
        assertEquals(OptionalInt.empty(), d.stopBlockCount());
    }

    @Test
    void aPendingAskComesWithItsIdHookReasonAndInput() {
        Decision d = of("before_tool", "{\"event_type\": \"before_tool\", \"decision\": "
                + "\"allow\", \"ask\": {\"id\": \"ask-0123456789\", \"hook\": \"h\", "
                + "\"reason\": \"a person\", \"tool_input\": {\"command\": \"deploy\"}}}", null);
        assertFalse(d.denied());
        assertEquals(new Decision.Ask("ask-0123456789", "h", "a person",
                Map.of("command", "deploy")), d.ask());
        assertNull(of("before_tool", "{\"event_type\": \"before_tool\", \"ask\": null}",
                null).ask());
        Decision bad = of("before_tool", "{\"event_type\": \"before_tool\", \"ask\": "
                + "{\"reason\": \"no id\"}}", null);
        assertTrue(bad.denied() && bad.reason().contains("outcome.ask"), bad.toString());
    }

    @Test
    void aRewriteComesBackAsModifiedInput() {
        Decision d = of("before_tool", "{\"event_type\": \"before_tool\", "
                + "\"decision\": \"allow\", \"modified_input\": {\"command\": \"ls -la\"}}", null);
        assertFalse(d.denied());
        assertEquals(Map.of("command", "ls -la"), d.modifiedInput());
    }

    @Test
    void aStopCarriesTheServersCount() {
        Decision d = of("before_stop", "{\"event_type\": \"before_stop\", \"decision\": \"deny\","
                + " \"continue_working\": true, \"stop_block_count\": 3}", null);
        assertTrue(d.continueWorking());
        assertEquals(OptionalInt.of(3), d.stopBlockCount());
        Decision bad = of("before_stop", "{\"event_type\": \"before_stop\", "
                + "\"stop_block_count\": \"3\"}", null);
        assertTrue(bad.denied() && bad.reason().contains("stop_block_count"), bad.reason());
    }

    @Test
    void signedGarbageIsAFailedForward() {
        for (String garbage : List.of("<html>hello</html>", "[1, 2]", "{\"decision\": \"allow\"}",
                "{\"event_type\": \"before_tool\"} trailing")) {
            Decision d = of("before_tool", garbage, null);
            assertTrue(d.denied(), garbage);
            assertTrue(d.reason().contains("something that is not an outcome"), d.reason());
            assertNotNull(d.forwardFailure());
        }
    }

    @Test
    void aFailedForwardIsDeniedSayingWhy() {
        Decision d = of("before_tool", null, "no answer from x (connection refused: ...)");
        assertTrue(d.denied());
        assertEquals("mcp-hooks", d.blockedBy());
        assertTrue(d.reason().startsWith("mcp-hooks could not decide this event, so it is "
                + "blocked: no answer from x (connection refused"), d.reason());
        // a stop refused by our own fault keeps the agent working, as the engine's fault does
        Decision stop = of("before_stop", null, "down");
        assertTrue(stop.denied() && stop.continueWorking());
        assertEquals(OptionalInt.empty(), stop.stopBlockCount());
        // events after the fact cannot block: the fault is a warning
        Decision error = of("error", null, "down");
        assertFalse(error.denied());
        assertEquals(1, error.warnings().size());
    }

    @Test
    void failOpenLetsAFailedForwardThroughWithTheWarning() {
        Decision d = Decision.of(client(true), new Answer("before_tool", "not json", null));
        assertFalse(d.denied());
        assertNotNull(d.forwardFailure());
        assertTrue(d.warnings().get(0).contains("allowed (failOpen)"), d.warnings().toString());
    }

    @Test
    void jacksonWritesWhatItReadsAndRefusesTrailingText() {
        Map<String, Object> value = new LinkedHashMap<>();
        value.put("s", "a\"b\\c\n\u00e9\u2603");
        value.put("n", 12);
        value.put("f", 1.5);
        value.put("l", List.of(true, false));
        value.put("z", null);
        assertEquals(value, Jackson.parse(Jackson.write(value)));
        assertThrows(IllegalArgumentException.class, () -> Jackson.parse("{\"a\": 1} x"));
        assertThrows(IllegalArgumentException.class, () -> Jackson.parse("[1,"));
    }
}
