#include "support/redis_server.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <stdexcept>
#include <string>
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
  // SIGKILL ends a stopped server as it is; SIGTERM needs it running. Resuming before a kill
  // would let it answer what was sent while it was paused.
  if (kill) {
    process_->sendSignal(SIGKILL);
  } else {
    resume();
    process_->sendSignal(SIGTERM);
  }
  paused_ = false;
  if (!process_->waitExit(deadlineIn(5000ms))) process_->sendSignal(SIGKILL);
  process_.reset();  // reaps
}

void RedisServer::pause() {
  if (!process_ || paused_) return;
  process_->sendSignal(SIGSTOP);
  paused_ = true;
  // SIGSTOP takes effect when the kernel next schedules the server: wait until it is stopped
  // (state T in /proc), so that nothing sent after pause() is answered.
  const std::string stat_path = "/proc/" + std::to_string(process_->pid()) + "/stat";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream stat(stat_path);
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');  // the state follows the parenthesised command name
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T') return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
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
