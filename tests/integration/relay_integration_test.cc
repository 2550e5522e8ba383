// The relay of a streamed answer, against an upstream that cuts its bytes where the test wants:
// events that arrive together leave in one client write, and an event is never held back
// waiting for the rest of the stream. Also the reads themselves: a head cut across reads, an
// answer that ends with its connection, requests pipelined on one client connection.
#include <gtest/gtest.h>
#include <sys/socket.h>

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

TempFile oneReplicaConfig(uint16_t port) {
  return TempFile(
      "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nworkers: 1\nmodels:\n  - name: llama2-7b\n"
      "    replicas:\n      - address: 127.0.0.1:" +
          std::to_string(port) + "\n",
      ".yaml");
}

// A streamed chat completion through one gateway worker whose only replica answers with `parts`.
StreamResult relayed(std::vector<LoopbackServer::Part> parts) {
  LoopbackServer upstream("{}");
  upstream.answerWith(std::move(parts));
  const TempFile config = oneReplicaConfig(upstream.port());
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

constexpr std::string_view kAnswer =
    R"({"id":"cmpl-1","object":"chat.completion","choices":[{"index":0,"message":)"
    R"({"role":"assistant","content":"hi"},"finish_reason":"stop"}],)"
    R"("usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}})";

TEST(RelayTest, AnUpstreamHeadCutAcrossReadsIsParsedWhole) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(kAnswer.size()) + "\r\n\r\n";
  // Cut inside the status line, inside a field name and just before the blank line.
  const StreamResult r = relayed({{head.substr(0, 10), 100ms},
                                  {head.substr(10, 20), 100ms},
                                  {head.substr(30, head.size() - 32), 100ms},
                                  {head.substr(head.size() - 2) + std::string(kAnswer)}});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kAnswer);
}

TEST(RelayTest, AnAnswerThatEndsWithItsConnectionIsRelayedWhole) {
  // No length and no chunks: the body is whatever comes before the upstream closes.
  const StreamResult r = relayed(
      {{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
            std::string(kAnswer.substr(0, 40)),
        100ms},
       {std::string(kAnswer.substr(40)), 100ms, /*close=*/true}});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, kAnswer);
}

// Reads from fd into `received` until it holds `want` copies of kAnswer (or the peer stops);
// returns how many it holds.
size_t readAnswers(int fd, size_t want, std::string& received) {
  auto answers = [&] {
    size_t n = 0;
    for (size_t at = received.find(kAnswer); at != std::string::npos;
         at = received.find(kAnswer, at + 1)) {
      ++n;
    }
    return n;
  };
  char buffer[4096];
  while (answers() < want) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  return answers();
}

TEST(RelayTest, RequestsPipelinedOnOneConnectionAreAnsweredInOrder) {
  LoopbackServer upstream(std::string{kAnswer});
  const TempFile config = oneReplicaConfig(upstream.port());
  const Process gateway({"gateway", "--config", config.path()});
  const std::string body = chatBody("llama2-7b", 4);
  const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  // Three requests in one write: the second and third are buffered when the first is read.
  const int fd = connectTo(gateway.port());
  ASSERT_GE(fd, 0);
  const std::string all = request + request + request;
  ASSERT_EQ(::send(fd, all.data(), all.size(), MSG_NOSIGNAL), static_cast<ssize_t>(all.size()));
  std::string received;
  EXPECT_EQ(readAnswers(fd, 3, received), 3u) << received;
  ::close(fd);
  size_t heads = 0;
  for (size_t at = received.find("HTTP/1.1 200 OK"); at != std::string::npos;
       at = received.find("HTTP/1.1 200 OK", at + 1)) {
    ++heads;
  }
  EXPECT_EQ(heads, 3u) << received;
  EXPECT_EQ(upstream.requests("/v1/chat/completions").size(), 3u);
}

TEST(RelayTest, EachRequestOnAKeptAliveConnectionForwardsItsOwnBodyWhole) {
  // A connection reuses its last request's body string: a shorter body after a longer one must
  // not carry the longer one's tail, and a body past the kept size is not kept.
  LoopbackServer upstream(std::string{kAnswer});
  const TempFile config = oneReplicaConfig(upstream.port());
  const Process gateway({"gateway", "--config", config.path()});
  auto body = [](size_t question_bytes) {
    return "{\"model\":\"llama2-7b\",\"messages\":[{\"role\":\"user\",\"content\":\"" +
           std::string(question_bytes, 'q') + "\"}],\"max_tokens\":4}";
  };
  const std::vector<std::string> bodies = {body(2000), body(10), body(500), body(20000),
                                           body(30)};
  const int fd = connectTo(gateway.port());
  ASSERT_GE(fd, 0);
  std::string received;
  for (size_t i = 0; i < bodies.size(); ++i) {
    const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                                "Content-Type: application/json\r\nContent-Length: " +
                                std::to_string(bodies[i].size()) + "\r\n\r\n" + bodies[i];
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    ASSERT_EQ(readAnswers(fd, i + 1, received), i + 1) << received;
  }
  ::close(fd);
  const auto forwarded = upstream.requests("/v1/chat/completions");
  ASSERT_EQ(forwarded.size(), bodies.size());
  for (size_t i = 0; i < bodies.size(); ++i) EXPECT_EQ(forwarded[i].body, bodies[i]) << i;
}

}  // namespace
}  // namespace switchyard::testing
