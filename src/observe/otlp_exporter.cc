#include "observe/otlp_exporter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "api/openai_error.h"
#include "fleet/fleet_registry.h"
#include "observe/metrics.h"
#include "observe/observer.h"

namespace switchyard::observe {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

void appendString(std::string& out, std::string_view s) {
  out.push_back('"');
  api::appendJsonEscaped(out, s);
  out.push_back('"');
}

class Attributes {
 public:
  explicit Attributes(std::string& out) : out_(out) { out_.append(R"("attributes":[)"); }
  ~Attributes() { out_.push_back(']'); }
  void str(std::string_view key, std::string_view value) {
    open(key);
    out_.append(R"({"stringValue":)");
    appendString(out_, value);
    out_.append("}}");
  }
  void integer(std::string_view key, int64_t value) {
    open(key);
    fmt::format_to(std::back_inserter(out_), R"({{"intValue":"{}"}}}})", value);
  }
  void real(std::string_view key, double value) {
    open(key);
    fmt::format_to(std::back_inserter(out_), R"({{"doubleValue":{}}}}})", value);
  }

 private:
  void open(std::string_view key) {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_.append(R"({"key":)");
    appendString(out_, key);
    out_.append(R"(,"value":)");
  }
  std::string& out_;
  bool first_ = true;
};

std::string_view spanName(SpanKind kind) {
  switch (kind) {
    case SpanKind::kRequest:
      return "gateway.request";
    case SpanKind::kSelect:
      return "process.select_target_pod";
    case SpanKind::kInference:
      return "llm.inference";
  }
  return "unknown";
}

// OTLP SpanKind: 1 internal, 2 server, 3 client.
int otlpKind(SpanKind kind) {
  return kind == SpanKind::kRequest ? 2 : kind == SpanKind::kSelect ? 1 : 3;
}

}  // namespace

std::string renderOtlpJson(const std::vector<SpanRecord>& spans, const MetricsRegistry& names) {
  std::string out;
  out.reserve(spans.size() * 700 + 256);
  out.append(R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name",)"
             R"("value":{"stringValue":"switchyard"}}]},"scopeSpans":[{"scope":{"name":)"
             R"("switchyard"},"spans":[)");
  for (size_t i = 0; i < spans.size(); ++i) {
    const SpanRecord& s = spans[i];
    if (i) out.push_back(',');
    out.append(R"({"traceId":")");
    appendHex(out, s.trace_id.bytes.data(), 16);
    out.append(R"(","spanId":")");
    appendHex64(out, s.span_id);
    out.push_back('"');
    if (s.parent_span_id != 0) {
      out.append(R"(,"parentSpanId":")");
      appendHex64(out, s.parent_span_id);
      out.push_back('"');
    }
    out.append(R"(,"name":)");
    appendString(out, spanName(s.kind));
    fmt::format_to(std::back_inserter(out),
                   R"(,"kind":{},"startTimeUnixNano":"{}","endTimeUnixNano":"{}",)",
                   otlpKind(s.kind), s.start_unix_ns, s.end_unix_ns);
    {
      Attributes a(out);
      a.str("request.id", s.request_id);
      if (s.model_slot != UINT32_MAX) a.str("gen_ai.request.model", names.modelName(s.model_slot));
      const std::string replica =
          s.replica_slot != UINT32_MAX ? names.replicaName(s.replica_slot).second : "";
      if (s.strategy[0]) a.str("routing.strategy", s.strategy);
      switch (s.kind) {
        case SpanKind::kRequest:
          if (s.status) a.integer("http.response.status_code", s.status);
          if (s.key_name[0]) a.str("switchyard.api_key.name", s.key_name);
          if (!replica.empty()) a.str("target_pod", replica);
          if (s.client_cancelled != 0) {
            a.str("switchyard.client_cancelled",
                  cancelStageName(static_cast<CancelStage>(s.client_cancelled)));
          }
          break;
        case SpanKind::kSelect:
          a.integer("routing.candidate_count", s.candidates);
          a.integer("routing.ready_replica_count", s.ready);
          a.str("routing.selected_pod", replica.empty() ? "none" : replica);
          a.real("routing.time_ms", static_cast<double>(s.routing_ns) / 1e6);
          break;
        case SpanKind::kInference:
          a.str("server.address", replica);
          if (s.status) a.integer("http.response.status_code", s.status);
          if (s.first_chunk_ns >= 0) {
            a.real("llm.time_to_first_chunk_ms", static_cast<double>(s.first_chunk_ns) / 1e6);
          }
          if (s.streaming_ns >= 0) {
            a.real("llm.streaming_to_last_chunk_ms", static_cast<double>(s.streaming_ns) / 1e6);
          }
          break;
      }
      if (s.kind != SpanKind::kSelect) {
        if (s.input_tokens >= 0) a.integer("gen_ai.usage.input_tokens", s.input_tokens);
        if (s.output_tokens >= 0) a.integer("gen_ai.usage.output_tokens", s.output_tokens);
      }
    }
    fmt::format_to(std::back_inserter(out), R"(,"status":{{"code":{}}}}})", s.error ? 2 : 0);
  }
  out.append("]}]}]}");
  return out;
}

struct OtlpExporter::Impl : std::enable_shared_from_this<Impl> {
  Impl(asio::io_context& io_in, const TracingConfig& config_in, std::vector<SpanQueue*> queues_in,
       const MetricsRegistry& names_in)
      : io(io_in), config(config_in), queues(std::move(queues_in)), names(names_in), timer(io_in) {
    std::string_view endpoint = config.otlp_endpoint;
    if (endpoint.starts_with("http://")) endpoint.remove_prefix(7);
    const size_t slash = endpoint.find('/');
    std::string_view authority = endpoint.substr(0, slash);
    std::string prefix = slash == std::string_view::npos ? "" : std::string(endpoint.substr(slash));
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    target = prefix + "/v1/traces";
    host_header = std::string(authority);
    if (!fleet::splitHostPort(authority, host, port)) {
      spdlog::error("tracing: otlp_endpoint {} is not http://HOST:PORT", config.otlp_endpoint);
      valid = false;
    }
  }

  asio::io_context& io;
  TracingConfig config;
  std::vector<SpanQueue*> queues;
  const MetricsRegistry& names;
  asio::steady_timer timer;
  std::string host;
  uint16_t port = 0;
  std::string host_header;
  std::string target;
  bool valid = true;
  bool stopping = false;
  size_t cursor = 0;  // queue to start draining from, so no worker starves the others
  ExporterStats stats;
  int64_t last_failure_log = 0;
  std::unique_ptr<beast::tcp_stream> stream;

  size_t drain(std::vector<SpanRecord>& batch) {
    batch.clear();
    SpanRecord span;
    for (size_t n = 0; n < queues.size() && batch.size() < config.max_batch; ++n) {
      SpanQueue& q = *queues[(cursor + n) % queues.size()];
      while (batch.size() < config.max_batch && q.pop(span)) batch.push_back(span);
    }
    cursor = (cursor + 1) % std::max<size_t>(1, queues.size());
    return batch.size();
  }

  asio::awaitable<bool> post(const std::string& body) {
    boost::system::error_code ec;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = stream != nullptr;
      if (!stream) {
        stream = std::make_unique<beast::tcp_stream>(io);
        stream->expires_after(std::chrono::nanoseconds(config.export_timeout));
        const auto address = asio::ip::make_address(host, ec);
        if (ec) {
          tcp::resolver resolver(io);
          auto [rec, results] = co_await resolver.async_resolve(host, std::to_string(port), kTuple);
          if (rec) {
            stream.reset();
            co_return false;
          }
          std::tie(ec, std::ignore) = co_await stream->async_connect(results, kTuple);
        } else {
          std::tie(ec) = co_await stream->async_connect(tcp::endpoint(address, port), kTuple);
        }
        if (ec) {
          stream.reset();
          co_return false;
        }
      }
      http::request<http::string_body> req{http::verb::post, target, 11};
      req.set(http::field::host, host_header);
      req.set(http::field::content_type, "application/json");
      req.keep_alive(true);
      req.body() = body;
      req.prepare_payload();
      stream->expires_after(std::chrono::nanoseconds(config.export_timeout));
      auto [wec, wn] = co_await http::async_write(*stream, req, kTuple);
      beast::flat_buffer buffer;
      http::response<http::string_body> res;
      if (!wec) std::tie(ec, std::ignore) = co_await http::async_read(*stream, buffer, res, kTuple);
      if (wec || ec) {
        stream.reset();
        if (reused && attempt == 0) continue;  // the collector closed an idle connection
        co_return false;
      }
      if (!res.keep_alive()) stream.reset();
      co_return res.result_int() / 100 == 2;
    }
    co_return false;
  }

  asio::awaitable<void> loop() {
    auto self = shared_from_this();
    std::vector<SpanRecord> batch;
    batch.reserve(config.max_batch);
    while (!stopping) {
      timer.expires_after(std::chrono::nanoseconds(config.export_interval));
      auto [ec] = co_await timer.async_wait(kTuple);
      if (ec || stopping) break;
      // Keep posting while full batches come out, so a burst does not wait several intervals.
      while (!stopping && drain(batch) > 0) {
        const size_t n = batch.size();
        const bool ok = valid && co_await post(renderOtlpJson(batch, names));
        if (ok) {
          stats.exported += n;
        } else {
          stats.dropped += n;
          ++stats.failures;
          const int64_t now = SteadyClock::instance().now();
          if (now - last_failure_log > 10 * kNsPerSec) {  // at most one line per 10 s
            last_failure_log = now;
            spdlog::warn("tracing: export to {} failed; dropped {} spans (counted in "
                         "switchyard_trace_spans_dropped_total)",
                         config.otlp_endpoint, n);
          }
          break;
        }
        if (n < config.max_batch) break;
      }
    }
  }
};

OtlpExporter::OtlpExporter(asio::io_context& io, const TracingConfig& config,
                           std::vector<SpanQueue*> queues, const MetricsRegistry& names)
    : impl_(std::make_shared<Impl>(io, config, std::move(queues), names)) {}

OtlpExporter::~OtlpExporter() { stop(); }

void OtlpExporter::start() { asio::co_spawn(impl_->io, impl_->loop(), asio::detached); }

void OtlpExporter::stop() {
  impl_->stopping = true;
  impl_->timer.cancel();
  if (impl_->stream) {
    boost::system::error_code ignored;
    impl_->stream->socket().close(ignored);
  }
}

ExporterStats OtlpExporter::stats() const { return impl_->stats; }

}  // namespace switchyard::observe
