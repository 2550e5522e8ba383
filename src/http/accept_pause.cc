#include "http/accept_pause.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace switchyard::http {

namespace asio = boost::asio;

asio::awaitable<bool> AcceptPause::after(asio::ip::tcp::acceptor& acceptor,
                                         boost::system::error_code ec) {
  if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return false;
  const auto now = std::chrono::steady_clock::now();
  ++unlogged_;
  if (!logged_ || now - logged_at_ >= kLogInterval) {
    if (!logged_) {
      spdlog::warn("{}: accept failed: {}; retrying every {} ms", listener_, ec.message(),
                   kPause.count());
    } else {
      spdlog::warn("{}: accept failed {} more times since the last report: {}; retrying",
                   listener_, unlogged_, ec.message());
    }
    logged_ = true;
    logged_at_ = now;
    unlogged_ = 0;
  }
  asio::steady_timer pause(co_await asio::this_coro::executor, kPause);
  co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return true;
}

}  // namespace switchyard::http
