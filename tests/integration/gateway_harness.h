// Shared pieces of the gateway integration tests: processes of the binary under test, engine and
// config snippets, bounded polling, and reading the gateway's /debug/fleet.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace switchyard::testing {

inline constexpr auto kStartTimeout = 10s;
inline const Headers kJson = {{"Content-Type", "application/json"}};

inline std::string chatBody(std::string_view model, int max_tokens, bool stream = false) {
  return "{\"model\":\"" + std::string(model) +
         "\",\"messages\":[{\"role\":\"user\",\"content\":\"Say this is a test!\"}],"
         "\"max_tokens\":" + std::to_string(max_tokens) +
         (stream ? ",\"stream\":true" : "") + "}";
}

// One running `switchyard` process (engine or gateway) that must exit cleanly on SIGTERM.
class Process {
 public:
  explicit Process(std::vector<std::string> args,
                   std::chrono::milliseconds start_timeout = kStartTimeout) {
    process_ = spawnSwitchyard(std::move(args));
    ports_ = process_->waitForListening(deadlineIn(start_timeout));
  }
  ~Process() {
    if (stopped_) return;
    process_->sendSignal(SIGTERM);
    EXPECT_EQ(process_->waitExit(deadlineIn(10s)), std::optional<int>(0));
  }
  uint16_t port(size_t i = 0) const { return i < ports_.size() ? ports_[i] : 0; }
  ChildProcess& child() { return *process_; }
  void markStopped() { stopped_ = true; }

 private:
  std::unique_ptr<ChildProcess> process_;
  std::vector<uint16_t> ports_;
  bool stopped_ = false;
};

inline std::unique_ptr<Process> startEngine(std::string_view gpu,
                                            std::string listen = "127.0.0.1:0") {
  return std::make_unique<Process>(std::vector<std::string>{
      "engine", "--gpu", std::string(gpu), "--model", "llama2-7b", "--listen", std::move(listen)});
}

inline std::string replicaLine(uint16_t port, std::string_view gpu) {
  return "      - address: 127.0.0.1:" + std::to_string(port) + "\n        labels: { gpu: " +
         std::string(gpu) + ", engine: vllm }\n";
}

// A plain TCP connection to a loopback port, reads and writes bounded by 10 s; -1 when refused.
// (The kernel completes the handshake for a listener's backlog, accepted or not.)
inline int connectTo(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A port on which nothing listens (bound, then released).
inline uint16_t deadPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The value of the first sample whose line starts with `series` (a name and labels up to where
// they are given) in a Prometheus text page; NaN if absent.
inline double metricSample(const std::string& page, const std::string& series) {
  size_t at = page.find("\n" + series);
  if (at == std::string::npos) return std::nan("");
  at += 1 + series.size();
  const size_t space = page.find(' ', at);
  if (space == std::string::npos) return std::nan("");
  return std::strtod(page.c_str() + space + 1, nullptr);
}

template <typename Predicate>
bool waitUntil(Predicate&& predicate, std::chrono::milliseconds timeout) {
  const SteadyTime deadline = deadlineIn(timeout);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(20ms);  // polling interval, bounded by the deadline
  }
  return predicate();
}

// The named replica's field in the gateway's /debug/fleet (first model that lists it).
inline std::string fleetField(uint16_t admin_port, const std::string& replica,
                              std::string_view field) {
  const HttpResult r = httpRequest(admin_port, "GET", "/debug/fleet");
  if (r.status != 200) return {};
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(r.body).get(root) != simdjson::SUCCESS) return {};
  for (auto model : root["models"].get_array()) {
    for (auto entry : model["replicas"].get_array()) {
      std::string_view name;
      if (entry["name"].get(name) != simdjson::SUCCESS || name != replica) continue;
      simdjson::dom::element value;
      if (entry[field].get(value) != simdjson::SUCCESS) return {};
      if (value.is_string()) return std::string(value.get_string().value());
      return simdjson::minify(value);
    }
  }
  return {};
}

}  // namespace switchyard::testing
