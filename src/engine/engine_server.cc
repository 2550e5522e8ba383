#include "engine/engine_server.h"

#include "engine/async_jobs.h"
#include "engine/kv_event_publisher.h"
#include "engine/metrics_filter.h"
#include "engine/surface_endpoints.h"
#include "engine/video_jobs.h"
#include "http/accept_pause.h"
#include "http/peer_watch.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace switchyard::engine {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Request = http::request<http::string_body>;
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

constexpr size_t kHeaderLimit = 64 * 1024;
// Embeddings are not scheduled in the batch: one prefill-only pass of the roofline, capped.
constexpr TimeNs kEmbeddingMaxCostNs = 2'000'000'000;
// Exit status of the crash_after_requests fault.
constexpr int kCrashExitStatus = 3;

TimeNs nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t unixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view pathOf(std::string_view target) {
  return target.substr(0, std::min(target.find('?'), target.size()));
}

std::string_view queryOf(std::string_view target) {
  const size_t mark = target.find('?');
  return mark == std::string_view::npos ? std::string_view{} : target.substr(mark + 1);
}

// A generation request in flight: the driver adds tokens and wakes the request's coroutine by
// cancelling `wake`, whose deadline is never reached otherwise.
struct PendingRequest {
  explicit PendingRequest(const asio::any_io_executor& executor)
      : wake(executor, asio::steady_timer::time_point::max()) {}
  asio::steady_timer wake;
  int ready_tokens = 0;  // produced, not yet delivered
  bool finished = false;
  bool aborted = false;  // the server is stopping
};

// The client left: wake the request's coroutine so it gives the work up (as vLLM aborts a
// request whose connection closed, streamed or not).
void wakePending(void* pending) { static_cast<PendingRequest*>(pending)->wake.cancel(); }

}  // namespace

// One emulated replica: its listener, model, counters and faults, on the host's io_context.
class Replica {
 public:
  Replica(asio::io_context& ioc, EngineServerOptions options, std::unique_ptr<EngineModel> model)
      : ioc_(ioc),
        options_(std::move(options)),
        model_(std::move(model)),
        acceptor_(ioc_),
        tick_(ioc_),
        id_rng_(options_.seed ^ 0x5eedULL),
        fault_rng_(options_.seed ^ 0xfa17ULL),
        started_at_(unixSeconds()) {
    setFaults(options_.faults);
  }

  std::string listen() {
    tcp::endpoint endpoint(asio::ip::make_address(options_.host), options_.port);
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(asio::socket_base::max_listen_connections);
    tcp::endpoint bound = acceptor_.local_endpoint();
    std::string address = bound.address().is_v6()
                              ? fmt::format("[{}]:{}", bound.address().to_string(), bound.port())
                              : fmt::format("{}:{}", bound.address().to_string(), bound.port());
    // Job ids carry the replica's identity: known only now that the port is bound.
    jobs_.emplace(AsyncJobOptions{.model = options_.model,
                                  .replica_identity = address,
                                  .seed = options_.seed});
    videos_.emplace(VideoJobOptions{.model = options_.model, .replica_identity = address});
    if (!options_.kv_events_endpoint.empty()) {
      model_->enableKvEvents();
      kv_publisher_ = std::make_unique<KvEventPublisher>(KvPublisherOptions{
          .endpoint = options_.kv_events_endpoint,
          .replay_endpoint = options_.kv_events_replay_endpoint,
          .encoding = options_.kv_events_array ? fleet::kv_index::KvEventEncoding::kArray
                                               : fleet::kv_index::KvEventEncoding::kMap});
      spdlog::info(
          "engine {}: kv events on {} (replay {})", address, kv_publisher_->endpoint(),
          kv_publisher_->replayEndpoint().empty() ? "none" : kv_publisher_->replayEndpoint());
    }
    return address;
  }

  void start() { spawn(acceptLoop()); }

  void stopNow() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    tick_.cancel();
    for (beast::tcp_stream* stream : connections_) stream->socket().close(ignored);
    for (auto& [id, pending] : pending_) {
      pending->aborted = true;
      pending->wake.cancel();
    }
    for (asio::steady_timer* timer : timers_) timer->cancel();
  }

 private:
  template <typename Awaitable>
  void spawn(Awaitable&& awaitable) {
    asio::co_spawn(ioc_, std::forward<Awaitable>(awaitable), [](std::exception_ptr error) {
      if (!error) return;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        spdlog::error("engine: connection failed: {}", e.what());
      }
    });
  }

  // --- the model driver ---

  void advanceModel() {
    events_.clear();
    model_->advance(nowNs(), events_);
    if (kv_publisher_) {
      // One batch per advance (at most one per step), as vLLM publishes per scheduler step.
      model_->takeKvEvents(kv_events_);
      if (!kv_events_.empty()) {
        const std::chrono::duration<double> ts =
            std::chrono::system_clock::now().time_since_epoch();
        kv_publisher_->publish(std::move(kv_events_), ts.count());
        kv_events_.clear();
      }
    }
    for (const TokenEvent& event : events_) {
      counters_.generation_tokens_total += event.tokens;
      recordTimings(event);
      auto it = pending_.find(event.id);
      if (it == pending_.end()) continue;
      it->second->ready_tokens += event.tokens;
      it->second->finished = it->second->finished || event.finished;
      it->second->wake.cancel();
    }
    scheduleTick();
  }

  void recordTimings(const TokenEvent& event) {
    constexpr double kSecondsPerNs = 1e-9;
    if (event.previous_token < 0) {
      counters_.time_to_first_token.observe((event.time - event.arrival) * kSecondsPerNs);
      counters_.queue_time.observe((event.first_scheduled - event.arrival) * kSecondsPerNs);
    } else {
      counters_.inter_token_latency.observe((event.time - event.previous_token) * kSecondsPerNs);
    }
    if (event.finished) {
      counters_.e2e_latency.observe((event.time - event.arrival) * kSecondsPerNs);
    }
  }

  // --- faults ---

  void setFaults(const FaultConfig& faults) {
    if (faults.metrics_stale && !faults_.metrics_stale) stale_metrics_ = renderCurrentMetrics();
    faults_ = faults;
    requests_since_faults_ = 0;
    model_->setSlowdown(faults_.slowdown);
  }

  bool draw(double probability) {
    return probability > 0 && (probability >= 1 || fault_rng_.uniform01() < probability);
  }

  std::string renderCurrentMetrics() {
    advanceModel();  // bring busy time and token counters up to now
    return renderMetrics(options_.flavor, options_.model, model_->load(), counters_,
                         faults_.metrics_nan_kv);
  }

  // Waits until the server stops (a hang or a stall that outlives the server).
  asio::awaitable<bool> sleepFor(std::chrono::milliseconds duration) {
    asio::steady_timer timer(ioc_, duration);
    timers_.insert(&timer);
    auto [ec] = co_await timer.async_wait(kAwait);
    timers_.erase(&timer);
    co_return !ec && !stopping_;
  }

  // The request-level faults, in order: crash, reset, hang, error. Returns nullopt when the
  // request should be served, else whether the connection may be kept.
  asio::awaitable<std::optional<bool>> injectRequestFaults(beast::tcp_stream& stream,
                                                           const Request& request) {
    ++requests_since_faults_;
    if (faults_.crash_after_requests >= 0 &&
        requests_since_faults_ > faults_.crash_after_requests) {
      spdlog::error("engine: injected crash after {} requests", faults_.crash_after_requests);
      std::fflush(nullptr);
      std::_Exit(kCrashExitStatus);
    }
    if (draw(faults_.reset)) {
      // SO_LINGER with a zero timeout turns close() into a TCP RST.
      boost::system::error_code ignored;
      stream.socket().set_option(asio::socket_base::linger(true, 0), ignored);
      stream.socket().close(ignored);
      co_return false;
    }
    if (draw(faults_.hang)) {
      co_await sleepFor(std::chrono::hours(24));
      co_return false;
    }
    if (draw(faults_.error_rate)) {
      co_return co_await writeError(stream, static_cast<http::status>(faults_.error_status),
                                    request.version(), request.keep_alive(),
                                    "injected fault: engine error", "InternalServerError");
    }
    co_return std::nullopt;
  }

  asio::awaitable<bool> serveFaults(beast::tcp_stream& stream, Request& request) {
    const unsigned version = request.version();
    const bool keep_alive = request.keep_alive();
    if (request.method() == http::verb::post) {
      Parsed<FaultConfig> parsed = parseFaults(request.body());
      if (!parsed.value) {
        co_return co_await writeError(stream, http::status::bad_request, version, keep_alive,
                                      parsed.error);
      }
      setFaults(*parsed.value);
      spdlog::info("engine {}: faults set to {}", options_.port, renderFaults(faults_));
    } else if (request.method() != http::verb::get) {
      co_return co_await methodNotAllowed(stream, request);
    }
    co_return co_await write(stream, http::status::ok, version, keep_alive, "application/json",
                             renderFaults(faults_));
  }

  void scheduleTick() {
    if (stopping_) return;
    TimeNs next = model_->nextEventTime();
    if (next < 0) {
      tick_.cancel();
      return;
    }
    // Re-arming cancels the previous wait; its handler sees operation_aborted and does nothing.
    tick_.expires_at(asio::steady_timer::time_point(std::chrono::nanoseconds(next)));
    tick_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) advanceModel();
    });
  }

  // Registers a request with the model; the returned guard cancels it in the model unless it
  // finished (client gone, server stopping) and always unregisters it.
  struct Registration {
    Replica* impl;
    RequestId id;
    PendingRequest* pending;
    ~Registration() {
      impl->pending_.erase(id);
      if (!pending->finished && !impl->stopping_) {
        impl->model_->cancel(id, nowNs());
        impl->scheduleTick();
      }
    }
  };

  // --- connections ---

  asio::awaitable<void> acceptLoop() {
    while (!stopping_) {
      auto [ec, socket] = co_await acceptor_.async_accept(kAwait);
      if (stopping_) break;
      if (ec) {
        // Out of descriptors and the like: back off instead of spinning.
        if (!co_await accept_pause_.after(acceptor_, ec)) break;
        continue;
      }
      boost::system::error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);
      spawn(session(std::move(socket)));
    }
  }

  asio::awaitable<void> session(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    connections_.insert(&stream);
    beast::flat_buffer buffer;
    while (!stopping_) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(kHeaderLimit);
      parser.body_limit(options_.max_body_bytes);
      stream.expires_after(options_.idle_timeout);
      auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kAwait);
      if (ec) {
        if (ec == http::error::header_limit) {
          co_await writeError(stream, http::status::request_header_fields_too_large, 11, false,
                              "request headers too large");
        }
        break;
      }
      if (parser.get()[http::field::expect] == "100-continue") {
        stream.expires_after(options_.write_timeout);
        constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(kContinue), kAwait);
        if (wec) break;
      }
      if (!parser.is_done()) {
        stream.expires_after(options_.read_timeout);
        auto [bec, bn] = co_await http::async_read(stream, buffer, parser, kAwait);
        if (bec) {
          if (bec == http::error::body_limit) {
            co_await writeError(stream, http::status::payload_too_large, parser.get().version(),
                                false, "request body too large");
          }
          break;
        }
      }
      Request request = parser.release();
      bool keep_alive = co_await dispatch(stream, request);
      if (!keep_alive) break;
    }
    connections_.erase(&stream);
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  // Returns whether the connection may serve another request.
  asio::awaitable<bool> dispatch(beast::tcp_stream& stream, Request& request) {
    const std::string_view path = pathOf(request.target());
    const http::verb method = request.method();
    const bool keep_alive = request.keep_alive();
    const unsigned version = request.version();
    auto expect = [&](http::verb wanted) { return method == wanted; };

    if (!options_.api_key.empty() && path.starts_with("/v1/") &&
        request[http::field::authorization] != "Bearer " + options_.api_key) {
      // vLLM's answer with --api-key when the key is missing or wrong.
      co_return co_await write(stream, http::status::unauthorized, version, keep_alive,
                               "application/json", R"({"error":"Unauthorized"})");
    }

    if (path == "/v1/chat/completions" || path == "/v1/completions") {
      if (!expect(http::verb::post)) co_return co_await methodNotAllowed(stream, request);
      co_return co_await serveGeneration(
          stream, request,
          path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChatCompletions);
    }
    if (path == "/v1/embeddings") {
      if (!expect(http::verb::post)) co_return co_await methodNotAllowed(stream, request);
      co_return co_await serveEmbeddings(stream, request);
    }
    if (const std::optional<SurfaceKind> surface = surfaceKind(path)) {
      if (!expect(http::verb::post)) co_return co_await methodNotAllowed(stream, request);
      co_return co_await serveSurface(stream, request, *surface);
    }
    if (path == "/health") {
      if (!expect(http::verb::get)) co_return co_await methodNotAllowed(stream, request);
      co_return co_await write(stream, http::status::ok, version, keep_alive, "", "");
    }
    if (path == "/v1/models") {
      if (!expect(http::verb::get)) co_return co_await methodNotAllowed(stream, request);
      co_return co_await write(stream, http::status::ok, version, keep_alive, "application/json",
                               renderModels(options_.model, started_at_, options_.flavor));
    }
    if (path == "/metrics") {
      if (!expect(http::verb::get)) co_return co_await methodNotAllowed(stream, request);
      if (faults_.metrics_missing) {
        co_return co_await write(stream, http::status::not_found, version, keep_alive, "text/plain",
                                 "Not Found\n");
      }
      ++counters_.metrics_scrapes_total;
      // A named local: g++ 12 destroys a conditional's temporary twice inside co_await.
      std::string body = faults_.metrics_stale ? stale_metrics_ : renderCurrentMetrics();
      const std::vector<std::string> names = requestedSampleNames(queryOf(request.target()));
      if (!names.empty()) body = filterMetricsPage(body, names);
      co_return co_await write(stream, http::status::ok, version, keep_alive,
                               "text/plain; version=0.0.4; charset=utf-8", std::move(body));
    }
    if (path == "/admin/faults") co_return co_await serveFaults(stream, request);
    if (videos_ && VideoJobs::handles(path)) {
      JobReply reply = videos_->handle(request.method_string(), path,
                                       request[http::field::content_type], request.body(),
                                       nowNs(), unixSeconds());
      co_return co_await write(stream, static_cast<http::status>(reply.status), version,
                               keep_alive, reply.content_type, std::move(reply.body));
    }
    if (jobs_ && AsyncJobs::handles(path)) {
      JobReply reply = jobs_->handle(request.method_string(), path, request.body(), nowNs(),
                                     unixSeconds());
      co_return co_await write(stream, static_cast<http::status>(reply.status), version,
                               keep_alive, reply.content_type, std::move(reply.body));
    }
    co_return co_await writeError(stream, http::status::not_found, version, keep_alive,
                                  fmt::format("Not found: {}", path));
  }

  asio::awaitable<bool> methodNotAllowed(beast::tcp_stream& stream, const Request& request) {
    co_return co_await writeError(stream, http::status::method_not_allowed, request.version(),
                                  request.keep_alive(),
                                  fmt::format("Method {} not allowed for {}",
                                              request.method_string(), pathOf(request.target())));
  }

  asio::awaitable<bool> modelNotFound(beast::tcp_stream& stream, const Request& request,
                                      std::string_view model) {
    co_return co_await writeError(
        stream, http::status::not_found, request.version(), request.keep_alive(),
        fmt::format("The model `{}` does not exist.", model), "NotFoundError");
  }

  asio::awaitable<bool> serveGeneration(beast::tcp_stream& stream, Request& request,
                                        Endpoint endpoint) {
    std::string& body = request.body();
    Parsed<GenerationRequest> parsed = parser_.generation(endpoint, body);
    if (!parsed.value) {
      co_return co_await writeError(stream, http::status::bad_request, request.version(),
                                    request.keep_alive(), parsed.error);
    }
    const GenerationRequest& generation = *parsed.value;
    if (!generation.model.empty() && generation.model != options_.model) {
      co_return co_await modelNotFound(stream, request, generation.model);
    }
    const int64_t capacity = model_->load().kv_capacity_tokens;
    if (generation.prompt_tokens + static_cast<int64_t>(generation.max_tokens) > capacity) {
      co_return co_await writeError(
          stream, http::status::bad_request, request.version(), request.keep_alive(),
          fmt::format("This request needs {} tokens ({} prompt, {} completion) but the KV cache of "
                      "this replica holds {}.",
                      generation.prompt_tokens + generation.max_tokens, generation.prompt_tokens,
                      generation.max_tokens, capacity));
    }
    if (std::optional<bool> faulted = co_await injectRequestFaults(stream, request)) {
      co_return *faulted;
    }

    PendingRequest pending(ioc_.get_executor());
    const RequestId id = next_request_id_++;
    pending_.emplace(id, &pending);
    Registration registration{this, id, &pending};
    advanceModel();  // the model's timeline must be current before a submit
    ModelRequest model_request{id, generation.prompt_tokens, generation.max_tokens, {}};
    if (options_.prefix_hashes) model_request.block_hashes = generation.block_hashes;
    model_->submit(model_request, nowNs());
    counters_.prompt_tokens_total += generation.prompt_tokens;
    scheduleTick();

    ResponseIdentity identity{newResponseId(endpoint), unixSeconds(), options_.model, endpoint};
    TokenTextSource words(options_.seed, generation.prompt_hash);
    const bool keep_alive = request.keep_alive();
    const auto client = std::make_shared<switchyard::http::PeerWatch>();
    const switchyard::http::PeerWatchScope watching(client, stream.socket(), &wakePending,
                                                    &pending);

    if (!generation.stream) {
      while (!pending.finished && !pending.aborted && !client->gone) {
        co_await pending.wake.async_wait(kAwait);
      }
      if (pending.aborted || client->gone) co_return false;
      std::string text;
      for (int i = 0; i < pending.ready_tokens; ++i) text += words.next();
      co_return co_await write(
          stream, http::status::ok, request.version(), keep_alive, "application/json",
          renderCompletion(identity, text, generation.prompt_tokens, pending.ready_tokens));
    }

    http::response<http::empty_body> head{http::status::ok, request.version()};
    head.set(http::field::content_type, "text/event-stream; charset=utf-8");
    head.set(http::field::cache_control, "no-cache");
    head.keep_alive(keep_alive);
    head.chunked(true);
    http::response_serializer<http::empty_body> serializer{head};
    stream.expires_after(options_.write_timeout);
    if (auto [ec, n] = co_await http::async_write_header(stream, serializer, kAwait); ec) {
      co_return false;
    }
    // vLLM sends the role chunk with the first output, i.e. after prefill.
    bool sent_role = endpoint != Endpoint::kChatCompletions;
    int delivered = 0;
    const bool truncate = draw(faults_.truncate_stream);
    const int truncate_after = faults_.truncate_after_tokens;
    const int stall_ms = faults_.stall_mid_stream_ms;
    const int stall_after = faults_.stall_after_tokens;
    bool stalled = stall_ms <= 0;
    for (;;) {
      if (truncate && delivered >= truncate_after) co_return false;  // closes without [DONE]
      if (!stalled && delivered >= stall_after) {
        stalled = true;
        if (!co_await sleepFor(std::chrono::milliseconds(stall_ms))) co_return false;
      }
      if (pending.aborted || client->gone) co_return false;
      if (pending.ready_tokens == 0 && !pending.finished) {
        co_await pending.wake.async_wait(kAwait);
        continue;
      }
      if (!sent_role) {
        sent_role = true;
        if (!co_await writeChunk(stream, renderRoleChunk(identity))) co_return false;
      }
      while (pending.ready_tokens > 0) {
        --pending.ready_tokens;
        ++delivered;
        if (!co_await writeChunk(stream, renderTokenChunk(identity, words.next()))) co_return false;
        if (pending.aborted) co_return false;
        if ((truncate && delivered >= truncate_after) || (!stalled && delivered >= stall_after)) {
          break;
        }
      }
      if (truncate && delivered >= truncate_after) continue;
      if (!stalled && delivered >= stall_after) continue;
      if (pending.finished && pending.ready_tokens == 0) break;
    }
    if (!co_await writeChunk(stream, renderFinishChunk(identity))) co_return false;
    if (generation.include_usage &&
        !co_await writeChunk(stream,
                             renderUsageChunk(identity, generation.prompt_tokens, delivered))) {
      co_return false;
    }
    if (!co_await writeChunk(stream, std::string(kStreamDone))) co_return false;
    stream.expires_after(options_.write_timeout);
    auto [ec, n] = co_await asio::async_write(stream, http::make_chunk_last(), kAwait);
    co_return !ec && keep_alive;
  }

  asio::awaitable<bool> serveEmbeddings(beast::tcp_stream& stream, Request& request) {
    Parsed<EmbeddingRequest> parsed = parser_.embedding(request.body());
    if (!parsed.value) {
      co_return co_await writeError(stream, http::status::bad_request, request.version(),
                                    request.keep_alive(), parsed.error);
    }
    if (!parsed.value->model.empty() && parsed.value->model != options_.model) {
      co_return co_await modelNotFound(stream, request, parsed.value->model);
    }
    if (std::optional<bool> faulted = co_await injectRequestFaults(stream, request)) {
      co_return *faulted;
    }
    int64_t tokens = 0;
    for (const EmbeddingInput& input : parsed.value->inputs) tokens += input.tokens;
    counters_.prompt_tokens_total += tokens;
    const TimeNs cost_ns = std::min<TimeNs>(
        kEmbeddingMaxCostNs,
        model_->prefillOnlyNs(static_cast<int>(std::min<int64_t>(tokens, 1 << 30))));
    asio::steady_timer delay(ioc_, std::chrono::nanoseconds(cost_ns));
    timers_.insert(&delay);
    auto [ec] = co_await delay.async_wait(kAwait);
    timers_.erase(&delay);
    if (ec || stopping_) co_return false;
    co_return co_await write(stream, http::status::ok, request.version(), request.keep_alive(),
                             "application/json",
                             renderEmbeddings(options_.model, options_.seed, parsed.value->inputs));
  }

  // Rerank, score, images and audio (surface_endpoints.h): parse, wait the modelled cost, answer.
  asio::awaitable<bool> serveSurface(beast::tcp_stream& stream, Request& request,
                                     SurfaceKind kind) {
    const SurfaceContext context{options_.model, options_.seed, unixSeconds(), model_.get()};
    SurfaceAnswer answer =
        surface_.serve(kind, request[http::field::content_type], request.body(), context);
    if (answer.status != 200) {
      co_return co_await write(stream, static_cast<http::status>(answer.status),
                               request.version(), request.keep_alive(), "application/json",
                               std::move(answer.body));
    }
    if (!answer.model.empty() && answer.model != options_.model) {
      co_return co_await modelNotFound(stream, request, answer.model);
    }
    if (std::optional<bool> faulted = co_await injectRequestFaults(stream, request)) {
      co_return *faulted;
    }
    counters_.prompt_tokens_total += answer.prompt_tokens;
    asio::steady_timer delay(ioc_, std::chrono::nanoseconds(answer.cost));
    timers_.insert(&delay);
    auto [ec] = co_await delay.async_wait(kAwait);
    timers_.erase(&delay);
    if (ec || stopping_) co_return false;
    co_return co_await write(stream, http::status::ok, request.version(), request.keep_alive(),
                             answer.content_type, std::move(answer.body));
  }

  // --- writing ---

  asio::awaitable<bool> write(beast::tcp_stream& stream, http::status status, unsigned version,
                              bool keep_alive, std::string_view content_type, std::string body) {
    http::response<http::string_body> response{status, version};
    if (!content_type.empty()) response.set(http::field::content_type, content_type);
    response.keep_alive(keep_alive);
    response.body() = std::move(body);
    response.prepare_payload();
    stream.expires_after(options_.write_timeout);
    auto [ec, n] = co_await http::async_write(stream, response, kAwait);
    co_return !ec && keep_alive && !stopping_;
  }

  asio::awaitable<bool> writeError(beast::tcp_stream& stream, http::status status, unsigned version,
                                   bool keep_alive, std::string_view message,
                                   std::string_view type = "invalid_request_error") {
    co_return co_await write(stream, status, version, keep_alive, "application/json",
                             renderError(message, type));
  }

  asio::awaitable<bool> writeChunk(beast::tcp_stream& stream, std::string event) {
    stream.expires_after(options_.write_timeout);
    auto [ec, n] =
        co_await asio::async_write(stream, http::make_chunk(asio::buffer(event)), kAwait);
    co_return !ec;
  }

  std::string newResponseId(Endpoint endpoint) {
    return fmt::format("{}-{:016x}{:016x}",
                       endpoint == Endpoint::kChatCompletions ? "chatcmpl" : "cmpl", id_rng_.next(),
                       id_rng_.next());
  }

  asio::io_context& ioc_;
  EngineServerOptions options_;
  std::unique_ptr<EngineModel> model_;
  std::unique_ptr<KvEventPublisher> kv_publisher_;  // before model_ is used by it; none: off
  std::vector<fleet::kv_index::KvEvent> kv_events_;
  tcp::acceptor acceptor_;
  switchyard::http::AcceptPause accept_pause_{"engine"};
  asio::steady_timer tick_;
  Rng id_rng_;
  Rng fault_rng_;
  FaultConfig faults_;
  int64_t requests_since_faults_ = 0;
  std::string stale_metrics_;  // /metrics as it was when metrics_stale was set
  int64_t started_at_;
  RequestParser parser_;
  SurfaceParser surface_;
  EngineCounters counters_;
  std::optional<AsyncJobs> jobs_;  // /v1/responses, /v1/batches, /v1/files; set by listen()
  std::optional<VideoJobs> videos_;  // /v1/videos; set by listen()
  RequestId next_request_id_ = 1;
  bool stopping_ = false;
  std::vector<TokenEvent> events_;
  std::unordered_map<RequestId, PendingRequest*> pending_;
  std::unordered_set<beast::tcp_stream*> connections_;
  std::unordered_set<asio::steady_timer*> timers_;
};

class EngineHost::Impl {
 public:
  // Signals are taken over at once, before the caller announces the listening ports: a SIGTERM
  // that arrives right after the announcement must stop the host cleanly, not kill it.
  explicit Impl(bool handle_signals) : signals_(ioc_), handle_signals_(handle_signals) {
    if (handle_signals_) {
      signals_.add(SIGTERM);
      signals_.add(SIGINT);
      signals_.async_wait([this](const boost::system::error_code& ec, int) {
        if (!ec) stopNow();
      });
    }
  }

  std::string add(EngineServerOptions options, std::unique_ptr<EngineModel> model) {
    auto replica = std::make_unique<Replica>(ioc_, std::move(options), std::move(model));
    std::string bound = replica->listen();
    replicas_.push_back(std::move(replica));
    return bound;
  }

  void run() {
    for (auto& replica : replicas_) replica->start();
    ioc_.run();
  }

  void stop() {
    asio::post(ioc_, [this] { stopNow(); });
  }

 private:
  void stopNow() {
    boost::system::error_code ignored;
    signals_.cancel(ignored);
    for (auto& replica : replicas_) replica->stopNow();
  }

  // ioc_ first: it must outlive every I/O object, the replicas' included.
  asio::io_context ioc_{1};
  asio::signal_set signals_;
  bool handle_signals_;
  std::vector<std::unique_ptr<Replica>> replicas_;
};

EngineHost::EngineHost(bool handle_signals) : impl_(std::make_unique<Impl>(handle_signals)) {}
EngineHost::~EngineHost() = default;
std::string EngineHost::add(EngineServerOptions options, std::unique_ptr<EngineModel> model) {
  return impl_->add(std::move(options), std::move(model));
}
void EngineHost::run() { impl_->run(); }
void EngineHost::stop() { impl_->stop(); }

}  // namespace switchyard::engine
