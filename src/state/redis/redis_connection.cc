#include "state/redis/redis_connection.h"

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>
#include <chrono>
#include <cstring>

namespace switchyard::state::redis {

namespace asio = boost::asio;

namespace {

// A connect that neither succeeds nor fails (a peer dropping SYNs) is abandoned after this.
constexpr TimeNs kConnectTimeout = 1 * kNsPerSec;

std::chrono::nanoseconds asDuration(TimeNs ns) { return std::chrono::nanoseconds(ns); }

}  // namespace

// The state of one call() or send(): kept alive by the waiting coroutine and by one ReplySlot
// per command handed to hiredis, so a reply after the deadline, or a NULL reply when hiredis
// frees the context, always finds it.
struct RedisConnection::PendingCall {
  PendingCall(asio::any_io_executor executor, std::vector<RedisCommand> to_send)
      : timer(std::move(executor)),
        commands(std::move(to_send)),
        replies(commands.size()),
        outstanding(commands.size()) {}

  asio::steady_timer timer;  // the deadline; cancelled early to wake the caller
  std::vector<RedisCommand> commands;  // kept to re-send a script as EVAL after NOSCRIPT
  std::vector<RedisValue> replies;
  size_t outstanding;
  bool failed = false;     // a NULL (disconnected) or error reply
  bool detached = false;   // send(): nobody waits
  bool abandoned = false;  // the caller has its answer: later replies are dropped
};

namespace {
struct ReplySlot {
  std::shared_ptr<RedisConnection::PendingCall> call;
  size_t index;
};
}  // namespace

// Watches the fd hiredis owns. Wait handlers hold it by shared_ptr and check `context`, which
// hiredis's cleanup hook clears before it closes the fd.
struct RedisConnection::SocketWatch : std::enable_shared_from_this<SocketWatch> {
  SocketWatch(const asio::any_io_executor& executor, redisAsyncContext* watched)
      : socket(executor, watched->c.fd), context(watched) {}
  ~SocketWatch() { detach(); }

  void watchRead() {
    if (context == nullptr || reading || !want_read) return;
    reading = true;
    socket.async_wait(asio::posix::stream_descriptor::wait_read,
                      [self = shared_from_this()](const boost::system::error_code& ec) {
                        self->reading = false;
                        if (ec || self->context == nullptr || !self->want_read) return;
                        redisAsyncHandleRead(self->context);  // may free the context
                        self->watchRead();
                      });
  }
  void watchWrite() {
    if (context == nullptr || writing || !want_write) return;
    writing = true;
    socket.async_wait(asio::posix::stream_descriptor::wait_write,
                      [self = shared_from_this()](const boost::system::error_code& ec) {
                        self->writing = false;
                        if (ec || self->context == nullptr || !self->want_write) return;
                        redisAsyncHandleWrite(self->context);
                        self->watchWrite();
                      });
  }
  // Stops watching without closing: the fd is hiredis's to close.
  void detach() {
    context = nullptr;
    want_read = want_write = false;
    if (socket.is_open()) socket.release();  // cancels the waits
  }

  asio::posix::stream_descriptor socket;
  redisAsyncContext* context;
  bool want_read = true;  // until hiredis says otherwise: the connect completes on either
  bool want_write = true;
  bool reading = false;
  bool writing = false;
};

std::shared_ptr<RedisConnection> RedisConnection::create(asio::any_io_executor executor,
                                                         const SharedStateSettings& settings,
                                                         TimeNs timeout) {
  std::shared_ptr<RedisConnection> connection(
      new RedisConnection(std::move(executor), settings, timeout));
  connection->connect();
  return connection;
}

RedisConnection::RedisConnection(asio::any_io_executor executor,
                                 const SharedStateSettings& settings, TimeNs timeout)
    : executor_(std::move(executor)),
      password_(settings.password),
      database_(settings.database),
      timeout_(timeout),
      reconnect_min_(std::max<TimeNs>(settings.reconnect_min, kNsPerMs)),
      reconnect_max_(std::max(settings.reconnect_max, reconnect_min_)),
      backoff_(reconnect_min_),
      reconnect_timer_(executor_) {
  const size_t colon = settings.address.rfind(':');
  host_ = settings.address.substr(0, colon);
  if (colon != std::string::npos) port_ = std::atoi(settings.address.c_str() + colon + 1);
}

RedisConnection::~RedisConnection() { shutdown(); }

void RedisConnection::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  reconnect_timer_.cancel();
  stats_.connected.store(false, std::memory_order_relaxed);
  if (context_ != nullptr) {
    redisAsyncContext* context = context_;
    context_ = nullptr;
    redisAsyncFree(context);  // NULL replies end the calls in flight; cleanup() detaches
  }
}

void RedisConnection::connect() {
  if (shut_down_ || context_ != nullptr) return;
  redisAsyncContext* context = redisAsyncConnect(host_.c_str(), port_);
  if (context == nullptr) return scheduleReconnect();
  if (context->err != 0) {
    redisAsyncFree(context);
    return scheduleReconnect();
  }
  try {
    watch_ = std::make_shared<SocketWatch>(executor_, context);
  } catch (const std::exception&) {  // the reactor refused the fd
    redisAsyncFree(context);
    return scheduleReconnect();
  }
  context_ = context;
  context->data = this;
  context->ev.data = this;
  context->ev.addRead = &RedisConnection::addRead;
  context->ev.delRead = &RedisConnection::delRead;
  context->ev.addWrite = &RedisConnection::addWrite;
  context->ev.delWrite = &RedisConnection::delWrite;
  context->ev.cleanup = &RedisConnection::cleanup;
  redisAsyncSetConnectCallback(context, &RedisConnection::connectCallback);
  redisAsyncSetDisconnectCallback(context, &RedisConnection::disconnectCallback);

  // Queued ahead of every call, so they run first once connected.
  if (!password_.empty()) redisAsyncCommand(context, nullptr, nullptr, "AUTH %s", password_.c_str());
  if (database_ != 0) redisAsyncCommand(context, nullptr, nullptr, "SELECT %d", database_);
  loadScripts();
  watch_->watchRead();
  watch_->watchWrite();

  reconnect_timer_.expires_after(asDuration(kConnectTimeout));
  reconnect_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (ec || !self || self->context_ == nullptr ||
        self->stats_.connected.load(std::memory_order_relaxed)) {
      return;
    }
    redisAsyncContext* stuck = self->context_;
    self->context_ = nullptr;
    redisAsyncFree(stuck);
    self->scheduleReconnect();
  });
}

void RedisConnection::loadScripts() {
  for (size_t i = 0; i < kScriptCount; ++i) {
    const std::string_view source = scriptSource(static_cast<ScriptId>(i));
    const char* argv[] = {"SCRIPT", "LOAD", source.data()};
    const size_t lengths[] = {6, 4, source.size()};
    redisAsyncCommandArgv(context_, &RedisConnection::scriptLoadedCallback,
                          reinterpret_cast<void*>(i), 3, argv, lengths);
  }
}

void RedisConnection::scheduleReconnect() {
  if (shut_down_) return;
  reconnect_timer_.expires_after(asDuration(backoff_));
  backoff_ = std::min(backoff_ * 2, reconnect_max_);
  reconnect_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->connect();
  });
}

void RedisConnection::onConnected(bool ok) {
  if (!ok) {  // hiredis frees the context after this callback
    context_ = nullptr;
    return scheduleReconnect();
  }
  reconnect_timer_.cancel();
  backoff_ = reconnect_min_;
  if (ever_connected_) stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
  ever_connected_ = true;
  stats_.connected.store(true, std::memory_order_relaxed);
}

void RedisConnection::onDisconnected() {
  context_ = nullptr;  // hiredis frees it after this callback
  stats_.connected.store(false, std::memory_order_relaxed);
  scheduleReconnect();
}

void RedisConnection::detachSocket() {
  if (watch_) watch_->detach();
  watch_.reset();
}

bool RedisConnection::issue(const std::shared_ptr<PendingCall>& call, size_t index,
                            bool use_eval) {
  if (context_ == nullptr) return false;
  const RedisCommand& command = call->commands[index];
  boost::container::small_vector<const char*, 16> argv;
  boost::container::small_vector<size_t, 16> lengths;
  auto push = [&](std::string_view arg) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  };
  std::string key_count;
  if (command.script) {
    const auto id = static_cast<size_t>(*command.script);
    if (use_eval || script_sha_[id].empty()) {
      push("EVAL");
      push(scriptSource(*command.script));
    } else {
      push("EVALSHA");
      push(script_sha_[id]);
    }
    key_count = std::to_string(command.script_keys);
    push(key_count);
  }
  for (const std::string& arg : command.args) push(arg);
  auto* slot = new ReplySlot{call, index};
  if (redisAsyncCommandArgv(context_, &RedisConnection::replyCallback, slot,
                            static_cast<int>(argv.size()), argv.data(),
                            lengths.data()) != REDIS_OK) {
    delete slot;
    return false;
  }
  return true;
}

asio::awaitable<std::optional<std::vector<RedisValue>>> RedisConnection::call(
    std::vector<RedisCommand> commands, TimeNs timeout) {
  auto self = shared_from_this();  // the frame keeps the connection, even past its owner
  stats_.calls.fetch_add(1, std::memory_order_relaxed);
  const TimeNs started = SteadyClock::instance().now();
  auto pending = std::make_shared<PendingCall>(executor_, std::move(commands));
  bool issued = context_ != nullptr;
  for (size_t i = 0; issued && i < pending->commands.size(); ++i) issued = issue(pending, i, false);
  if (issued && pending->outstanding > 0 && !pending->failed) {
    pending->timer.expires_after(asDuration(timeout > 0 ? timeout : timeout_));
    boost::system::error_code ignored;  // expiry and early cancel both just wake us
    co_await pending->timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  pending->abandoned = true;
  if (!issued || pending->failed || pending->outstanding > 0) {
    stats_.degraded.fetch_add(1, std::memory_order_relaxed);
    co_return std::nullopt;
  }
  stats_.recordLatency(SteadyClock::instance().now() - started);
  co_return std::move(pending->replies);
}

void RedisConnection::send(RedisCommand command) {
  stats_.calls.fetch_add(1, std::memory_order_relaxed);
  std::vector<RedisCommand> one;
  one.push_back(std::move(command));
  auto pending = std::make_shared<PendingCall>(executor_, std::move(one));
  pending->detached = true;
  if (!issue(pending, 0, false)) stats_.degraded.fetch_add(1, std::memory_order_relaxed);
}

void RedisConnection::replyCallback(redisAsyncContext* context, void* reply_ptr, void* slot_ptr) {
  std::unique_ptr<ReplySlot> slot(static_cast<ReplySlot*>(slot_ptr));
  auto* self = static_cast<RedisConnection*>(context->data);
  const auto* reply = static_cast<const redisReply*>(reply_ptr);
  PendingCall& call = *slot->call;
  const bool is_error = reply == nullptr || reply->type == REDIS_REPLY_ERROR;
  // The server lost its script cache (restart, SCRIPT FLUSH): send the source instead.
  const RedisCommand& command = call.commands[slot->index];
  if (reply != nullptr && is_error && command.script && !call.abandoned &&
      std::strncmp(reply->str, "NOSCRIPT", 8) == 0) {
    self->script_sha_[static_cast<size_t>(*command.script)].clear();
    if (self->issue(slot->call, slot->index, /*use_eval=*/true)) return;
  }
  if (call.detached) {
    if (is_error) self->stats_.degraded.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (call.abandoned) {
    if (reply != nullptr && !is_error && command.on_late_reply != nullptr) {
      command.on_late_reply(*self, command, RedisValue::fromReply(*reply));
    }
    return;
  }
  --call.outstanding;
  if (is_error) {
    call.failed = true;
  } else {
    call.replies[slot->index] = RedisValue::fromReply(*reply);
  }
  if (call.failed || call.outstanding == 0) call.timer.cancel();
}

void RedisConnection::scriptLoadedCallback(redisAsyncContext* context, void* reply_ptr,
                                           void* script) {
  const auto* reply = static_cast<const redisReply*>(reply_ptr);
  if (reply == nullptr || reply->type != REDIS_REPLY_STRING) return;
  auto* self = static_cast<RedisConnection*>(context->data);
  self->script_sha_[reinterpret_cast<size_t>(script)].assign(reply->str, reply->len);
}

void RedisConnection::connectCallback(const redisAsyncContext* context, int status) {
  static_cast<RedisConnection*>(context->data)->onConnected(status == REDIS_OK);
}

void RedisConnection::disconnectCallback(const redisAsyncContext* context, int) {
  static_cast<RedisConnection*>(context->data)->onDisconnected();
}

namespace {
// hiredis's hooks: say what it wants to wait for; the watch starts a wait if none is pending.
void want(std::shared_ptr<RedisConnection::SocketWatch>& watch, bool read, bool on) {
  if (!watch) return;
  (read ? watch->want_read : watch->want_write) = on;
  if (on && read) watch->watchRead();
  if (on && !read) watch->watchWrite();
}
}  // namespace

void RedisConnection::addRead(void* self) {
  want(static_cast<RedisConnection*>(self)->watch_, true, true);
}
void RedisConnection::delRead(void* self) {
  want(static_cast<RedisConnection*>(self)->watch_, true, false);
}
void RedisConnection::addWrite(void* self) {
  want(static_cast<RedisConnection*>(self)->watch_, false, true);
}
void RedisConnection::delWrite(void* self) {
  want(static_cast<RedisConnection*>(self)->watch_, false, false);
}
void RedisConnection::cleanup(void* self) { static_cast<RedisConnection*>(self)->detachSocket(); }

}  // namespace switchyard::state::redis
