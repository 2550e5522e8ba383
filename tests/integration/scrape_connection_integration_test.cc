// http::ScrapeConnection against a scripted engine on 127.0.0.1: the polled connection reads
// answers that arrive in pieces, retries a keep-alive connection the engine closed, decodes
// chunked pages and reports what it cannot read as status 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http/scrape_connection.h"

namespace switchyard {
namespace {

using namespace std::chrono_literals;

// One scripted answer: its pieces are written with a pause after each; `close_after` closes
// the connection once the answer is written (without saying so in the head).
struct Answer {
  std::vector<std::string> pieces;
  std::chrono::milliseconds pause{0};
  bool close_after = false;
  bool silent = false;  // read the request, never answer
};

// Accepts connections one after the other and answers the requests on each with the next
// scripted answer. Counts connections and requests.
class ScriptedEngine {
 public:
  explicit ScriptedEngine(std::vector<Answer> answers) : answers_(std::move(answers)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    ::listen(listener_, 8);
    thread_ = std::thread([this] { run(); });
  }
  ~ScriptedEngine() {
    stop_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }
  int requests() const { return requests_; }

 private:
  void run() {
    size_t next = 0;
    while (!stop_) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      ++connections_;
      bool close_now = false;
      while (next < answers_.size() && readRequest(fd)) {
        ++requests_;
        const Answer& answer = answers_[next++];
        if (answer.silent) break;
        for (const std::string& piece : answer.pieces) {
          if (::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) < 0) break;
          std::this_thread::sleep_for(answer.pause);
        }
        close_now = answer.close_after;
        if (close_now) break;
      }
      // Out of script: keep the connection a while so that the client reads what it was sent.
      if (!close_now && next >= answers_.size()) std::this_thread::sleep_for(200ms);
      ::close(fd);
    }
  }
  static bool readRequest(int fd) {
    std::string got;
    char buf[1024];
    while (got.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;
      got.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  std::vector<Answer> answers_;
  int listener_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread thread_;
};

struct Outcome final : http::ScrapeConnection::Sink {
  int status = -1;
  std::string body;
  int reports = 0;
  void onScrape(int s, std::string_view b) override {
    status = s;
    body.assign(b);
    ++reports;
  }
};

// Drives one scrape as the scraper's tick does: the io_context for the connect, then a
// collect() every few milliseconds until the outcome is reported (or 3 s pass).
int scrape(boost::asio::io_context& io, http::ScrapeConnection& connection, Outcome& outcome,
           int* polls = nullptr) {
  const int reports = outcome.reports;
  EXPECT_TRUE(connection.start());
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  int n = 0;
  while (outcome.reports == reports && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.poll();
    if (outcome.reports != reports) break;
    ++n;
    if (!connection.collect()) break;
    std::this_thread::sleep_for(2ms);
  }
  if (polls) *polls = n;
  return outcome.status;
}

std::string page(std::string_view body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

constexpr std::string_view kPage = "vllm:num_requests_running{model_name=\"m\"} 3\n";

std::shared_ptr<http::ScrapeConnection> connectionTo(boost::asio::io_context& io, uint16_t port,
                                                     Outcome& outcome, size_t limit = 1 << 20) {
  return std::make_shared<http::ScrapeConnection>(io, "127.0.0.1", port, "127.0.0.1",
                                                  "/metrics", limit, &outcome);
}

TEST(ScrapeConnectionTest, AnAnswerThatArrivesInPiecesIsReadOverSeveralPolls) {
  const std::string whole = page(kPage);
  ScriptedEngine engine({Answer{{whole.substr(0, 20), whole.substr(20, 60), whole.substr(80)},
                                30ms}});
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, engine.port(), outcome);
  int polls = 0;
  EXPECT_EQ(scrape(io, *connection, outcome, &polls), 200);
  EXPECT_EQ(outcome.body, kPage);
  EXPECT_GE(polls, 3);  // the pieces came 30 ms apart: the first polls found part of the answer
  connection->detach();
}

TEST(ScrapeConnectionTest, TheConnectionIsKeptForTheNextScrape) {
  ScriptedEngine engine({Answer{{page(kPage)}}, Answer{{page("second\n")}}});
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, engine.port(), outcome);
  EXPECT_EQ(scrape(io, *connection, outcome), 200);
  EXPECT_GE(connection->nativeHandle(), 0);
  EXPECT_EQ(scrape(io, *connection, outcome), 200);
  EXPECT_EQ(outcome.body, "second\n");
  EXPECT_EQ(engine.connections(), 1);
  connection->detach();
}

TEST(ScrapeConnectionTest, AKeepAliveConnectionTheEngineClosedIsRetriedOnAFreshOne) {
  ScriptedEngine engine({Answer{{page(kPage)}, 0ms, /*close_after=*/true},
                         Answer{{page("after the close\n")}}});
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, engine.port(), outcome);
  EXPECT_EQ(scrape(io, *connection, outcome), 200);
  std::this_thread::sleep_for(50ms);  // the engine has closed the idle connection
  EXPECT_EQ(scrape(io, *connection, outcome), 200);
  EXPECT_EQ(outcome.body, "after the close\n");
  EXPECT_EQ(engine.connections(), 2);
  connection->detach();
}

TEST(ScrapeConnectionTest, AChunkedPageIsDecoded) {
  const std::string chunked =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  ScriptedEngine engine({Answer{{chunked.substr(0, 50), chunked.substr(50)}, 20ms}});
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, engine.port(), outcome);
  EXPECT_EQ(scrape(io, *connection, outcome), 200);
  EXPECT_EQ(outcome.body, "hello world");
  connection->detach();
}

TEST(ScrapeConnectionTest, WhatCannotBeReadIsStatusZero) {
  // Over the size limit, a malformed head, a page without a length.
  ScriptedEngine engine({Answer{{page(std::string(4096, 'x'))}}});
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, engine.port(), outcome, /*limit=*/1024);
  EXPECT_EQ(scrape(io, *connection, outcome), 0);
  EXPECT_LT(connection->nativeHandle(), 0);  // closed: the next scrape starts afresh
  connection->detach();

  ScriptedEngine garbled({Answer{{"HTTP/1.1 two hundred\r\n\r\n"}}});
  auto second = connectionTo(io, garbled.port(), outcome);
  EXPECT_EQ(scrape(io, *second, outcome), 0);
  second->detach();

  ScriptedEngine unbounded({Answer{{"HTTP/1.1 200 OK\r\n\r\nno length"}}});
  auto third = connectionTo(io, unbounded.port(), outcome);
  EXPECT_EQ(scrape(io, *third, outcome), 0);
  third->detach();
}

TEST(ScrapeConnectionTest, ACancelledScrapeIsReportedOnceAsStatusZero) {
  ScriptedEngine engine({Answer{{}, 0ms, false, /*silent=*/true}});
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, engine.port(), outcome);
  ASSERT_TRUE(connection->start());
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (engine.requests() == 0 && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.poll();
    connection->collect();
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_EQ(engine.requests(), 1);
  EXPECT_TRUE(connection->collect());  // still waiting for the answer
  connection->cancel();
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(outcome.reports, 1);
  EXPECT_FALSE(connection->busy());
  EXPECT_FALSE(connection->collect());
  connection->detach();
}

TEST(ScrapeConnectionTest, AReadinessSetNamesOnlyTheSocketsWithSomethingToRead) {
  ScriptedEngine quick({Answer{{page(kPage)}}});
  // Closes its end 100 ms after answering, i.e. between scrapes.
  ScriptedEngine closing({Answer{{page(kPage)}, 100ms, /*close_after=*/true}});
  boost::asio::io_context io;
  http::ScrapeReadiness readiness;
  Outcome quick_outcome, closing_outcome;
  auto a = connectionTo(io, quick.port(), quick_outcome);
  auto c = connectionTo(io, closing.port(), closing_outcome);
  a->watchWith(&readiness, 1);
  c->watchWith(&readiness, 3);
  // Both answered through the readiness set alone (no collect() on a socket it did not name).
  ASSERT_TRUE(a->start());
  ASSERT_TRUE(c->start());
  std::vector<http::ScrapeReadiness::Ready> ready;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while ((a->busy() || c->busy()) && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.poll();
    readiness.ready(ready);
    for (const auto& r : ready) (r.key == 1 ? a : c)->onReadable(r.peer_closed);
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_EQ(quick_outcome.status, 200);
  EXPECT_EQ(closing_outcome.status, 200);
  EXPECT_GE(c->nativeHandle(), 0);
  // Between scrapes the set names a socket only when its peer closed it; reading it closes ours.
  std::this_thread::sleep_for(150ms);
  readiness.ready(ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].key, 3u);
  EXPECT_TRUE(ready[0].peer_closed);
  c->onReadable(ready[0].peer_closed);
  EXPECT_LT(c->nativeHandle(), 0);
  EXPECT_GE(a->nativeHandle(), 0);
  readiness.ready(ready);
  EXPECT_TRUE(ready.empty());
  a->detach();
  c->detach();
}

// Starts one scrape on a connection watched by `readiness`, drives the io_context until the
// engine has read the request, then leaves 50 ms for the answer (and any close) to arrive, and
// asks the readiness set once.
std::vector<http::ScrapeReadiness::Ready> startAndAwaitArrival(
    boost::asio::io_context& io, http::ScrapeConnection& connection,
    http::ScrapeReadiness& readiness, const ScriptedEngine& engine) {
  EXPECT_TRUE(connection.start());
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  while (engine.requests() == 0 && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.poll();  // the connect, then the request
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(50ms);
  std::vector<http::ScrapeReadiness::Ready> ready;
  readiness.ready(ready);
  return ready;
}

// Edge-triggered, the set names a socket once for an answer and the close that came with it:
// the close must be acted on then, or the next scrape would write into a closed connection.
TEST(ScrapeConnectionTest, ACloseThatCameWithTheAnswerClosesTheSocketOnceItIsRead) {
  ScriptedEngine closing({Answer{{page(kPage)}, 0ms, /*close_after=*/true}});
  boost::asio::io_context io;
  http::ScrapeReadiness readiness;
  Outcome outcome;
  auto c = connectionTo(io, closing.port(), outcome);
  c->watchWith(&readiness, 3);
  auto ready = startAndAwaitArrival(io, *c, readiness, closing);  // the answer and the close
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_TRUE(ready[0].peer_closed);
  c->onReadable(ready[0].peer_closed);
  EXPECT_EQ(outcome.status, 200);
  EXPECT_EQ(outcome.body, kPage);
  EXPECT_LT(c->nativeHandle(), 0);
  readiness.ready(ready);
  EXPECT_TRUE(ready.empty());
  c->detach();
}

TEST(ScrapeConnectionTest, AnAnswerCutShortByACloseFailsWhenTheCloseIsNamed) {
  ScriptedEngine cut({Answer{{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"}, 0ms,
                             /*close_after=*/true}});
  boost::asio::io_context io;
  http::ScrapeReadiness readiness;
  Outcome outcome;
  auto c = connectionTo(io, cut.port(), outcome);
  c->watchWith(&readiness, 3);
  const auto ready = startAndAwaitArrival(io, *c, readiness, cut);
  ASSERT_EQ(ready.size(), 1u);
  c->onReadable(ready[0].peer_closed);
  EXPECT_EQ(outcome.status, 0);
  EXPECT_EQ(outcome.reports, 1);
  EXPECT_FALSE(c->busy());
  EXPECT_LT(c->nativeHandle(), 0);
  c->detach();
}

TEST(ScrapeConnectionTest, NoEngineListeningIsStatusZero) {
  uint16_t port;
  {
    ScriptedEngine gone({});
    port = gone.port();
  }
  boost::asio::io_context io;
  Outcome outcome;
  auto connection = connectionTo(io, port, outcome);
  EXPECT_EQ(scrape(io, *connection, outcome), 0);
  connection->detach();
}

}  // namespace
}  // namespace switchyard
