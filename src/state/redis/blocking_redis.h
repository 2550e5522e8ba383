// BlockingRedis: a synchronous hiredis connection with a timeout on connect and on every
// command, for command-line tools and control loops that run off the request path (profile
// import/export, the optimizer's load and profile reads). Not for a worker thread.
//
// RedisUrl parses AIBrix's `redis://[user:password@]host[:port][/db][?model=M]` form.
// Errors are values; nothing throws. One thread per instance.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "state/redis/redis_value.h"

struct redisContext;

namespace switchyard::state::redis {

struct RedisUrl {
  std::string host = "127.0.0.1";
  int port = 6379;
  int database = 0;
  std::string password;
  std::string model;  // ?model=

  static bool isRedisUrl(std::string_view text) { return text.starts_with("redis://"); }
  static std::optional<RedisUrl> parse(std::string_view text, std::string* error);
};

class BlockingRedis {
 public:
  BlockingRedis() = default;
  ~BlockingRedis();
  BlockingRedis(const BlockingRedis&) = delete;
  BlockingRedis& operator=(const BlockingRedis&) = delete;

  // Connects (AUTH and SELECT as the URL says). False with error() set on failure.
  bool connect(const RedisUrl& url, TimeNs timeout = 2 * kNsPerSec);
  bool connected() const { return context_ != nullptr; }
  // nullopt when the command could not be sent or answered (error() says why; the connection
  // is dropped and the next connect() starts afresh). An error *reply* is a value of kError.
  std::optional<RedisValue> command(const std::vector<std::string>& args);
  // Every key matching `pattern` (SCAN, not KEYS: it never blocks the server for long).
  std::optional<std::vector<std::string>> scan(const std::string& pattern);
  const std::string& error() const { return error_; }

 private:
  void drop();
  redisContext* context_ = nullptr;
  std::string error_;
};

}  // namespace switchyard::state::redis
