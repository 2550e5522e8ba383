// Reflector: keeps a local copy of one kind of object (Pods or Deployments) in one scope (a
// namespace, or the whole cluster) up to date, in client-go's shape:
//
//   list (paginated) ──► replace the store, remember the list's resourceVersion
//     └► watch from that resourceVersion with allowWatchBookmarks ──► apply each event,
//        advance the resourceVersion (bookmarks too); when the server ends the watch, watch
//        again from the last resourceVersion;
//   410 Gone (on the watch request, or as an ERROR event) ──► list again;
//   a failed list or watch ──► retry after an exponential backoff with jitter;
//   every `resync` ──► list again anyway (repairs anything a missed event could leave wrong).
//
// The store is only replaced by a complete list: a failed or malformed page leaves the last
// known objects in place, so a broken API server never empties the fleet. Runs on the control
// plane's io_context (one coroutine); no threads of its own. Control thread only.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/rng.h"
#include "fleet/discovery/kubernetes/api_client.h"
#include "fleet/discovery/kubernetes/kube_objects.h"

namespace switchyard::fleet::kubernetes {

struct ReflectorOptions {
  ResourceKind kind = ResourceKind::kPod;
  std::string path;            // "/api/v1/namespaces/NS/pods", "/apis/apps/v1/deployments", ...
  std::string label_selector;  // "" selects everything
  int64_t page_size = 500;     // list `limit`
  TimeNs request_timeout = 10 * kNsPerSec;  // one list page
  TimeNs watch_timeout = 300 * kNsPerSec;   // asked of the server (timeoutSeconds)
  TimeNs resync = 600 * kNsPerSec;          // full list again this often
  TimeNs backoff_min = 200 * kNsPerMs;
  TimeNs backoff_max = 30 * kNsPerSec;
};

struct ReflectorStats {
  int64_t lists = 0;          // complete lists
  int64_t list_failures = 0;  // lists abandoned (transport, HTTP error, malformed page)
  int64_t watches = 0;        // watch streams established
  int64_t watch_failures = 0; // watch requests that failed or broke
  int64_t expired = 0;        // 410 Gone: the resourceVersion was too old, listed again
  int64_t events = 0;         // ADDED / MODIFIED / DELETED applied
  int64_t bookmarks = 0;
  int64_t parse_errors = 0;   // malformed events or pages
  int64_t unauthorized = 0;   // 401 / 403 answers
};

// The store: the objects by "namespace/name". Readers on the control thread only.
struct ObjectStore {
  std::map<std::string, PodInfo> pods;
  std::map<std::string, DeploymentInfo> deployments;
  uint64_t version = 0;  // bumped on every change
};

class Reflector {
 public:
  // `on_change` runs (on the io_context) after the store changed: a list replaced it or an event
  // was applied.
  Reflector(boost::asio::io_context& io, ApiClient& client, ReflectorOptions options,
            std::function<void()> on_change, uint64_t seed);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void start();
  void stop();

  const ObjectStore& store() const { return store_; }
  const ReflectorStats& stats() const { return stats_; }
  const ReflectorOptions& options() const { return options_; }
  // True once a list has completed (the store reflects the server at least once).
  bool synced() const { return synced_; }
  // True while a watch stream is established (or a list just completed and the watch is being
  // opened). When false, unhealthySince() is when it stopped being healthy.
  bool healthy() const { return healthy_; }
  TimeNs unhealthySince() const { return unhealthy_since_; }
  const std::string& resourceVersion() const { return resource_version_; }
  const std::string& lastError() const { return last_error_; }

 private:
  // `alive` is a parameter, copied when the coroutine is made: its first step runs later, when
  // the Reflector may already be gone.
  boost::asio::awaitable<void> run(std::shared_ptr<bool> alive);
  boost::asio::awaitable<bool> list();
  boost::asio::awaitable<void> sleep(TimeNs delay);
  TimeNs nextBackoff();
  void markHealthy(bool healthy, const std::string& error = {});
  bool applyLine(std::string_view line, bool& relist);
  std::string query(bool watch, const std::string& continue_token, TimeNs watch_timeout = 0) const;

  boost::asio::io_context& io_;
  ApiClient& client_;
  ReflectorOptions options_;
  std::function<void()> on_change_;
  Rng rng_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<bool> alive_;  // false once stopped; shared with the coroutine
  ObjectStore store_;
  ReflectorStats stats_;
  std::string resource_version_;
  std::string last_error_;
  bool synced_ = false;
  bool healthy_ = false;
  TimeNs unhealthy_since_ = 0;
  int failures_ = 0;  // consecutive, for the backoff
};

}  // namespace switchyard::fleet::kubernetes
