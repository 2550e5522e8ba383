#include "loadgen/load_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cmath>
#include <map>

#include "api/usage_scanner.h"
#include "core/rng.h"

namespace switchyard::loadgen {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

const char* const kWords[] = {"routing", "gpu",    "replica", "token",  "latency", "cache",
                              "stream",  "model",  "batch",   "queue",  "kernel",  "tensor",
                              "prefill", "decode", "gateway", "tenant"};

std::string requestBody(const LoadSpec& spec, Rng& rng) {
  std::string prompt;
  for (int i = 0; i < spec.prompt_words; ++i) {
    if (i) prompt.push_back(' ');
    prompt += kWords[rng.below(std::size(kWords))];
  }
  return fmt::format(
      R"({{"model":"{}","messages":[{{"role":"user","content":"{}"}}],"max_tokens":{},)"
      R"("stream":{}{}}})",
      spec.model, prompt, spec.max_tokens, spec.stream ? "true" : "false",
      spec.stream ? R"(,"stream_options":{"include_usage":true})" : "");
}

class Runner {
 public:
  explicit Runner(const LoadSpec& spec) : spec_(spec), rng_(spec.seed), timer_(io_) {
    report_.records.resize(static_cast<size_t>(spec.requests));
    bodies_.reserve(report_.records.size());
    for (size_t i = 0; i < report_.records.size(); ++i) bodies_.push_back(requestBody(spec, rng_));
  }

  LoadReport run() {
    start_ = SteadyClock::instance().now();
    if (spec_.rate > 0) {
      asio::co_spawn(io_, openLoop(), asio::detached);
    } else {
      for (int c = 0; c < std::max(1, spec_.concurrency); ++c) {
        asio::co_spawn(io_, closedLoopClient(), asio::detached);
      }
    }
    io_.run_for(std::chrono::nanoseconds(spec_.deadline));
    report_.wall = SteadyClock::instance().now() - start_;
    return std::move(report_);
  }

 private:
  TimeNs elapsed() const { return SteadyClock::instance().now() - start_; }

  asio::awaitable<void> openLoop() {
    TimeNs next = 0;
    for (size_t i = 0; i < report_.records.size(); ++i) {
      // Exponential inter-arrival gaps: a Poisson process at `rate`.
      next += static_cast<TimeNs>(-std::log(1.0 - rng_.uniform01()) / spec_.rate * kNsPerSec);
      const TimeNs wait = next - elapsed();
      if (wait > 0) {
        timer_.expires_after(std::chrono::nanoseconds(wait));
        co_await timer_.async_wait(kTuple);
      }
      asio::co_spawn(io_, oneShot(i), asio::detached);
    }
  }

  asio::awaitable<void> oneShot(size_t index) {
    std::unique_ptr<beast::tcp_stream> stream;
    co_await send(index, stream);
  }

  asio::awaitable<void> closedLoopClient() {
    std::unique_ptr<beast::tcp_stream> stream;
    while (next_index_ < report_.records.size()) {
      co_await send(next_index_++, stream);
    }
  }

  asio::awaitable<void> send(size_t index, std::unique_ptr<beast::tcp_stream>& stream) {
    RequestRecord& record = report_.records[index];
    record.sent = elapsed();
    if (!stream) {
      stream = std::make_unique<beast::tcp_stream>(io_);
      stream->expires_after(std::chrono::seconds(5));
      auto [ec] = co_await stream->async_connect(
          tcp::endpoint(asio::ip::make_address(spec_.host), spec_.port), kTuple);
      if (ec) {
        record.error = "connect: " + ec.message();
        stream.reset();
        co_return;
      }
    }
    http::request<http::string_body> req{http::verb::post, spec_.path, 11};
    req.set(http::field::host, spec_.host);
    req.set(http::field::content_type, "application/json");
    if (!spec_.strategy.empty()) req.set("routing-strategy", spec_.strategy);
    req.body() = bodies_[index];
    req.prepare_payload();
    stream->expires_after(std::chrono::nanoseconds(spec_.request_timeout));
    auto [wec, wn] = co_await http::async_write(*stream, req, kTuple);
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    boost::system::error_code ec = wec;
    if (!ec) std::tie(ec, std::ignore) = co_await http::async_read_header(*stream, buffer, parser,
                                                                          kTuple);
    if (ec) {
      record.error = "request: " + ec.message();
      stream.reset();
      co_return;
    }
    record.status = static_cast<int>(parser.get().result_int());
    record.target_pod = std::string(parser.get()["target-pod"]);
    const bool sse = parser.get()[http::field::content_type].starts_with("text/event-stream");
    api::UsageScanner scanner(sse ? api::UsageScanner::Mode::kSse : api::UsageScanner::Mode::kJson);
    char piece[16 * 1024];
    while (!parser.is_done()) {
      parser.get().body().data = piece;
      parser.get().body().size = sizeof piece;
      std::tie(ec, std::ignore) = co_await http::async_read_some(*stream, buffer, parser, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      const size_t got = sizeof piece - parser.get().body().size;
      if (got > 0) {
        if (record.first_byte < 0) record.first_byte = elapsed() - record.sent;
        scanner.feed(std::string_view(piece, got));
      }
      if (ec) {
        record.error = "body: " + ec.message();
        stream.reset();
        co_return;
      }
    }
    record.done = elapsed() - record.sent;
    record.output_tokens = std::max<int64_t>(0, scanner.completionTokens());
    if (!parser.keep_alive()) stream.reset();
  }

  const LoadSpec& spec_;
  asio::io_context io_{1};
  Rng rng_;
  asio::steady_timer timer_;
  std::vector<std::string> bodies_;
  LoadReport report_;
  size_t next_index_ = 0;
  TimeNs start_ = 0;
};

std::string millis(double ns) {
  return std::isnan(ns) ? std::string("-") : fmt::format("{:.1f}", ns / 1e6);
}

}  // namespace

double percentile(std::vector<double>& values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, double(values.size()))) - 1;
  return values[index];
}

LoadReport runLoad(const LoadSpec& spec) { return Runner(spec).run(); }

std::string formatReport(const LoadReport& report,
                         const std::map<std::string, std::string>& labels) {
  struct Row {
    int requests = 0;
    int ok = 0;
    int64_t tokens = 0;
    std::vector<double> ttft, e2e;
  };
  std::map<std::string, Row> rows;
  Row total;
  for (const RequestRecord& r : report.records) {
    const std::string key = r.target_pod.empty() ? std::string("(none)") : r.target_pod;
    for (Row* row : {&rows[key], &total}) {
      ++row->requests;
      if (r.status == 200 && r.error.empty()) {
        ++row->ok;
        row->tokens += r.output_tokens;
        if (r.first_byte >= 0) row->ttft.push_back(static_cast<double>(r.first_byte));
        row->e2e.push_back(static_cast<double>(r.done));
      }
    }
  }
  std::string out = fmt::format("{:<22} {:>6} {:>8} {:>6} {:>6} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
                                "target-pod", "label", "requests", "share", "ok", "tokens",
                                "ttft p50ms", "ttft p99ms", "e2e p50ms", "e2e p99ms");
  auto line = [&](const std::string& name, Row& row) {
    const double share = total.requests ? 100.0 * row.requests / total.requests : 0;
    auto label = labels.find(name);
    out += fmt::format("{:<22} {:>6} {:>8} {:>5.1f}% {:>6} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
                       name, label == labels.end() ? "" : label->second, row.requests, share, row.ok, row.tokens, millis(percentile(row.ttft, 50)),
                       millis(percentile(row.ttft, 99)), millis(percentile(row.e2e, 50)),
                       millis(percentile(row.e2e, 99)));
  };
  for (auto& [name, row] : rows) line(name, row);
  line("total", total);
  const double seconds = static_cast<double>(report.wall) / 1e9;
  out += fmt::format("wall {:.2f} s, {:.1f} requests/s, {:.0f} output tokens/s\n", seconds,
                     seconds > 0 ? total.ok / seconds : 0.0,
                     seconds > 0 ? static_cast<double>(total.tokens) / seconds : 0.0);
  return out;
}

}  // namespace switchyard::loadgen
