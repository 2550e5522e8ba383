// RedisConnection: one hiredis async connection driven by an Asio executor.
//
// hiredis 0.14 has no Asio adapter: its event hooks (add/del read/write, cleanup) are mapped
// onto async_wait on an asio::posix::stream_descriptor watching the fd hiredis owns (the
// descriptor is released, never closed, before hiredis frees the context).
//
// call() sends its commands back to back (hiredis pipelines them) and waits for all replies or
// the connection's deadline, whichever comes first; on the deadline, a disconnect or an error
// reply it answers nullopt ("degraded") and any late reply is dropped. While disconnected,
// calls answer nullopt at once and reconnects are tried with exponential backoff.
//
// Use from the executor's thread only. Hold the shared_ptr while awaiting call(); shutdown()
// (the owner's destructor) frees the hiredis context, which ends every call in flight as
// degraded. Every call is counted in stats().
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "state/redis/redis_scripts.h"
#include "state/redis/redis_value.h"
#include "state/shared_state.h"

struct redisAsyncContext;

namespace switchyard::state::redis {

// One command, or one script run: `args` are the command and its arguments, or, with `script`
// set, the script's keys (the first `script_keys`) and then its arguments.
class RedisConnection;
struct RedisCommand;
// Called when a reply arrives after its call() gave up (deadline): the command may have taken
// effect that nobody saw, e.g. an admission counted after the caller was told "degraded".
using LateReplyHandler = void (*)(RedisConnection& connection, const RedisCommand& command,
                                  const RedisValue& reply);

struct RedisCommand {
  std::optional<ScriptId> script;
  int script_keys = 0;
  std::vector<std::string> args;
  LateReplyHandler on_late_reply = nullptr;
};

class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
 public:
  // Starts connecting at once. `timeout` bounds every call().
  static std::shared_ptr<RedisConnection> create(boost::asio::any_io_executor executor,
                                                 const SharedStateSettings& settings,
                                                 TimeNs timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // The replies in command order; nullopt when degraded. Never throws. `timeout` > 0 replaces
  // the connection's for this call.
  boost::asio::awaitable<std::optional<std::vector<RedisValue>>> call(
      std::vector<RedisCommand> commands, TimeNs timeout = 0);
  TimeNs timeout() const { return timeout_; }
  // Sends without waiting; a failure is counted as degraded in stats().
  void send(RedisCommand command);
  // Frees the connection and stops reconnecting; calls in flight end degraded.
  void shutdown();

  SharedStateStats& stats() { return stats_; }

  struct PendingCall;
  struct SocketWatch;

 private:
  RedisConnection(boost::asio::any_io_executor executor, const SharedStateSettings& settings,
                  TimeNs timeout);
  void connect();
  void scheduleReconnect();
  void onConnected(bool ok);
  void onDisconnected();
  void detachSocket();
  bool issue(const std::shared_ptr<PendingCall>& call, size_t index, bool use_eval);
  void loadScripts();

  static void connectCallback(const redisAsyncContext* context, int status);
  static void disconnectCallback(const redisAsyncContext* context, int status);
  static void replyCallback(redisAsyncContext* context, void* reply, void* slot);
  static void scriptLoadedCallback(redisAsyncContext* context, void* reply, void* script);
  static void addRead(void* self);
  static void delRead(void* self);
  static void addWrite(void* self);
  static void delWrite(void* self);
  static void cleanup(void* self);

  boost::asio::any_io_executor executor_;
  std::string host_;
  int port_ = 6379;
  std::string password_;
  int database_ = 0;
  TimeNs timeout_;
  TimeNs reconnect_min_;
  TimeNs reconnect_max_;
  TimeNs backoff_;

  redisAsyncContext* context_ = nullptr;  // null while disconnected
  std::shared_ptr<SocketWatch> watch_;    // the fd's watcher, while context_ is set
  boost::asio::steady_timer reconnect_timer_;
  bool ever_connected_ = false;
  bool shut_down_ = false;
  std::array<std::string, kScriptCount> script_sha_;  // empty until SCRIPT LOAD answers
  SharedStateStats stats_;
};

}  // namespace switchyard::state::redis
