// RedisServer: a throw-away redis-server (/usr/bin/redis-server) for tests, on 127.0.0.1 and a
// port the OS picked, with persistence off. The tests that need a real Redis start one per
// fixture; the integration tests can use it the same way.
//
//   RedisServer redis;                  // started and answering PING, or throws
//   settings.address = redis.address(); // "127.0.0.1:PORT"
//   redis.stop();                       // SIGTERM (kill = true: SIGKILL); calls now fail
//   redis.start();                      // the same port again, empty
//   redis.pause(); redis.resume();      // SIGSTOP / SIGCONT: a server that stops answering
//
// Waits are bounded (a few seconds) and end as soon as the server answers. The destructor stops
// the server. Use from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/child_process.h"

namespace switchyard::testing {

class RedisServer {
 public:
  static constexpr const char* kBinary = "/usr/bin/redis-server";

  RedisServer();  // picks a free port and starts
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  uint16_t port() const { return port_; }
  std::string address() const;
  bool running() const { return process_ != nullptr; }

  // Starts on port() and waits until it answers PING. Throws std::runtime_error if it does not.
  void start();
  // Stops the server and reaps it. kill: SIGKILL (no shutdown), else SIGTERM.
  void stop(bool kill = false);
  void pause();
  void resume();
  // True if the server answers PING within `timeout_ms`.
  bool ping(int timeout_ms = 200) const;

 private:
  uint16_t port_ = 0;
  bool paused_ = false;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace switchyard::testing
