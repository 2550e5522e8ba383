// Integration-test harness: child processes (the switchyard binary under test), a blocking
// HTTP/1.1 client with deadlines over loopback, and temporary files.
//
// Everything here is for tests on one thread; nothing sleeps to wait for a condition: waits are
// bounded by a deadline and end as soon as the condition holds. Beast lives in harness.cc only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/child_process.h"

namespace switchyard::testing {

using namespace std::chrono_literals;
using switchyard::deadlineIn;
using switchyard::SteadyTime;

using switchyard::ChildProcess;

// SWITCHYARD_BINARY (the binary under test) with these arguments.
std::unique_ptr<ChildProcess> spawnSwitchyard(std::vector<std::string> args);

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpResult {
  int status = 0;  // 0 when no response arrived
  Headers headers;
  std::string body;   // de-chunked
  std::string error;  // empty on success, else what failed ("connect: ...", "read: timeout")

  bool ok() const { return error.empty(); }
  // Case-insensitive lookup; "" when absent.
  std::string header(std::string_view name) const;
  bool hasHeader(std::string_view name) const;
};

// A body piece as the parser saw it arrive (one HTTP chunk, or part of one if it was split).
struct StreamPiece {
  std::string data;
  SteadyTime at;
};

struct StreamResult : HttpResult {
  std::vector<StreamPiece> pieces;  // in arrival order; body is their concatenation
};

// Called for each piece as it arrives; return false to stop reading and close the connection.
using PieceCallback = std::function<bool(const StreamPiece&)>;

// One keep-alive HTTP/1.1 connection to 127.0.0.1:port. Every call is bounded by `timeout`.
class HttpClient {
 public:
  explicit HttpClient(uint16_t port, std::chrono::milliseconds timeout = 10s);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Connects on first use; after the server closes the connection, requests fail (no reconnect).
  HttpResult request(std::string_view method, std::string_view target, std::string_view body = {},
                     const Headers& headers = {});
  StreamResult stream(std::string_view method, std::string_view target, std::string_view body = {},
                      const Headers& headers = {}, const PieceCallback& on_piece = {});
  bool isOpen() const;
  uint16_t localPort() const;  // 0 when not connected
  // True if the server closes the (idle) connection before the deadline.
  bool waitForServerClose(SteadyTime deadline);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

HttpResult httpRequest(uint16_t port, std::string_view method, std::string_view target,
                       std::string_view body = {}, Headers headers = {},
                       std::chrono::milliseconds timeout = 10s);
StreamResult streamRequest(uint16_t port, std::string_view method, std::string_view target,
                           std::string_view body = {}, Headers headers = {},
                           std::chrono::milliseconds timeout = 10s);

// A file with the given contents, removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(std::string_view contents, std::string_view suffix = ".txt");
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace switchyard::testing
