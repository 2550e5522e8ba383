#include "fleet/discovery/kubernetes/reflector.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace switchyard::fleet::kubernetes {

namespace asio = boost::asio;

namespace {
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
TimeNs now() { return SteadyClock::instance().now(); }

std::string statusMessage(const std::string& body) {
  int code = 0;
  std::string message;
  if (parseStatus(body, code, message) && !message.empty()) return message;
  return body.substr(0, 200);
}

const char* kindName(ResourceKind kind) {
  return kind == ResourceKind::kPod ? "pods" : "deployments";
}
}  // namespace

Reflector::Reflector(asio::io_context& io, ApiClient& client, ReflectorOptions options,
                     std::function<void()> on_change, uint64_t seed)
    : io_(io),
      client_(client),
      options_(std::move(options)),
      on_change_(std::move(on_change)),
      rng_(seed),
      timer_(io),
      alive_(std::make_shared<bool>(false)) {
  unhealthy_since_ = now();
}

Reflector::~Reflector() { stop(); }

void Reflector::start() {
  if (*alive_) return;
  *alive_ = true;
  asio::co_spawn(io_, run(alive_), asio::detached);
}

void Reflector::stop() {
  *alive_ = false;
  timer_.cancel();
}

std::string Reflector::query(bool watch, const std::string& continue_token,
                             TimeNs watch_timeout) const {
  std::string target = options_.path;
  char sep = '?';
  auto add = [&](std::string_view key, std::string_view value) {
    target.push_back(sep);
    sep = '&';
    target.append(key).push_back('=');
    target.append(urlEncode(value));
  };
  if (!options_.label_selector.empty()) add("labelSelector", options_.label_selector);
  if (watch) {
    add("watch", "1");
    add("allowWatchBookmarks", "true");
    add("resourceVersion", resource_version_);
    const TimeNs seconds = std::max<TimeNs>(1, watch_timeout / kNsPerSec);
    add("timeoutSeconds", std::to_string(seconds));
  } else {
    add("limit", std::to_string(options_.page_size));
    if (!continue_token.empty()) add("continue", continue_token);
  }
  return target;
}

TimeNs Reflector::nextBackoff() {
  // Exponential, capped, with "equal jitter": half fixed, half random, so that gateways that
  // lost the API server together do not come back in lockstep.
  const int shift = std::min(failures_, 30);
  ++failures_;
  const double base = std::min(static_cast<double>(options_.backoff_max),
                               static_cast<double>(options_.backoff_min) * double(1 << shift));
  return static_cast<TimeNs>(base / 2 + rng_.uniform01() * base / 2);
}

asio::awaitable<void> Reflector::sleep(TimeNs delay) {
  timer_.expires_after(std::chrono::nanoseconds(delay));
  co_await timer_.async_wait(kTuple);
}

void Reflector::markHealthy(bool healthy, const std::string& error) {
  if (!error.empty()) {
    if (error != last_error_) {
      spdlog::warn("kubernetes: {} {}: {}", kindName(options_.kind), options_.path, error);
    }
    last_error_ = error;
  }
  if (healthy == healthy_) return;
  healthy_ = healthy;
  if (!healthy) {
    unhealthy_since_ = now();
  } else {
    if (!last_error_.empty()) {
      spdlog::info("kubernetes: {} {}: connected again", kindName(options_.kind), options_.path);
    }
    last_error_.clear();
  }
}

asio::awaitable<bool> Reflector::list() {
  const auto alive = alive_;
  std::map<std::string, PodInfo> pods;
  std::map<std::string, DeploymentInfo> deployments;
  std::string continue_token;
  std::string version;
  do {
    const ApiResponse response = co_await client_.request(
        ApiMethod::kGet, query(false, continue_token), {}, {}, options_.request_timeout);
    if (!*alive) co_return false;
    if (response.status != 200) {
      ++stats_.list_failures;
      if (response.status == 401 || response.status == 403) ++stats_.unauthorized;
      markHealthy(false, response.status == 0
                             ? "list failed: " + response.error
                             : "list answered " + std::to_string(response.status) + ": " +
                                   statusMessage(response.body));
      co_return false;
    }
    ListPage page;
    if (const ParseStatus status = parseList(response.body, options_.kind, page); !status.ok()) {
      ++stats_.list_failures;
      ++stats_.parse_errors;
      markHealthy(false, "malformed list: " + status.message);
      co_return false;
    }
    for (PodInfo& pod : page.pods) pods.insert_or_assign(pod.key(), std::move(pod));
    for (DeploymentInfo& d : page.deployments) deployments.insert_or_assign(d.key(), std::move(d));
    version = std::move(page.resource_version);
    continue_token = std::move(page.continue_token);
  } while (!continue_token.empty());
  store_.pods = std::move(pods);
  store_.deployments = std::move(deployments);
  ++store_.version;
  resource_version_ = std::move(version);
  synced_ = true;
  ++stats_.lists;
  failures_ = 0;
  markHealthy(true);
  on_change_();
  co_return true;
}

bool Reflector::applyLine(std::string_view line, bool& relist) {
  WatchEvent event;
  if (const ParseStatus status = parseWatchEvent(line, options_.kind, event); !status.ok()) {
    // An event we cannot read may have changed anything: list again rather than guess.
    ++stats_.parse_errors;
    last_error_ = "malformed watch event: " + status.message;
    spdlog::warn("kubernetes: {} {}: {}", kindName(options_.kind), options_.path, last_error_);
    relist = true;
    return false;
  }
  switch (event.type) {
    case WatchEventType::kBookmark:
      ++stats_.bookmarks;
      resource_version_ = std::move(event.resource_version);
      return true;
    case WatchEventType::kError:
      if (event.status_code == 410) {
        relist = true;
      } else {
        markHealthy(false, "watch error " + std::to_string(event.status_code) + ": " +
                               event.message);
      }
      return false;
    case WatchEventType::kAdded:
    case WatchEventType::kModified:
    case WatchEventType::kDeleted:
      break;
  }
  ++stats_.events;
  const bool deleted = event.type == WatchEventType::kDeleted;
  if (event.pod) {
    const std::string key = event.pod->key();
    if (deleted) {
      store_.pods.erase(key);
    } else {
      store_.pods.insert_or_assign(key, std::move(*event.pod));
    }
  } else if (event.deployment) {
    const std::string key = event.deployment->key();
    if (deleted) {
      store_.deployments.erase(key);
    } else {
      store_.deployments.insert_or_assign(key, std::move(*event.deployment));
    }
  }
  if (!event.resource_version.empty()) resource_version_ = std::move(event.resource_version);
  ++store_.version;
  on_change_();
  return true;
}

asio::awaitable<void> Reflector::run(std::shared_ptr<bool> alive) {
  while (*alive) {
    if (!co_await list()) {
      if (!*alive) co_return;
      co_await sleep(nextBackoff());
      continue;
    }
    const TimeNs listed_at = now();
    bool relist = false;
    while (*alive && !relist) {
      const TimeNs left = options_.resync - (now() - listed_at);
      if (left <= 0) break;  // periodic resync: list again
      const TimeNs timeout = std::min(options_.watch_timeout, left);
      const TimeNs started = now();
      const std::string target = query(true, {}, timeout);
      // The handlers check `alive`: a stopped Reflector may already be destroyed. They are named
      // values, not temporaries of the co_await expression: g++ 12 destroys such temporaries
      // twice, which would release `alive` once too often.
      LineHandler on_line = [this, alive, &relist](std::string_view line) {
        return *alive && applyLine(line, relist);
      };
      EstablishedHandler on_established = [this, alive] {
        if (!*alive) return;
        ++stats_.watches;
        failures_ = 0;
        markHealthy(true);
      };
      const WatchResult result =
          co_await client_.watch(target, std::move(on_line), std::move(on_established),
                                 options_.request_timeout, timeout + 30 * kNsPerSec);
      if (!*alive || result.end == WatchEnd::kCancelled) co_return;
      if (relist) {
        ++stats_.expired;
        break;
      }
      switch (result.end) {
        case WatchEnd::kServerClosed:
          // The server's timeout: watch again at once from where we are. A server that closes
          // at once, again and again, is treated as failing (no busy loop).
          if (result.lines > 0 || now() - started >= kNsPerSec) continue;
          ++stats_.watch_failures;
          break;
        case WatchEnd::kHttpError:
          if (result.status == 410) {
            ++stats_.expired;
            relist = true;
            continue;
          }
          ++stats_.watch_failures;
          if (result.status == 401 || result.status == 403) ++stats_.unauthorized;
          markHealthy(false, "watch answered " + std::to_string(result.status) + ": " +
                                 statusMessage(result.body));
          break;
        case WatchEnd::kStopped:  // an ERROR event other than 410
          ++stats_.watch_failures;
          break;
        default:
          ++stats_.watch_failures;
          markHealthy(false, "watch failed: " + result.error);
          break;
      }
      co_await sleep(nextBackoff());
    }
  }
}

}  // namespace switchyard::fleet::kubernetes
