// The relay of a streamed answer, against an upstream that cuts its bytes where the test wants:
// events that arrive together leave in one client write, and an event is never held back
// waiting for the rest of the stream.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway_harness.h"
#include "loopback_server.h"

namespace switchyard::testing {
namespace {

constexpr std::string_view kStreamHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

std::string event(char token) {
  return std::string(R"(data: {"choices":[{"index":0,"delta":{"content":")") + token + R"("}}]})" +
         "\n\n";
}

std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

const std::string kDone = chunk("data: [DONE]\n\n") + "0\r\n\r\n";

size_t eventsIn(const std::string& data) {
  size_t n = 0;
  for (size_t at = data.find("data: {"); at != std::string::npos; at = data.find("data: {", at + 1))
    ++n;
  return n;
}

// A streamed chat completion through one gateway worker whose only replica answers with `parts`.
StreamResult relayed(std::vector<LoopbackServer::Part> parts) {
  LoopbackServer upstream("{}");
  upstream.answerWith(std::move(parts));
  const TempFile config(
      "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\nmodels:\n  - name: llama2-7b\n"
      "    replicas:\n      - address: 127.0.0.1:" +
          std::to_string(upstream.port()) + "\n",
      ".yaml");
  const Process gateway({"gateway", "--config", config.path()});
  return streamRequest(gateway.port(), "POST", "/v1/chat/completions",
                       chatBody("llama2-7b", 4, true), kJson, 10s);
}

TEST(RelayTest, EventsThatArriveTogetherLeaveInOneClientWrite) {
  // The head and four events in one write (under 512 bytes: one upstream read), then the end.
  const StreamResult r = relayed({{std::string(kStreamHead) + chunk(event('a')) +
                                       chunk(event('b')) + chunk(event('c')) + chunk(event('d')),
                                   200ms},
                                  {kDone}});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(eventsIn(r.body), 4u) << r.body;
  EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos);
  ASSERT_FALSE(r.pieces.empty());
  // One client chunk carries all four (Beast's parser alone stops after each upstream chunk).
  EXPECT_EQ(eventsIn(r.pieces.front().data), 4u) << r.pieces.front().data;
}

TEST(RelayTest, AnEventLeavesAtOnceWhenTheNextChunkHeaderIsCutInTwo) {
  // After the first event, the next chunk's size line stops half-way for 600 ms.
  const std::string second = chunk(event('b'));
  const StreamResult r =
      relayed({{std::string(kStreamHead) + chunk(event('a')) + second.substr(0, 1), 600ms},
               {second.substr(1) + kDone}});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(eventsIn(r.body), 2u) << r.body;
  ASSERT_GE(r.pieces.size(), 2u);
  EXPECT_EQ(eventsIn(r.pieces.front().data), 1u) << r.pieces.front().data;
  // The first event reached the client before the pause ended, not with the second.
  EXPECT_GE(r.pieces.back().at - r.pieces.front().at, 400ms);
}

}  // namespace
}  // namespace switchyard::testing
