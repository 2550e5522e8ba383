// Micro-benchmarks for one telemetry scrape: ns/op and allocs/op of the gateway's side.
// Run: build/release/micro_bench --benchmark_filter='Scrape|EngineSignals'
//
// The page is the engine emulator's own /metrics (vLLM names, four histograms), as a replica
// with some load renders it. BM_Scrape* run a real keep-alive HTTP exchange over loopback with a
// server thread that answers from a pre-built buffer (it allocates nothing, so allocs/op is the
// client's); CPU time is the benchmark thread's alone, i.e. the gateway's cost per scrape
// including its syscalls. The *FullParse / *BeastClient variants are the previous way, measured
// in the same run as the baseline.
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "alloc_counter.h"
#include "engine/engine_model.h"
#include "engine/metrics_filter.h"
#include "engine/openai_emulation.h"
#include "fleet/engine_signals.h"
#include "fleet/metrics_target.h"
#include "fleet/prometheus_text.h"
#include "http/control_client.h"
#include "http/scrape_connection.h"

namespace switchyard {
namespace {

std::string emulatorPage() {
  engine::EngineLoad load;
  load.running = 12;
  load.waiting = 1;
  load.kv_usage = 0.37;
  engine::EngineCounters counters;
  counters.prompt_tokens_total = 123456;
  counters.generation_tokens_total = 654321;
  return engine::renderMetrics(engine::Flavor::kVllm, "llama2-7b", load, counters);
}

// The page as an engine honouring the `name[]` filter serves it to the gateway, which asks for
// the families it reads (fleet::engineMetricsTarget): what the gateway parses on every scrape.
std::string filteredEmulatorPage() {
  const std::string_view target = fleet::engineMetricsTarget(true);
  const auto names = engine::requestedSampleNames(target.substr(target.find('?') + 1));
  return engine::filterMetricsPage(emulatorPage(), names);
}

// What parseEngineSignals did before it skipped families by name: every line fully parsed.
fleet::EngineSignals fullParse(std::string_view text) {
  double running = 0, waiting = 0, kv = 0;
  fleet::forEachPrometheusSample(text, [&](const fleet::PrometheusSample& s) {
    if (s.name.size() < 7) return;
    if (s.name == "vllm:num_requests_running") running += s.value;
    else if (s.name == "vllm:num_requests_waiting") waiting += s.value;
    else if (s.name == "vllm:kv_cache_usage_perc") kv = s.value;
  });
  fleet::EngineSignals out;
  out.running = running;
  out.waiting = waiting;
  out.kv_usage = kv;
  return out;
}

// parseEngineSignals over one page, with its size and the allocations per parse.
void parseSignalsOf(benchmark::State& state, const std::string& page) {
  bench::AllocCounter allocs;
  for (auto _ : state) benchmark::DoNotOptimize(fleet::parseEngineSignals(page));
  allocs.report(state);
  state.counters["page_bytes"] = static_cast<double>(page.size());
}

void BM_EngineSignalsEmulatorPage(benchmark::State& state) {
  parseSignalsOf(state, emulatorPage());
}
BENCHMARK(BM_EngineSignalsEmulatorPage);

void BM_EngineSignalsFilteredPage(benchmark::State& state) {
  parseSignalsOf(state, filteredEmulatorPage());
}
BENCHMARK(BM_EngineSignalsFilteredPage);

void BM_EngineSignalsEmulatorPageFullParse(benchmark::State& state) {
  const std::string page = emulatorPage();
  bench::AllocCounter allocs;
  for (auto _ : state) benchmark::DoNotOptimize(fullParse(page));
  allocs.report(state);
}
BENCHMARK(BM_EngineSignalsEmulatorPageFullParse);

// A keep-alive HTTP server on loopback answering every request with the same bytes.
class PageServer {
 public:
  explicit PageServer(const std::string& body) {
    response_ = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body;
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listen_fd_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~PageServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  uint16_t port() const { return port_; }

 private:
  void serve() {
    char buffer[4096];
    while (!stopping_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      size_t have = 0;
      while (true) {
        const ssize_t n = ::read(fd, buffer + have, sizeof buffer - have);
        if (n <= 0) break;
        have += static_cast<size_t>(n);
        const std::string_view seen(buffer, have);
        const size_t end = seen.find("\r\n\r\n");
        if (end == std::string_view::npos) continue;
        have = 0;
        if (::write(fd, response_.data(), response_.size()) < 0) break;
      }
      ::close(fd);
    }
  }

  std::string response_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

struct ParsingSink final : http::ScrapeConnection::Sink {
  fleet::EngineSignals signals;
  int status = 0;
  bool done = false;
  void onScrape(int s, std::string_view body) override {
    status = s;
    if (s == 200) signals = fleet::parseEngineSignals(body);
    done = true;
  }
};

void BM_ScrapeConnection(benchmark::State& state) {
  PageServer server(emulatorPage());
  boost::asio::io_context io(1);
  ParsingSink sink;
  auto connection = std::make_shared<http::ScrapeConnection>(
      io, "127.0.0.1", server.port(), "127.0.0.1", "/metrics", 8u << 20, &sink);
  // The connect runs on the io_context; the open connection is polled: wait for the answer
  // with poll(2), then collect it. One scrape at a time, so a wake-up per answer is counted
  // (BM_ScrapeBatch is the scraper's way).
  auto scrapeOnce = [&] {
    sink.done = false;
    connection->start();
    while (!sink.done) {
      io.restart();  // the last scrape left the context out of work, i.e. stopped
      io.poll();
      if (sink.done || !connection->collect()) break;
      pollfd wait{connection->nativeHandle(), POLLIN, 0};
      ::poll(&wait, wait.fd >= 0 ? 1 : 0, 1);
    }
  };
  scrapeOnce();  // connect, size the buffer
  if (sink.status != 200) state.SkipWithError("scrape failed");
  bench::AllocCounter allocs;
  for (auto _ : state) scrapeOnce();
  allocs.report(state);
  benchmark::DoNotOptimize(sink.signals);
  connection->detach();
}
BENCHMARK(BM_ScrapeConnection);

// A tick's worth of scrapes as the telemetry scraper makes them: every replica's request sent,
// then the answers read as the readiness set names them. The thread sleeps once per batch, not
// once per answer. `scrape_cpu`: CPU time of the scraping thread per scrape (the engines'
// threads are not counted).
// range(1): 1 for the page the gateway is served by default (the families it reads, as an
// engine honouring `name[]` answers), 0 for the whole page (an engine that ignores the filter).
void BM_ScrapeBatch(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  const std::string page = state.range(1) != 0 ? filteredEmulatorPage() : emulatorPage();
  std::vector<std::unique_ptr<PageServer>> servers;
  std::vector<ParsingSink> sinks(n);
  std::vector<std::shared_ptr<http::ScrapeConnection>> connections;
  boost::asio::io_context io(1);
  http::ScrapeReadiness readiness;
  for (size_t i = 0; i < n; ++i) {
    servers.push_back(std::make_unique<PageServer>(page));
    connections.push_back(std::make_shared<http::ScrapeConnection>(
        io, "127.0.0.1", servers[i]->port(), "127.0.0.1", "/metrics", 8u << 20, &sinks[i]));
    connections[i]->watchWith(&readiness, i);
  }
  std::vector<http::ScrapeReadiness::Ready> ready;
  bool failed = false;
  auto batch = [&] {
    for (size_t i = 0; i < n; ++i) {
      sinks[i].done = false;
      connections[i]->start();
    }
    for (size_t left = n; left > 0;) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      io.restart();
      io.poll();  // connects (the first batch only)
      readiness.ready(ready);
      for (const auto& r : ready) connections[r.key]->onReadable(r.peer_closed);
      left = 0;
      for (const ParsingSink& sink : sinks) {
        if (!sink.done) ++left;
        failed = failed || (sink.done && sink.status != 200);
      }
    }
  };
  batch();  // connect, size the buffers
  if (failed) state.SkipWithError("scrape failed");
  bench::AllocCounter allocs;
  for (auto _ : state) batch();
  allocs.report(state);
  state.counters["scrape_cpu"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                  benchmark::Counter::kInvert);
  for (auto& connection : connections) connection->detach();
}
BENCHMARK(BM_ScrapeBatch)->ArgNames({"replicas", "filtered"})->ArgsProduct({{8, 32}, {1, 0}});

void BM_ScrapeBeastClient(benchmark::State& state) {
  PageServer server(emulatorPage());
  boost::asio::io_context io(1);
  http::ControlHttpClient client(io, "127.0.0.1", server.port(), "127.0.0.1");
  fleet::EngineSignals signals;
  bool done = false;
  auto scrapeOnce = [&] {
    done = false;
    boost::asio::co_spawn(
        io,
        [&]() -> boost::asio::awaitable<void> {
          http::GetResult r = co_await client.get("/metrics", std::chrono::seconds(1), 8u << 20);
          if (r.status == 200) signals = fullParse(r.body);
          done = true;
        },
        boost::asio::detached);
    io.restart();
    while (!done) io.run_one();
  };
  scrapeOnce();
  bench::AllocCounter allocs;
  for (auto _ : state) scrapeOnce();
  allocs.report(state);
  benchmark::DoNotOptimize(signals);
}
BENCHMARK(BM_ScrapeBeastClient);

}  // namespace
}  // namespace switchyard
