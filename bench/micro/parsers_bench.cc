// Micro-benchmarks for the request-path parsers: ns/op and allocs/op.
// Run: build/release/micro_bench --benchmark_filter='Inspect|Prometheus|Usage|Chunked'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <boost/beast/http.hpp>
#include <string>
#include <vector>

#include "alloc_counter.h"
#include "api/request_inspector.h"
#include "api/usage_scanner.h"
#include "fleet/engine_signals.h"
#include "fleet/prometheus_text.h"
#include "gateway/answer_parser.h"
#include "http/chunked_body.h"

namespace switchyard {
namespace {

// A chat body of about `target` bytes: a short system message and a user message padded out.
std::string chatBody(size_t target) {
  std::string head =
      R"({"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"system",)"
      R"("content":"You are a helpful assistant."},{"role":"user","content":")";
  std::string tail = R"("}],"stream":true,"stream_options":{"include_usage":true},)"
                     R"("max_tokens":256,"user":"u-1234"})";
  std::string filler;
  while (head.size() + filler.size() + tail.size() < target) filler += "Tell me a story. ";
  filler.resize(target > head.size() + tail.size() ? target - head.size() - tail.size() : 0);
  return head + filler + tail;
}

void inspectBody(benchmark::State& state, const std::string& body) {
  std::string buffer = body + std::string(api::RequestInspector::kRequiredPadding, ' ');
  api::RequestInspector inspector;
  api::InspectedRequest out;
  // Warm-up: the parser sizes its buffers on first use; the steady state is what we measure.
  if (inspector.inspect(buffer.data(), body.size(), buffer.size(), out) != api::InspectError::kNone) {
    state.SkipWithError("inspect failed");
    return;
  }
  bench::AllocCounter allocs;
  for (auto _ : state) {
    api::InspectError error = inspector.inspect(buffer.data(), body.size(), buffer.size(), out);
    benchmark::DoNotOptimize(error);
    benchmark::DoNotOptimize(out);
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}

void BM_InspectChat256(benchmark::State& state) { inspectBody(state, chatBody(256)); }
void BM_InspectChat4K(benchmark::State& state) { inspectBody(state, chatBody(4096)); }
BENCHMARK(BM_InspectChat256);
BENCHMARK(BM_InspectChat4K);

// About 60 lines shaped like a vLLM /metrics page: gauges, counters and histogram buckets.
std::string vllmExposition() {
  const std::string labels = R"({engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct")";
  std::string text;
  auto gauge = [&](const std::string& name, const std::string& value) {
    text += "# HELP " + name + " Engine metric.\n# TYPE " + name + " gauge\n";
    text += name + labels + "} " + value + "\n";
  };
  gauge("vllm:num_requests_running", "12.0");
  gauge("vllm:num_requests_waiting", "3.0");
  gauge("vllm:kv_cache_usage_perc", "0.4375");
  gauge("vllm:gpu_cache_usage_perc", "0.4375");
  gauge("vllm:num_preemptions_total", "0.0");
  gauge("vllm:prompt_tokens_total", "1.234567e+06");
  gauge("vllm:generation_tokens_total", "8.76543e+05");
  text += "# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency.\n";
  text += "# TYPE vllm:e2e_request_latency_seconds histogram\n";
  for (const char* le : {"0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0",
                         "20.0", "30.0", "40.0", "50.0", "60.0", "120.0", "240.0", "+Inf"}) {
    text += "vllm:e2e_request_latency_seconds_bucket" + labels + ",le=\"" + le + "\"} 42.0\n";
  }
  text += "vllm:e2e_request_latency_seconds_count" + labels + "} 42.0\n";
  text += "vllm:e2e_request_latency_seconds_sum" + labels + "} 97.25\n";
  text += "# TYPE vllm:time_to_first_token_seconds histogram\n";
  for (const char* le : {"0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25",
                         "0.5", "0.75", "1.0", "2.5", "5.0", "7.5", "10.0", "+Inf"}) {
    text += "vllm:time_to_first_token_seconds_bucket" + labels + ",le=\"" + le + "\"} 40.0\n";
  }
  return text;
}

void BM_PrometheusVllmSignals(benchmark::State& state) {
  std::string text = vllmExposition();
  bench::AllocCounter allocs;
  for (auto _ : state) {
    fleet::EngineSignals signals = fleet::parseEngineSignals(text);
    benchmark::DoNotOptimize(signals);
  }
  allocs.report(state);
  state.counters["lines"] = static_cast<double>(std::count(text.begin(), text.end(), '\n'));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_PrometheusVllmSignals);

// A 50-event chat stream as vLLM sends it, one TCP-read-sized piece per event.
std::vector<std::string> chatStreamPieces() {
  std::vector<std::string> pieces;
  const std::string prefix =
      R"(data: {"id":"chatcmpl-8f3a2b","object":"chat.completion.chunk","created":1718000000,)"
      R"("model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{)";
  pieces.push_back(prefix + R"("role":"assistant","content":""},"logprobs":null,)"
                            R"("finish_reason":null}]})" "\n\n");
  for (int i = 0; i < 47; ++i) {
    pieces.push_back(prefix + R"("content":" word)" + std::to_string(i) +
                     R"("},"logprobs":null,"finish_reason":null}]})" "\n\n");
  }
  pieces.push_back(prefix + R"("content":""},"logprobs":null,"finish_reason":"stop"}]})" "\n\n");
  pieces.push_back(
      R"(data: {"id":"chatcmpl-8f3a2b","object":"chat.completion.chunk","created":1718000000,)"
      R"("model":"meta-llama/Llama-3.1-8B-Instruct","choices":[],"usage":{"prompt_tokens":42,)"
      R"("total_tokens":89,"completion_tokens":47}})" "\n\ndata: [DONE]\n\n");
  return pieces;
}

void BM_UsageScan50Events(benchmark::State& state) {
  std::vector<std::string> pieces = chatStreamPieces();
  size_t bytes = 0;
  for (const auto& p : pieces) bytes += p.size();
  bench::AllocCounter allocs;
  for (auto _ : state) {
    api::UsageScanner scanner(api::UsageScanner::Mode::kSse);
    for (const auto& p : pieces) scanner.feed(p);
    if (scanner.completionTokens() != 47 || !scanner.sawDone()) {
      state.SkipWithError("wrong scan result");
      break;
    }
    benchmark::DoNotOptimize(scanner);
  }
  allocs.report(state);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_UsageScan50Events);

// A sized chat answer read in one piece (the backend of bench/e2e/proxy_overhead.sh's small
// shape, and a longer one with a few hundred bytes of text before its usage).
void BM_UsageScanJsonAnswer(benchmark::State& state) {
  const std::string text(static_cast<size_t>(state.range(0)), 'a');
  const std::string answer =
      R"({"id":"cmpl-1","object":"chat.completion","model":"llama2-7b","choices":[{"message":)"
      R"({"role":"assistant","content":")" + text + R"("}}],"usage":{"prompt_tokens":13,)"
      R"("completion_tokens":1,"total_tokens":14}})";
  for (auto _ : state) {
    api::UsageScanner scanner(api::UsageScanner::Mode::kJson);
    scanner.feed(answer);
    if (scanner.completionTokens() != 1 || scanner.promptTokens() != 13) {
      state.SkipWithError("wrong scan result");
      break;
    }
    benchmark::DoNotOptimize(scanner);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * answer.size()));
}
BENCHMARK(BM_UsageScanJsonAnswer)->Arg(2)->Arg(600);

// The 50 events of chatStreamPieces() as a replica sends them: a chunk each, one per read.
std::vector<std::string> chunkedStreamReads() {
  std::vector<std::string> reads;
  for (const std::string& event : chatStreamPieces()) {
    char size[16];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", event.size());
    reads.push_back(std::string(size, static_cast<size_t>(n)) + event + "\r\n");
  }
  reads.back() += "0\r\n\r\n";
  return reads;
}

// The relay's chunk framing, each read's pieces noted in place: the decoder the relay uses for
// event streams, and Beast's parser (through AnswerParser's views) that it replaced.
void BM_ChunkedStream50Events(benchmark::State& state) {
  const std::vector<std::string> reads = chunkedStreamReads();
  const bool beast = state.range(0) == 1;
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  size_t body = 0;
  for (auto _ : state) {
    std::string fields;
    gateway::AnswerParser parser(fields);
    boost::beast::error_code ec;
    parser.put(boost::asio::buffer(head), ec);
    http::ChunkedBody chunks(uint64_t{1} << 30);
    body = 0;
    std::string buffered;  // what a read leaves unparsed stays for the next, as in the relay
    for (const std::string& read : reads) {
      buffered += read;
      parser.setBodyViews();
      size_t at = 0;
      if (beast) {
        while (at < buffered.size() && !parser.is_done()) {
          const size_t used =
              parser.put(boost::asio::buffer(buffered.data() + at, buffered.size() - at), ec);
          at += used;
          if (ec || used == 0) break;
        }
      } else {
        const char* p = buffered.data();
        std::string_view piece;
        http::ChunkedBody::Step step;
        do {
          step = chunks.next(p, buffered.data() + buffered.size(), piece);
          if (!piece.empty()) parser.addView(piece);
        } while (step == http::ChunkedBody::Step::kPiece);
        at = static_cast<size_t>(p - buffered.data());
      }
      body += parser.viewBytes();
      buffered.erase(0, at);
    }
    benchmark::DoNotOptimize(body);
  }
  state.SetLabel(beast ? "beast" : "chunked_body");
  state.counters["body_bytes"] = static_cast<double>(body);
}
BENCHMARK(BM_ChunkedStream50Events)->Arg(0)->Arg(1);

}  // namespace
}  // namespace switchyard
