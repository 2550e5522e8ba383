#include "gateway/gateway.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <charconv>
#include <cstdio>
#include <thread>

#include "core/cpu_budget.h"
#include "core/file_limit.h"
#include "core/file_stamp.h"
#include "fleet/capacity_tracker.h"
#include "fleet/fleet_registry.h"
#include "fleet/telemetry_scraper.h"
#include "gateway/admin_access.h"
#include "gateway/admin_server.h"
#include "gateway/fleet_plane.h"
#include "gateway/fleet_view.h"
#include "gateway/load_monitor.h"
#include "gateway/optimizer_panel.h"
#include "gateway/security_plane.h"
#include "gateway/kv_events_plane.h"
#include "gateway/shared_state_metrics.h"
#include "gateway/shared_state_sync.h"
#include "gateway/telemetry_metrics.h"
#include "gateway/telemetry_share.h"
#include "gateway/worker.h"
#include "health/health_manager.h"
#include "http/listener.h"
#include "observe/dashboard.h"
#include "observe/observer.h"

namespace switchyard::gateway {
namespace {

void logFileLimit(const FileLimit& limit) {
  if (!limit.error.empty()) {
    spdlog::warn("gateway: open files limit: {}", limit.error);
  } else if (limit.soft != limit.before) {
    spdlog::info("gateway: open files limit {} (raised from {})", limit.soft, limit.before);
  } else {
    spdlog::info("gateway: open files limit {}", limit.soft);
  }
  if (limit.soft < kWantedOpenFiles) {
    spdlog::warn(
        "gateway: open files limit {} is low: every client and upstream connection holds a "
        "descriptor, so about {} clients can be proxied at once; raise the hard limit (ulimit "
        "-Hn, systemd LimitNOFILE=, the container runtime's nofile default) to {} or more",
        limit.soft, limit.soft / 2, kWantedOpenFiles);
  }
}


namespace asio = boost::asio;
using tcp = asio::ip::tcp;

size_t replicaCount(const GatewayConfig& config) {
  size_t n = 0;
  for (const auto& model : config.models) n += model.replicas.size();
  return n;
}

bool anyTlsReplica(const GatewayConfig& config) {
  for (const auto& model : config.models) {
    for (const auto& replica : model.replicas) {
      if (replica.tls) return true;
    }
  }
  return false;
}

class ControlPlane {
 public:
  ControlPlane(const GatewayOptions& options, GatewayConfig config)
      : options_(options),
        config_(std::move(config)),
        scraper_(io_, SteadyClock::instance(), config_.scrape_interval, config_.scrape_policy),
        capacity_(fleet::CapacitySettings{config_.capacity.window,
                                          config_.capacity.time_constant}),
        capacity_timer_(io_),
        health_(io_, SteadyClock::instance(), config_.health),
        health_timer_(io_),
        signals_(io_, SIGTERM, SIGINT, SIGHUP),
        reload_timer_(io_),
        shutdown_timer_(io_),
        readiness_(config_.readiness, SteadyClock::instance().now()) {}

  int run() {
    applyFleet(config_);
    stamp_ = stampOf(options_.config_path);

    int worker_count = config_.workers;
    if (worker_count > 0) {
      spdlog::info("gateway: {} workers (configured)", worker_count);
    } else {
      const CpuBudget budget = detectCpuBudget();
      // At most kMaxWorkers: the queue's per-model worker mask has one bit per worker.
      worker_count = std::min(budget.cpus, kMaxWorkers);
      spdlog::info("gateway: {} workers, one per CPU this process may use: {}", worker_count,
                   budget.source);
    }
    logFileLimit(raiseFileLimit());
    tcp::endpoint listen = http::resolveListenAddress(config_.listen);
    // Keys, certificates and client limits (docs/security.md). Every https:// replica a reload
    // may add needs the upstream context: built when any is configured at start.
    security_ = std::make_unique<SecurityPlane>(config_.security, anyTlsReplica(config_));
    observe_ = std::make_unique<observe::Observability>(config_.observe,
                                                        static_cast<size_t>(worker_count));
    config_.shared_state.worker_count = worker_count;  // before the sync and the workers copy it
    shared_backend_ =
        state::makeBackend(config_.shared_state.settings, config_.shared_state.gateway_id);
    state_sync_ = std::make_unique<GatewayStateSync>(io_, *shared_backend_, registry_,
                                                     config_.shared_state);
    telemetry_share_ = std::make_unique<TelemetryShare>(io_, *shared_backend_, scraper_,
                                                        config_.shared_state.liveness_ttl);
    // Discovery, drains and scale-down; the static fleet applied above is served until the
    // discovered replicas join it.
    fleet_plane_ = std::make_unique<FleetPlane>(io_, registry_, *shared_backend_, config_,
                                                [this] { onFleetChange(); });
    // Precise prefix-cache routing: the KV-event subscriber and the exact index workers read.
    kv_events_ = std::make_unique<KvEventsPlane>(config_.prefix_cache, worker_count);
    kv_events_->sync(*registry_.latest());
    directory_.exact_index = kv_events_->hub();
    directory_.chain_exchange = kv_events_->chainExchange();
    for (int i = 0; i < worker_count; ++i) {
      workers_.push_back(std::make_unique<Worker>(i, config_, registry_, listen,
                                                  observe_->worker(i), *shared_backend_,
                                                  directory_, *security_));
      directory_.contexts.push_back(&workers_.back()->context());
      directory_.queues.push_back(&workers_.back()->queue());
      // Port 0 means "any": the first worker gets one, the others share it (SO_REUSEPORT).
      if (i == 0) listen.port(workers_[0]->port());
    }
    load_monitor_ = std::make_unique<GatewayLoadMonitor>(io_, *observe_, registry_,
                                                         config_.load_monitor,
                                                         shared_backend_->gatewayId());
    optimizer_panel_ = std::make_unique<OptimizerPanel>(io_, config_.load_monitor.optimizer_url);
    admin_ = std::make_unique<AdminServer>(io_, http::resolveListenAddress(config_.admin_listen));
    admin_->secure(&security_->adminTls(), std::make_shared<GatewayAdminAccess>(*security_));
    registerAdminEndpoints();
    fleet_plane_->registerAdmin(*admin_);
    registerLoadEndpoint();
    admin_->start();
    observe_->startExporter(io_);
    scraper_.sync(registry_.replicas());
    waitForSignal();
    scheduleReloadPoll();
    scheduleCapacityRefresh();
    scheduleHealthTick();
    state_sync_->start();
    fleet_plane_->start();
    load_monitor_->start();
    optimizer_panel_->start();
    telemetry_share_->start();

    std::printf("listening %s:%u %s:%u\n", listen.address().to_string().c_str(), listen.port(),
                listen.address().to_string().c_str(), admin_->port());
    std::fflush(stdout);
    spdlog::info("gateway: {} workers on {}:{}, admin on port {}, {} models, {} replicas",
                 worker_count, listen.address().to_string(), listen.port(), admin_->port(),
                 config_.models.size(), replicaCount(config_));
    if (state_sync_->distributed()) {
      spdlog::info("gateway: shared state in redis at {} (gateway id {})",
                   config_.shared_state.settings.address, shared_backend_->gatewayId());
    }

    for (auto& worker : workers_) threads_.emplace_back([w = worker.get()] { w->run(); });
    io_.run();
    for (auto& worker : workers_) worker->stop();
    for (auto& thread : threads_) thread.join();
    spdlog::info("gateway: stopped");
    return 0;
  }

 private:
  void registerAdminEndpoints() {
    // Liveness: the process answers. It stays 200 while draining, so a liveness probe never
    // kills a gateway that is finishing its requests; readiness says "draining" instead.
    admin_->handle("/healthz", [this](std::string_view) {
      return AdminResponse{200u, "application/json",
                           shutting_down_ ? R"({"status":"draining"})" : R"({"status":"ok"})"};
    });
    admin_->handle("/readyz", [this](std::string_view) {
      const auto snapshot = registry_.latest();
      const Readiness::Verdict verdict = readiness_.evaluate(
          {shutting_down_, state_sync_->distributed(), state_sync_->syncedOnce(), snapshot.get(),
           SteadyClock::instance().now(), fleet_plane_->discovering(),
           fleet_plane_->discoverySynced()});
      return AdminResponse{verdict.ready ? 200u : 503u, "application/json",
                           Readiness::toJson(verdict, shutting_down_)};
    });
    admin_->handle("/debug/fleet", [this](std::string_view) {
      const auto snapshot = registry_.latest();
      const TimeNs now = SteadyClock::instance().now();
      return AdminResponse{200, "application/json",
                           renderFleetJson(*snapshot, now, fleet_plane_->debugJson(now))};
    });
    admin_->handle("/metrics", [this](std::string_view) {
      const auto snapshot = registry_.latest();
      const observe::ExporterStats exporter = observe_->exporterStats();
      observe::ControlPlaneStats stats{scraper_.scrapesTotal(), scraper_.scrapeFailuresTotal(),
                                       exporter.exported,       exporter.dropped,
                                       exporter.failures,       snapshot->version,
                                       workers_.size()};
      std::string text =
          observe_->metrics().render(*snapshot, SteadyClock::instance().now(), stats);
      std::vector<const state::SharedStateStats*> clients;
      for (const auto& worker : workers_) clients.push_back(&worker->sharedStateStats());
      appendSharedStateMetrics(text, state_sync_->distributed() ? "redis" : "memory", clients,
                               *state_sync_, *snapshot);
      security_->appendMetrics(text);
      appendTelemetryMetrics(text, scraper_,
                             state_sync_->distributed() ? telemetry_share_.get() : nullptr,
                             health_);
      fleet_plane_->appendMetrics(text, *snapshot, SteadyClock::instance().now());
      kv_events_->appendMetrics(text);
      return AdminResponse{200, "text/plain; version=0.0.4; charset=utf-8", std::move(text)};
    });
    admin_->handle("/debug/decisions", [this](std::string_view query) {
      // ?limit=N: the newest N (at most the ring's size); a bad value is a clear 400.
      size_t limit = config_.observe.decision_log_size;
      if (const auto text = queryParam(query, "limit")) {
        size_t parsed = 0;
        const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), parsed);
        if (ec != std::errc() || end != text->data() + text->size() || parsed == 0) {
          return AdminResponse{
              400, "application/json",
              R"({"error":{"message":"limit must be a positive integer","type":"invalid_request_error","param":"limit","code":null}})"};
        }
        limit = std::min(limit, parsed);
      }
      const auto snapshot = registry_.latest();  // the chosen replicas' labels
      return AdminResponse{200, "application/json",
                           observe_->recentDecisionsJson(limit, 200 * kNsPerMs, snapshot.get())};
    });
    admin_->handle("/dashboard", [](std::string_view) {
      return AdminResponse{200, "text/html; charset=utf-8", std::string(observe::dashboardHtml())};
    });
    // The optimizer's answer as last fetched (load_monitor.optimizer_url), for the dashboard.
    admin_->handle("/debug/optimizer", [this](std::string_view) {
      return AdminResponse{200, "application/json", optimizer_panel_->json()};
    });
  }

  // GET /debug/load?model=M&since=UNIX_S: closed request-monitoring intervals (the optimizer
  // polls it when the gateways share no Redis).
  void registerLoadEndpoint() {
    admin_->handle("/debug/load", [this](std::string_view query) {
      int64_t since = 0;
      if (const auto text = queryParam(query, "since")) {
        const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), since);
        if (ec != std::errc() || end != text->data() + text->size()) {
          return AdminResponse{
              400, "application/json",
              R"({"error":{"message":"since must be unix seconds","type":"invalid_request_error","param":"since","code":null}})"};
        }
      }
      const std::string_view model = queryParam(query, "model").value_or(std::string_view());
      return AdminResponse{200, "application/json", load_monitor_->recentJson(model, since)};
    });
  }

  void applyFleet(const GatewayConfig& config) {
    registry_.apply(fleet_plane_ ? fleet_plane_->compose(config) : config.models,
                    config.signalMaxAge(), config.default_strategy,
                    config.auto_blend_load_balance_weight, SteadyClock::instance().now());
    health_.sync(registry_.latest());
    if (kv_events_) kv_events_->sync(*registry_.latest());
    if (fleet_plane_) fleet_plane_->afterApply();
  }

  // Discovery saw Pods come, go or change.
  void onFleetChange() {
    if (shutting_down_) return;
    applyFleet(config_);
    scraper_.sync(registry_.replicas());
  }

  void scheduleHealthTick() {
    health_timer_.expires_after(std::chrono::milliseconds(100));
    health_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || shutting_down_) return;
      health_.tick();
      registry_.collectRetired();
      scheduleHealthTick();
    });
  }

  void scheduleCapacityRefresh() {
    capacity_timer_.expires_after(std::chrono::nanoseconds(config_.capacity.refresh));
    capacity_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || shutting_down_) return;
      refreshCapacity();
      scheduleCapacityRefresh();
    });
  }

  // With several gateways each replica's capacity is learned from the tokens all gateways
  // counted (shared state), not this gateway's slice; a replica the last sync did not cover
  // yet uses this gateway's own counters.
  void refreshCapacity() {
    const auto replicas = registry_.replicas();
    const TimeNs now = SteadyClock::instance().now();
    if (!state_sync_->distributed()) {
      capacity_.refresh(replicas, now);
    } else {
      std::vector<fleet::CapacityCounters> counters;
      counters.reserve(replicas.size());
      for (const auto& replica : replicas) {
        const auto global = state_sync_->globalCounters(replica.get());
        counters.push_back(global ? *global : fleet::CapacityCounters::of(replica->counters()));
      }
      capacity_.refresh(replicas, counters, now);
    }
    for (const fleet::ModelEntry& model : registry_.latest()->models) {
      fleet::refreshLearnedMeans(model);
      fleet::refreshCompletionRate(model, now);
    }
  }

  void waitForSignal() {
    signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      if (signal == SIGHUP) {
        spdlog::info("gateway: SIGHUP, reloading {}", options_.config_path);
        stamp_ = stampOf(options_.config_path);  // the file poll need not reload it again
        reload();
        security_->refresh(true);  // keys files and certificates, changed or not
        waitForSignal();
        return;
      }
      beginShutdown();
    });
  }

  void scheduleReloadPoll() {
    reload_timer_.expires_after(std::chrono::nanoseconds(config_.reload_poll_interval));
    reload_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || shutting_down_) return;
      const FileStamp now = stampOf(options_.config_path);
      if (!(now == stamp_)) {
        stamp_ = now;
        spdlog::info("gateway: {} changed, reloading", options_.config_path);
        reload();
      }
      security_->refresh(false);  // keys files and certificates that changed
      scheduleReloadPoll();
    });
  }

  void reload() {
    GatewayConfig next;
    try {
      next = loadConfigFile(options_.config_path);
    } catch (const std::exception& e) {
      // The running fleet stays: a bad edit must never take the gateway's routes away.
      spdlog::error("gateway: reload rejected, keeping the current fleet: {}", e.what());
      return;
    }
    if (next.listen != config_.listen || next.admin_listen != config_.admin_listen ||
        next.workers != config_.workers) {
      spdlog::warn("gateway: listen addresses and workers change only on restart");
    }
    if (next.kubernetes.enabled != config_.kubernetes.enabled) {
      spdlog::warn("gateway: discovery settings change only on restart");
    }
    applyFleet(next);
    scraper_.setInterval(next.scrape_interval);
    scraper_.setPolicy(next.scrape_policy);
    scraper_.sync(registry_.replicas());
    spdlog::info("gateway: reloaded: {} models, {} replicas", next.models.size(),
                 replicaCount(next));
    config_.models = next.models;
    config_.default_strategy = next.default_strategy;
    config_.auto_blend_load_balance_weight = next.auto_blend_load_balance_weight;
  }

  void beginShutdown() {
    if (shutting_down_) return;
    shutting_down_ = true;
    spdlog::info("gateway: shutting down, waiting for requests in flight");
    for (auto& worker : workers_) worker->beginShutdown();
    reload_timer_.cancel();
    capacity_timer_.cancel();
    health_timer_.cancel();
    shutdown_deadline_ = SteadyClock::instance().now() + config_.timeouts.shutdown_grace;
    pollDrained();
  }

  void pollDrained() {
    int64_t inflight = 0;
    for (auto& worker : workers_) inflight += worker->inflight();
    if (inflight == 0 || SteadyClock::instance().now() >= shutdown_deadline_) {
      if (inflight > 0) spdlog::warn("gateway: grace period over, {} requests cut", inflight);
      fleet_plane_->stop();
      state_sync_->stop();
      telemetry_share_->stop();
      // The other gateways stop counting this one's requests now, not a liveness period later.
      asio::co_spawn(io_, state_sync_->retire(), [this](std::exception_ptr) { finishShutdown(); });
      return;
    }
    shutdown_timer_.expires_after(std::chrono::milliseconds(20));
    shutdown_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) pollDrained();
    });
  }

  void finishShutdown() {
    scraper_.stopAll();
    health_.stopAll();
    load_monitor_->stop();
    if (optimizer_panel_) optimizer_panel_->stop();
    observe_->stopExporter();
    admin_->stop();
    signals_.cancel();
    io_.stop();
  }

  const GatewayOptions& options_;
  GatewayConfig config_;
  asio::io_context io_{1};
  fleet::FleetRegistry registry_;
  fleet::TelemetryScraper scraper_;
  fleet::CapacityTracker capacity_;
  asio::steady_timer capacity_timer_;
  health::HealthManager health_;
  asio::steady_timer health_timer_;
  asio::signal_set signals_;
  asio::steady_timer reload_timer_;
  asio::steady_timer shutdown_timer_;
  std::unique_ptr<SecurityPlane> security_;  // declared before admin_ and workers_: outlives them
  std::unique_ptr<AdminServer> admin_;
  std::unique_ptr<observe::Observability> observe_;  // declared before workers_: outlives them
  std::shared_ptr<state::SharedStateBackend> shared_backend_;  // outlives workers' clients
  std::unique_ptr<GatewayStateSync> state_sync_;
  std::unique_ptr<FleetPlane> fleet_plane_;
  std::unique_ptr<KvEventsPlane> kv_events_;  // before workers_: they read its hub
  WorkerDirectory directory_;  // declared before workers_: outlives them
  std::unique_ptr<GatewayLoadMonitor> load_monitor_;
  std::unique_ptr<OptimizerPanel> optimizer_panel_;
  std::unique_ptr<TelemetryShare> telemetry_share_;  // declared after scraper_: dies first
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  FileStamp stamp_;
  Readiness readiness_;
  bool shutting_down_ = false;
  TimeNs shutdown_deadline_ = 0;
};

}  // namespace

int runGateway(const GatewayOptions& options) {
  GatewayConfig config;
  try {
    config = loadConfigFile(options.config_path);
    if (!options.listen_override.empty()) config.listen = options.listen_override;
    if (!options.admin_listen_override.empty()) {
      config.admin_listen = options.admin_listen_override;
    }
    validateSecurity(config);  // the admin listener may have moved beyond loopback
  } catch (const std::exception& e) {
    spdlog::error("gateway: {}", e.what());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(config.observe.logging.level));
  try {
    ControlPlane control(options, std::move(config));
    return control.run();
  } catch (const std::exception& e) {
    spdlog::error("gateway: {}", e.what());
    return 1;
  }
}

}  // namespace switchyard::gateway
