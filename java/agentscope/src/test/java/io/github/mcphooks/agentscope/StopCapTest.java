package io.github.mcphooks.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.github.mcphooks.client.McpHooksClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The before_stop cap for blocks the server never counted: with no server on the port every
 * stop's forward fails, fails closed (keep working), and such blocks in a row are honoured up
 * to the cap, then the stop goes through and the row starts over. (Blocks the server counts
 * are AgentScenarios' gate tests.)
 */
class StopCapTest {
    @Test
    void failedForwardsInARowAreHonouredUpToTheCapThenTheStopGoesThrough() throws IOException {
        int port;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        McpHooksClient down = McpHooksClient.builder().serverUrl("http://127.0.0.1:" + port)
                .token("t").build();
        Firing firing = new Firing(down, "s", null, 2);
        List<Boolean> keptWorking = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Optional<String> feedback = firing.beforeStop(Firing.userMessage("done")).join();
            keptWorking.add(feedback.isPresent());
        }
        assertEquals(List.of(true, true, false, true), keptWorking);
    }
}
