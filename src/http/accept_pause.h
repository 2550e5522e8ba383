// What an accept loop does after a failed accept, mostly EMFILE (out of file descriptors): the
// connections waiting in the backlog keep the listener readable, so retrying at once would spin
// on a core. The loop pauses instead, serving what it has, and says so in the log without
// flooding it: the first failure, then at most one line per interval with the count since.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <string>

namespace switchyard::http {

class AcceptPause {
 public:
  static constexpr std::chrono::milliseconds kPause{50};
  static constexpr std::chrono::seconds kLogInterval{10};

  explicit AcceptPause(std::string listener) : listener_(std::move(listener)) {}

  // After `ec` from async_accept on `acceptor`: false when the loop should end (the acceptor was
  // closed or the accept cancelled); otherwise logs as above, waits kPause and returns true.
  boost::asio::awaitable<bool> after(boost::asio::ip::tcp::acceptor& acceptor,
                                     boost::system::error_code ec);

 private:
  std::string listener_;
  std::chrono::steady_clock::time_point logged_at_{};
  int64_t unlogged_ = 0;  // failures since the last line
  bool logged_ = false;
};

}  // namespace switchyard::http
