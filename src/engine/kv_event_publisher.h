// KvEventPublisher: the engine emulator's KV-cache events, published as vLLM's ZMQ publisher
// does (vllm/distributed/kv_events.py): a PUB socket sends [topic, sequence (8 bytes big-endian,
// from 0), MessagePack EventBatch] per batch, and an optional ROUTER replay endpoint answers
// ["", start sequence] with ["", sequence, payload] for every buffered batch from `start` on,
// then ["", -1, ""]. Encoding: fleet/kv_index/kv_event_decoder.h (map or array events).
//
// The engine's step loop calls publish() once per step with that step's events: a move into a
// queue under a mutex, nothing else. A thread of its own encodes, sends, keeps the replay buffer
// (the last buffer_batches batches) and serves replay requests, so publishing never makes a step
// wait on the network.
#pragma once

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fleet/kv_index/kv_event_decoder.h"

namespace switchyard::engine {

struct KvPublisherOptions {
  std::string endpoint;         // bound, e.g. tcp://127.0.0.1:5557 (port * : chosen by the OS)
  std::string replay_endpoint;  // bound ROUTER; "" none
  fleet::kv_index::KvEventEncoding encoding = fleet::kv_index::KvEventEncoding::kMap;
  std::string topic;
  size_t buffer_batches = 10000;  // as vLLM's buffer_steps
};

class KvEventPublisher {
 public:
  // Binds both sockets; throws std::runtime_error naming the endpoint on failure (start-up).
  explicit KvEventPublisher(KvPublisherOptions options);
  ~KvEventPublisher();
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  // Any one thread (the step loop): queues one batch of events stamped `ts` (unix seconds).
  void publish(std::vector<fleet::kv_index::KvEvent> events, double ts);

  // The bound endpoints (the OS's port when * was asked).
  const std::string& endpoint() const { return bound_; }
  const std::string& replayEndpoint() const { return replay_bound_; }

 private:
  void run();
  void serveReplay();

  KvPublisherOptions options_;
  void* context_ = nullptr;
  void* pub_ = nullptr;
  void* router_ = nullptr;
  std::string bound_;
  std::string replay_bound_;
  std::thread thread_;
  std::atomic<bool> running_{true};
  std::mutex mutex_;  // guards queue_
  std::vector<fleet::kv_index::KvEventBatch> queue_;
  // Thread only.
  int64_t next_seq_ = 0;
  std::deque<std::pair<int64_t, std::string>> buffer_;
};

}  // namespace switchyard::engine
