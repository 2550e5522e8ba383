// LoopbackServer: a loopback HTTP/1.1 server for integration tests, standing in for an OTLP
// collector or an engine: one thread per connection, keep-alive, records every request.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace switchyard::testing {

// A loopback HTTP/1.1 server: one thread per connection, keep-alive, records every request and
// answers with `body` (JSON). Stands in for an OTLP collector or an engine.
class LoopbackServer {
 public:
  struct Request {
    std::string method, target, body;
    std::map<std::string, std::string> headers;  // lower-case names
  };
  // Raw bytes written as one write() each, with a pause after each: a response cut where a test
  // wants it (a chunk header split across writes, events that arrive together).
  struct Part {
    std::string bytes;
    std::chrono::milliseconds pause{0};
    bool close = false;  // then close the connection (an answer that ends with it)
  };

  explicit LoopbackServer(std::string body) : body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 64);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    acceptor_.join();
    std::vector<std::thread> connections;
    {
      // Joined without the lock: a connection may be storing a request that just arrived.
      std::lock_guard lock(mutex_);
      connections.swap(connections_);
    }
    for (auto& t : connections) t.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  // From now on every request but /metrics is answered with `parts`, verbatim.
  void answerWith(std::vector<Part> parts) {
    std::lock_guard lock(mutex_);
    script_ = std::move(parts);
  }
  std::vector<Request> requests(std::string_view target_prefix) {
    std::lock_guard lock(mutex_);
    std::vector<Request> out;
    for (const auto& r : requests_) {
      if (r.target.starts_with(target_prefix)) out.push_back(r);
    }
    return out;
  }

 private:
  void acceptLoop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) continue;
      std::lock_guard lock(mutex_);
      connections_.emplace_back([this, client] { serve(client); });
    }
  }
  bool readMore(int fd, std::string& buffer) {
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, 20);
      if (ready == 0) continue;
      char chunk[4096];
      const ssize_t n = ready > 0 ? ::read(fd, chunk, sizeof chunk) : -1;
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
      return true;
    }
    return false;
  }
  void serve(int fd) {
    std::string buffer;
    for (;;) {
      size_t end;
      while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (!readMore(fd, buffer)) return (void)::close(fd);
      }
      Request req;
      std::string head = buffer.substr(0, end);
      buffer.erase(0, end + 4);
      size_t line_end = head.find("\r\n");
      const std::string first = head.substr(0, line_end);
      req.method = first.substr(0, first.find(' '));
      req.target = first.substr(first.find(' ') + 1);
      req.target = req.target.substr(0, req.target.find(' '));
      size_t content_length = 0;
      while (line_end != std::string::npos) {
        const size_t next = head.find("\r\n", line_end + 2);
        std::string line = head.substr(line_end + 2, next == std::string::npos
                                                         ? std::string::npos
                                                         : next - line_end - 2);
        line_end = next;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (name == "content-length") content_length = std::stoul(value);
        req.headers[name] = value;
      }
      while (buffer.size() < content_length) {
        if (!readMore(fd, buffer)) return (void)::close(fd);
      }
      req.body = buffer.substr(0, content_length);
      buffer.erase(0, content_length);
      const bool metrics = req.target == "/metrics";
      std::vector<Part> script;
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(req);
        if (!metrics) script = script_;
      }
      if (!script.empty()) {
        for (const Part& part : script) {
          if (::write(fd, part.bytes.data(), part.bytes.size()) < 0) return (void)::close(fd);
          std::this_thread::sleep_for(part.pause);
          if (part.close) return (void)::close(fd);
        }
        continue;
      }
      const std::string& body = metrics ? std::string() : body_;
      const std::string response = "HTTP/1.1 200 OK\r\nContent-Type: " +
                                   std::string(metrics ? "text/plain" : "application/json") +
                                   "\r\nContent-Length: " + std::to_string(body.size()) +
                                   "\r\n\r\n" + body;
      if (::write(fd, response.data(), response.size()) < 0) return (void)::close(fd);
    }
  }

  std::string body_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> connections_;  // guarded by mutex_
  std::vector<Request> requests_;         // guarded by mutex_
  std::vector<Part> script_;              // guarded by mutex_
};

}  // namespace switchyard::testing
