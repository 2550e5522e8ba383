#include "gateway/load_monitor.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "fleet/fleet_registry.h"
#include "gateway/config_values.h"
#include "observe/observer.h"
#include "state/redis/blocking_redis.h"

namespace switchyard::gateway {
namespace {

int64_t unixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Adds an interval's counts to the AIBrix trace already stored by other gateways (or stores it),
// keeping the meta fields, with the key's expiry.
constexpr const char* kMergeTraceScript = R"lua(
local add = cjson.decode(ARGV[1])
local cur = redis.call('GET', KEYS[1])
if cur then
  local ok, old = pcall(cjson.decode, cur)
  if ok and type(old) == 'table' then
    for k, v in pairs(add) do
      if string.sub(k, 1, 5) ~= 'meta_' or k == 'meta_total_reqs' or k == 'meta_pending_reqs'
          or k == 'meta_queueing_reqs' then
        add[k] = (tonumber(old[k]) or 0) + v
      end
    end
    for k, v in pairs(old) do
      if add[k] == nil then add[k] = v end
    end
  end
end
redis.call('SET', KEYS[1], cjson.encode(add), 'EX', ARGV[2])
return 1
)lua";

}  // namespace

// Publishes closed intervals to Redis from its own thread; a bounded queue (the oldest job is
// dropped when Redis cannot keep up) and one blocking connection with short timeouts.
class LoadPublisher {
 public:
  LoadPublisher(state::redis::RedisUrl url, LoadMonitorConfig config, std::string gateway_id)
      : url_(std::move(url)),
        config_(std::move(config)),
        gateway_id_(std::move(gateway_id)),
        thread_([this] { run(); }) {}
  ~LoadPublisher() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void publish(observe::LoadInterval interval) {
    {
      std::lock_guard lock(mutex_);
      if (queue_.size() >= 64) {
        queue_.pop_front();
        failures_.fetch_add(1, std::memory_order_relaxed);
      }
      queue_.push_back(std::move(interval));
    }
    wake_.notify_one();
  }
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  void run() {
    state::redis::BlockingRedis redis;
    for (;;) {
      observe::LoadInterval job;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      if (!send(redis, job)) {
        failures_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("load monitor: publishing {} interval {} failed: {}", job.model, job.start,
                     redis.error());
      }
    }
  }

  bool send(state::redis::BlockingRedis& redis, const observe::LoadInterval& job) {
    if (!redis.connected() && !redis.connect(url_, 500 * kNsPerMs)) return false;
    const std::string ttl = std::to_string(std::max<TimeNs>(1, config_.retention / kNsPerSec));
    if (config_.switchyard_layout) {
      const std::string key = observe::switchyardLoadKey(config_.key_prefix, job.model, job.start);
      auto set = redis.command({"HSET", key, gateway_id_, observe::loadIntervalJson(job)});
      auto expire = set ? redis.command({"EXPIRE", key, ttl}) : std::nullopt;
      if (!set || !expire || set->type == state::redis::RedisValue::Type::kError) return false;
    }
    if (config_.aibrix_layout) {
      auto merged = redis.command({"EVAL", kMergeTraceScript, "1",
                                   observe::aibrixTraceKey(job.model, job.start),
                                   observe::aibrixTraceJson(job), ttl});
      if (!merged || merged->type == state::redis::RedisValue::Type::kError) return false;
    }
    return true;
  }

  state::redis::RedisUrl url_;
  LoadMonitorConfig config_;
  std::string gateway_id_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<observe::LoadInterval> queue_;
  bool stopping_ = false;
  std::atomic<uint64_t> failures_{0};
  std::thread thread_;
};

void parseLoadMonitor(const YAML::Node& node, LoadMonitorConfig& config) {
  if (!node.IsMap()) throw ConfigError("load_monitor: must be a mapping");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    const std::string full = "load_monitor." + key;
    const YAML::Node v = it->second;
    if (key == "enabled") {
      config.enabled = scalar<bool>(v, full);
    } else if (key == "interval") {
      config.interval = static_cast<TimeNs>(number(v, full, 1, 3600)) * kNsPerSec;
    } else if (key == "retention") {
      config.retention = static_cast<TimeNs>(number(v, full, 10, 7 * 86400)) * kNsPerSec;
    } else if (key == "redis") {
      config.redis = scalar<std::string>(v, full);
      std::string error;
      if (!config.redis.empty() && !state::redis::RedisUrl::parse(config.redis, &error)) {
        throw ConfigError(full + ": " + error);
      }
    } else if (key == "layouts") {
      if (!v.IsSequence()) throw ConfigError(full + ": must be a list (switchyard, aibrix)");
      config.switchyard_layout = false;
      config.aibrix_layout = false;
      for (const auto& item : v) {
        const std::string layout = scalar<std::string>(item, full);
        if (layout == "switchyard")
          config.switchyard_layout = true;
        else if (layout == "aibrix")
          config.aibrix_layout = true;
        else
          throw ConfigError(full + ": '" + layout + "' is not a layout (switchyard, aibrix)");
      }
    } else if (key == "optimizer_url") {
      config.optimizer_url = scalar<std::string>(v, full);
      std::string host;
      uint16_t port = 0;
      if (!config.optimizer_url.empty() && !fleet::splitHttpUrl(config.optimizer_url, host, port)) {
        throw ConfigError(full + ": must look like http://HOST:PORT");
      }
    } else if (key == "key_prefix") {
      config.key_prefix = scalar<std::string>(v, full);
      if (config.key_prefix.empty() || config.key_prefix.find_first_of("{}") != std::string::npos) {
        throw ConfigError(full + ": must be non-empty and without braces");
      }
    } else {
      throw ConfigError(full + ": unknown key");
    }
  }
  if (config.retention < config.interval) {
    throw ConfigError("load_monitor.retention: must be at least one interval");
  }
}

GatewayLoadMonitor::GatewayLoadMonitor(boost::asio::io_context& io, observe::Observability& observe,
                                       const fleet::FleetRegistry& registry,
                                       LoadMonitorConfig config, std::string gateway_id)
    : io_(io),
      observe_(observe),
      registry_(registry),
      config_(std::move(config)),
      gateway_id_(std::move(gateway_id)),
      timer_(io) {
  if (!config_.redis.empty()) {
    std::string error;
    if (auto url = state::redis::RedisUrl::parse(config_.redis, &error)) {
      publisher_ = std::make_unique<LoadPublisher>(*url, config_, gateway_id_);
    }
  }
}

GatewayLoadMonitor::~GatewayLoadMonitor() = default;

uint64_t GatewayLoadMonitor::publishFailures() const {
  return publisher_ ? publisher_->failures() : 0;
}

void GatewayLoadMonitor::start() {
  if (!config_.enabled) return;
  // The counts so far belong to no interval: start from here.
  const auto snapshot = registry_.latest();
  for (const fleet::ModelEntry& model : snapshot->models) {
    previous_[model.name] = observe_.loadTotals(observe_.metrics().modelSlot(model.name));
  }
  schedule();
}

void GatewayLoadMonitor::stop() {
  stopped_ = true;
  timer_.cancel();
}

void GatewayLoadMonitor::schedule() {
  const int64_t interval_s = std::max<TimeNs>(1, config_.interval / kNsPerSec);
  const int64_t now = unixNowNs();
  const int64_t boundary = (now / kNsPerSec / interval_s + 1) * interval_s;
  timer_.expires_after(std::chrono::nanoseconds(boundary * kNsPerSec - now));
  timer_.async_wait([this, boundary](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    closeInterval(boundary);
    schedule();
  });
}

void GatewayLoadMonitor::closeInterval(int64_t boundary) {
  const int interval_s = static_cast<int>(std::max<TimeNs>(1, config_.interval / kNsPerSec));
  const auto snapshot = registry_.latest();
  for (const fleet::ModelEntry& model : snapshot->models) {
    observe::LoadTotals now = observe_.loadTotals(observe_.metrics().modelSlot(model.name));
    observe::LoadTotals& before = previous_[model.name];
    observe::LoadInterval interval;
    interval.model = model.name;
    interval.gateway = gateway_id_;
    interval.start = boundary - interval_s;
    interval.interval_s = interval_s;
    // Unsigned differences: right across a counter's wrap-around too.
    for (int c = 0; c < observe::kShapeCells; ++c) {
      const uint32_t n = now.cells[c] - before.cells[c];
      if (n == 0) continue;
      interval.cells.push_back({c / observe::kOutputBuckets, c % observe::kOutputBuckets, n});
      interval.completed += n;
    }
    interval.failed = now.failed - before.failed;
    interval.rejected = now.rejected - before.rejected;
    for (const fleet::ReplicaEntry& replica : model.replicas) {
      interval.queued += static_cast<uint64_t>(
          std::max<int64_t>(0, replica.state->counters().running.load(std::memory_order_relaxed)));
    }
    before = std::move(now);
    if (interval.demand() == 0 && interval.queued == 0) continue;
    ++closed_;
    if (publisher_) publisher_->publish(interval);
    recent_.push_back(std::move(interval));
  }
  const int64_t keep_from = boundary - config_.retention / kNsPerSec;
  while (!recent_.empty() && recent_.front().start < keep_from) recent_.pop_front();
}

std::string GatewayLoadMonitor::recentJson(std::string_view model, int64_t since) const {
  std::string out = "[";
  bool first = true;
  for (const observe::LoadInterval& interval : recent_) {
    if (interval.start < since || (!model.empty() && interval.model != model)) continue;
    if (!first) out += ',';
    out += observe::loadIntervalJson(interval);
    first = false;
  }
  out += "]";
  return out;
}

}  // namespace switchyard::gateway
