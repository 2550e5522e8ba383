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
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

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

int uniformInt(Rng& rng, int lo, int hi) {
  if (hi <= lo) return lo;
  return lo + static_cast<int>(rng.below(static_cast<uint32_t>(hi - lo + 1)));
}

// Draws the record's shape from the mix (nothing is drawn without one, keeping the sequence of
// earlier versions for a seed).
void drawShape(const LoadSpec& spec, Rng& rng, RequestRecord& record) {
  record.prompt_words = spec.prompt_words;
  record.max_tokens = spec.max_tokens;
  if (spec.mix.empty()) return;
  double total = 0;
  for (const RequestClass& c : spec.mix) total += std::max(0.0, c.weight);
  double pick = rng.uniform01() * total;
  size_t chosen = spec.mix.size() - 1;
  for (size_t i = 0; i < spec.mix.size(); ++i) {
    pick -= std::max(0.0, spec.mix[i].weight);
    if (pick < 0) {
      chosen = i;
      break;
    }
  }
  const RequestClass& c = spec.mix[chosen];
  record.request_class = static_cast<int>(chosen);
  record.prompt_words = uniformInt(rng, c.prompt_words_min, c.prompt_words_max);
  record.max_tokens = uniformInt(rng, c.max_tokens_min, c.max_tokens_max);
}

std::string requestBody(const LoadSpec& spec, const RequestRecord& shape, Rng& rng) {
  std::string prompt;
  for (int i = 0; i < shape.prompt_words; ++i) {
    if (i) prompt.push_back(' ');
    prompt += kWords[rng.below(std::size(kWords))];
  }
  return fmt::format(
      R"({{"model":"{}","messages":[{{"role":"user","content":"{}"}}],"max_tokens":{},)"
      R"("stream":{}{}{}}})",
      spec.model, prompt, shape.max_tokens, spec.stream ? "true" : "false",
      spec.stream ? R"(,"stream_options":{"include_usage":true})" : "",
      spec.ignore_eos ? R"(,"ignore_eos":true)" : "");
}

class Runner {
 public:
  explicit Runner(const LoadSpec& spec) : spec_(spec), rng_(spec.seed), timer_(io_) {
    report_.records.resize(static_cast<size_t>(spec.requests));
    bodies_.reserve(report_.records.size());
    for (RequestRecord& record : report_.records) {
      drawShape(spec, rng_, record);
      bodies_.push_back(requestBody(spec, record, rng_));
    }
  }

  LoadReport run() {
    start_ = SteadyClock::instance().now();
    if (spec_.rate > 0 || !spec_.send_at.empty()) {
      asio::co_spawn(io_, openLoop(), asio::detached);
    } else {
      const int clients = std::max(1, spec_.concurrency);
      for (int c = 0; c < clients; ++c) {
        asio::co_spawn(io_, closedLoopClient(spec_.ramp * c / clients), asio::detached);
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
      if (i < spec_.send_at.size()) {
        next = spec_.send_at[i];
      } else if (!spec_.send_at.empty()) {
        break;
      } else {
        next += static_cast<TimeNs>(-std::log(1.0 - rng_.uniform01()) / spec_.rate * kNsPerSec);
      }
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

  asio::awaitable<void> closedLoopClient(TimeNs delay) {
    if (delay > 0) {
      asio::steady_timer timer(io_, std::chrono::nanoseconds(delay));
      co_await timer.async_wait(kTuple);
    }
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
    if (record.request_class >= 0 && !spec_.mix[record.request_class].gpu.empty()) {
      req.set("x-switchyard-gpu", spec_.mix[record.request_class].gpu);
    }
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
    record.prompt_tokens = scanner.promptTokens();
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

// One SLO limit in ms against a duration in ns; 0 disables the check.
bool within(double limit_ms, double ns) { return limit_ms <= 0 || ns <= limit_ms * 1e6; }

}  // namespace

std::vector<RequestClass> defaultMix() {
  return {{"chat", 0.8, 20, 120, 64, 192}, {"summarise", 0.2, 400, 800, 16, 48}};
}

std::optional<std::vector<RequestClass>> parseMix(const std::string& text) {
  std::vector<RequestClass> mix;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    RequestClass c;
    char name[64] = {};
    int used = 0;
    const std::string part = text.substr(start, end - start);
    if (std::sscanf(part.c_str(), "%63[^:]:%lf:%d-%d:%d-%d%n", name, &c.weight,
                    &c.prompt_words_min, &c.prompt_words_max, &c.max_tokens_min,
                    &c.max_tokens_max, &used) != 6 ||
        used != static_cast<int>(part.size()) || c.weight < 0 || c.prompt_words_min < 1 ||
        c.prompt_words_max < c.prompt_words_min || c.max_tokens_min < 1 ||
        c.max_tokens_max < c.max_tokens_min) {
      return std::nullopt;
    }
    c.name = name;
    mix.push_back(std::move(c));
    start = end + 1;
  }
  if (mix.empty()) return std::nullopt;
  return mix;
}

double tpotNs(const RequestRecord& r) {
  if (r.status != 200 || !r.error.empty() || r.first_byte < 0 || r.done < 0 ||
      r.output_tokens < 2) {
    return std::nan("");
  }
  return static_cast<double>(r.done - r.first_byte) / static_cast<double>(r.output_tokens - 1);
}

bool meetsSlo(const RequestRecord& r, const Slo& slo) {
  if (r.status != 200 || !r.error.empty() || r.done < 0) return false;
  const double tpot = tpotNs(r);
  // A one-token answer has no inter-token time: it meets any TPOT limit.
  if (!std::isnan(tpot) && !within(slo.tpot_ms, tpot)) return false;
  if (slo.ttft_ms > 0 && (r.first_byte < 0 || !within(slo.ttft_ms, double(r.first_byte)))) {
    return false;
  }
  return within(slo.e2e_ms, static_cast<double>(r.done));
}

std::vector<GroupStats> summarize(const LoadReport& report,
                                  const std::map<std::string, std::string>& labels,
                                  const Slo& slo, TimeNs from, TimeNs to) {
  struct Acc {
    GroupStats stats;
    std::vector<double> ttft, tpot, e2e;
  };
  std::map<std::string, Acc> groups;
  Acc total;
  total.stats.label = "total";
  TimeNs last_sent = 0;
  for (const RequestRecord& r : report.records) last_sent = std::max(last_sent, r.sent);
  const TimeNs end = to > 0 ? to : last_sent + 1;
  for (const RequestRecord& r : report.records) {
    if (r.sent < from || r.sent >= end) continue;
    std::string key = r.target_pod.empty() ? std::string("(none)") : r.target_pod;
    if (auto it = labels.find(key); it != labels.end()) key = it->second;
    Acc& group = groups[key];
    group.stats.label = key;
    for (Acc* acc : {&group, &total}) {
      ++acc->stats.requests;
      if (r.status != 200 || !r.error.empty() || r.done < 0) continue;
      ++acc->stats.ok;
      acc->stats.good += meetsSlo(r, slo);
      acc->stats.output_tokens += r.output_tokens;
      if (r.first_byte >= 0) acc->ttft.push_back(static_cast<double>(r.first_byte) / 1e6);
      if (const double tpot = tpotNs(r); !std::isnan(tpot)) acc->tpot.push_back(tpot / 1e6);
      acc->e2e.push_back(static_cast<double>(r.done) / 1e6);
    }
  }
  const double seconds = static_cast<double>(end - from) / 1e9;
  std::vector<GroupStats> out;
  auto finish = [&](Acc& acc) {
    GroupStats& s = acc.stats;
    s.qps = seconds > 0 ? s.requests / seconds : 0;
    s.share = total.stats.requests ? double(s.requests) / total.stats.requests : 0;
    s.ttft_p50_ms = percentile(acc.ttft, 50);
    s.ttft_p99_ms = percentile(acc.ttft, 99);
    s.tpot_p50_ms = percentile(acc.tpot, 50);
    s.tpot_p99_ms = percentile(acc.tpot, 99);
    s.e2e_p50_ms = percentile(acc.e2e, 50);
    s.e2e_p99_ms = percentile(acc.e2e, 99);
    out.push_back(s);
  };
  for (auto& [key, acc] : groups) finish(acc);
  finish(total);
  return out;
}

std::optional<std::string> httpGet(const std::string& host, uint16_t port,
                                   const std::string& path, TimeNs timeout) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::nanoseconds(timeout));
  boost::system::error_code ec;
  std::optional<std::string> result;
  stream.async_connect(tcp::endpoint(asio::ip::make_address(host, ec), port),
                       [&](boost::system::error_code connect_ec) {
    if (connect_ec) return;
    auto req = std::make_shared<http::request<http::empty_body>>(http::verb::get, path, 11);
    req->set(http::field::host, host);
    http::async_write(stream, *req, [&, req](boost::system::error_code write_ec, size_t) {
      if (write_ec) return;
      auto buffer = std::make_shared<beast::flat_buffer>();
      auto res = std::make_shared<http::response<http::string_body>>();
      http::async_read(stream, *buffer, *res,
                       [&, buffer, res](boost::system::error_code read_ec, size_t) {
        if (!read_ec && res->result_int() == 200) result = std::move(res->body());
      });
    });
  });
  if (ec) return std::nullopt;
  io.run();
  return result;
}

std::optional<double> metricSum(const std::string& text, const std::string& name) {
  std::optional<double> sum;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    if (!line.starts_with(name) || line.size() <= name.size()) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    const size_t space = line.rfind(' ');
    const double value = std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
    sum = sum.value_or(0) + value;
  }
  return sum;
}

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
