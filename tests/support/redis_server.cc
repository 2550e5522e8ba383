#include "support/redis_server.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>
#include <thread>

namespace switchyard::testing {
namespace {

using namespace std::chrono_literals;

// A loopback port nobody listens on right now: bind to port 0 and read what the OS chose.
uint16_t freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  if (port == 0) throw std::runtime_error("no free loopback port");
  return port;
}

}  // namespace

RedisServer::RedisServer() : port_(freeLoopbackPort()) { start(); }

RedisServer::~RedisServer() { stop(/*kill=*/true); }

std::string RedisServer::address() const { return "127.0.0.1:" + std::to_string(port_); }

void RedisServer::start() {
  if (process_) return;
  process_ = std::make_unique<ChildProcess>(std::vector<std::string>{
      kBinary, "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
      "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"});
  const SteadyTime deadline = deadlineIn(5000ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ping(100)) return;
    if (process_->waitExit(deadlineIn(20ms))) break;  // it exited (port taken?)
  }
  process_.reset();
  throw std::runtime_error("redis-server did not answer on " + address());
}

void RedisServer::stop(bool kill) {
  if (!process_) return;
  if (paused_) resume();
  process_->sendSignal(kill ? SIGKILL : SIGTERM);
  if (!process_->waitExit(deadlineIn(5000ms))) process_->sendSignal(SIGKILL);
  process_.reset();  // reaps
}

void RedisServer::pause() {
  if (!process_ || paused_) return;
  process_->sendSignal(SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  if (!process_ || !paused_) return;
  process_->sendSignal(SIGCONT);
  paused_ = false;
}

bool RedisServer::ping(int timeout_ms) const {
  const timeval timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  redisContext* context = redisConnectWithTimeout("127.0.0.1", port_, timeout);
  if (context == nullptr) return false;
  bool ok = false;
  if (context->err == 0 && redisSetTimeout(context, timeout) == REDIS_OK) {
    auto* reply = static_cast<redisReply*>(redisCommand(context, "PING"));
    ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
    if (reply != nullptr) freeReplyObject(reply);
  }
  redisFree(context);
  return ok;
}

}  // namespace switchyard::testing
