// KvEventSubscriber: subscribes to the KV events of every replica that announces an endpoint
// (labels `kv_events` and `kv_events_replay`, docs/routing.md "prefix-cache (precise)"), keeps
// each replica's exact index (kv_event_tracker.h) and publishes them to the workers through an
// ExactIndexHub (exact_index.h).
//
// Control plane, not the hot path: one thread of its own runs every socket (libzmq sockets are
// not thread-safe): a SUB socket per replica, polled every poll_interval; a DEALER socket opened
// for each replay request to the replica's ROUTER replay endpoint (vLLM's protocol: send
// ["", start sequence as 8 bytes big-endian]; receive ["", sequence, payload] per buffered batch,
// then ["", -1, ""]). Snapshots are published at most every publish_interval, and only when an
// index changed, so a busy engine costs one table build per interval, not one per batch.
//
// setTargets() (any thread) replaces the set of subscriptions; the thread applies it at its next
// poll: new replicas are connected, gone ones closed and forgotten, unchanged ones kept.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "fleet/kv_index/exact_index.h"
#include "fleet/kv_index/kv_event_tracker.h"

namespace switchyard::fleet::kv_index {

struct KvEventTarget {
  std::string replica;              // its name, for metrics ("host:port")
  std::shared_ptr<const void> key;  // its ReplicaState: the snapshot's key, kept alive
  std::string endpoint;             // PUB endpoint, e.g. tcp://10.0.0.5:5557
  std::string replay_endpoint;      // ROUTER endpoint; "" none
  bool compatible = true;           // the gateway can compute this replica's block hashes
};

struct KvSubscriberOptions {
  uint32_t block_tokens = 16;
  TimeNs poll_interval = 20 * kNsPerMs;
  TimeNs publish_interval = 20 * kNsPerMs;
  TimeNs replay_timeout = 500 * kNsPerMs;
  TimeNs resync = 10 * kNsPerSec;  // kv_event_tracker.h
  std::string topic;               // subscription prefix; "" all topics
};

class KvEventSubscriber {
 public:
  KvEventSubscriber(ExactIndexHub& hub, KvSubscriberOptions options);
  ~KvEventSubscriber();  // stops and joins the thread
  KvEventSubscriber(const KvEventSubscriber&) = delete;
  KvEventSubscriber& operator=(const KvEventSubscriber&) = delete;

  void start();
  void stop();
  void setTargets(std::vector<KvEventTarget> targets);

  // Each subscribed replica's counters (shared: they outlive a later setTargets()).
  struct ReplicaStats {
    std::string replica;
    std::shared_ptr<const KvEventStats> stats;
  };
  std::vector<ReplicaStats> stats() const;

  // Test hook: the next `count` batches received from `replica` are dropped as if lost on the
  // network, so that the following one reveals a gap.
  void dropNext(const std::string& replica, int count);

 private:
  struct Subscription;
  void run();
  void applyTargets();
  void poll();
  void publishIfDue(TimeNs now, bool force);
  bool requestReplay(const std::string& endpoint, int64_t from,
                     std::vector<std::pair<int64_t, std::string>>& out);

  ExactIndexHub& hub_;
  KvSubscriberOptions options_;
  void* context_ = nullptr;  // zmq context
  std::thread thread_;
  std::atomic<bool> running_{false};

  mutable std::mutex mutex_;  // guards pending_, stats_, drops_; never held on I/O
  std::vector<KvEventTarget> pending_;
  bool pending_set_ = false;
  std::map<std::string, std::shared_ptr<KvEventStats>> stats_;  // by replica
  std::map<std::string, int> drops_;

  // Thread only.
  std::map<std::string, std::unique_ptr<Subscription>> subscriptions_;  // by replica
  TimeNs last_publish_ = 0;
  TimeNs last_collect_ = 0;
  bool changed_ = false;  // the set of usable replicas or an index changed since publishing
};

}  // namespace switchyard::fleet::kv_index
