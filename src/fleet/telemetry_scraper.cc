#include "fleet/telemetry_scraper.h"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace switchyard::fleet {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct TelemetryScraper::Loop {
  std::shared_ptr<ReplicaState> replica;
  bool stopped = false;
  asio::steady_timer timer;
  std::optional<beast::tcp_stream> stream;
  explicit Loop(asio::io_context& io, std::shared_ptr<ReplicaState> r)
      : replica(std::move(r)), timer(io) {}
};

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr uint64_t kMaxMetricsBytes = 8u << 20;

// One scrape; returns the body or an empty optional on any failure.
asio::awaitable<std::optional<std::string>> scrapeOnce(asio::io_context& io,
                                                       std::optional<beast::tcp_stream>& stream,
                                                       const ReplicaState& replica,
                                                       std::chrono::nanoseconds timeout) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = stream.has_value();
    if (!stream) {
      stream.emplace(io);
      stream->expires_after(timeout);
      boost::system::error_code ec;
      auto address = asio::ip::make_address(replica.host(), ec);
      if (!ec) {
        std::tie(ec) =
            co_await stream->async_connect(tcp::endpoint(address, replica.port()), kTuple);
      } else {
        tcp::resolver resolver(io);
        auto [rec, results] = co_await resolver.async_resolve(
            replica.host(), std::to_string(replica.port()), kTuple);
        ec = rec;
        if (!ec) std::tie(ec, std::ignore) = co_await stream->async_connect(results, kTuple);
      }
      if (ec) {
        stream.reset();
        co_return std::nullopt;
      }
    }
    http::request<http::empty_body> req{http::verb::get, "/metrics", 11};
    req.set(http::field::host, replica.name());
    req.set(http::field::accept, "text/plain");
    stream->expires_after(timeout);
    auto [wec, wn] = co_await http::async_write(*stream, req, kTuple);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxMetricsBytes);
    boost::system::error_code ec = wec;
    if (!ec) std::tie(ec, std::ignore) = co_await http::async_read(*stream, buffer, parser, kTuple);
    if (ec) {
      stream.reset();
      if (reused) continue;  // the replica closed our idle keep-alive connection
      co_return std::nullopt;
    }
    auto& res = parser.get();
    if (!res.keep_alive()) stream.reset();
    if (res.result() != http::status::ok) co_return std::nullopt;
    co_return std::move(res.body());
  }
  co_return std::nullopt;
}

}  // namespace

TelemetryScraper::~TelemetryScraper() { stopAll(); }

void TelemetryScraper::stopAll() {
  for (auto& [name, loop] : loops_) {
    loop->stopped = true;
    loop->timer.cancel();
  }
  loops_.clear();
}

void TelemetryScraper::sync(const std::vector<std::shared_ptr<ReplicaState>>& replicas) {
  std::map<std::string, std::shared_ptr<Loop>> next;
  for (const auto& replica : replicas) {
    auto it = loops_.find(replica->name());
    if (it != loops_.end() && it->second->replica == replica) {
      next.emplace(replica->name(), it->second);
      loops_.erase(it);
    } else {
      start(replica);
      next.emplace(replica->name(), loops_[replica->name()]);
      loops_.erase(replica->name());
    }
  }
  for (auto& [name, loop] : loops_) {  // replicas that left the fleet
    loop->stopped = true;
    loop->timer.cancel();
  }
  loops_ = std::move(next);
}

void TelemetryScraper::start(const std::shared_ptr<ReplicaState>& replica) {
  auto loop = std::make_shared<Loop>(io_, replica);
  loops_[replica->name()] = loop;
  asio::co_spawn(
      io_,
      [this, loop]() -> asio::awaitable<void> {
        while (!loop->stopped) {
          const TimeNs started = clock_.now();
          const auto timeout = std::chrono::nanoseconds(std::max<TimeNs>(interval_, kNsPerSec));
          std::optional<std::string> body =
              co_await scrapeOnce(io_, loop->stream, *loop->replica, timeout);
          if (loop->stopped) break;
          ++scrapes_total_;
          if (body) {
            loop->replica->storeSignals(parseEngineSignals(*body), clock_.now());
          } else {
            ++scrape_failures_total_;
            loop->replica->markScrapeFailed(clock_.now());
          }
          const TimeNs elapsed = clock_.now() - started;
          loop->timer.expires_after(std::chrono::nanoseconds(std::max<TimeNs>(
              interval_ - elapsed, interval_ / 10)));
          auto [ec] = co_await loop->timer.async_wait(kTuple);
          (void)ec;
        }
      },
      asio::detached);
}

}  // namespace switchyard::fleet
