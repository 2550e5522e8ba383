#include "fleet/kv_index/kv_event_subscriber.h"

#include <spdlog/spdlog.h>
#include <zmq.h>

#include <array>
#include <chrono>
#include <set>

namespace switchyard::fleet::kv_index {
namespace {

// One received frame; released on scope exit.
struct Frame {
  zmq_msg_t msg;
  Frame() { zmq_msg_init(&msg); }
  ~Frame() { zmq_msg_close(&msg); }
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;
  std::string_view view() {
    return {static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg)};
  }
};

bool more(void* socket) {
  int value = 0;
  size_t size = sizeof(value);
  return zmq_getsockopt(socket, ZMQ_RCVMORE, &value, &size) == 0 && value != 0;
}

// Receives one multipart message (up to 4 frames kept; more are drained). Non-blocking unless
// `flags` is 0. Returns the number of frames, 0 when nothing was there or on error.
size_t receiveMessage(void* socket, std::array<std::string, 4>& frames, int flags) {
  size_t n = 0;
  for (;;) {
    Frame frame;
    if (zmq_msg_recv(&frame.msg, socket, flags) < 0) return n;  // EAGAIN, or torn down
    if (n < frames.size()) frames[n].assign(frame.view());
    ++n;
    if (!more(socket)) return n;
    flags = 0;  // the rest of a message is already there
  }
}

void setInt(void* socket, int option, int value) {
  zmq_setsockopt(socket, option, &value, sizeof(value));
}

TimeNs nowNs() { return SteadyClock::instance().now(); }

}  // namespace

struct KvEventSubscriber::Subscription {
  KvEventTarget target;
  void* sub = nullptr;
  std::unique_ptr<ReplicaKvTracker> tracker;
  bool was_usable = false;
  std::shared_ptr<const BlockTable> table;  // the last one built
  ~Subscription() {
    if (sub != nullptr) zmq_close(sub);
  }
};

KvEventSubscriber::KvEventSubscriber(ExactIndexHub& hub, KvSubscriberOptions options)
    : hub_(hub), options_(std::move(options)), context_(zmq_ctx_new()) {}

KvEventSubscriber::~KvEventSubscriber() {
  stop();
  subscriptions_.clear();
  if (context_ != nullptr) zmq_ctx_term(context_);
}

void KvEventSubscriber::start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { run(); });
}

void KvEventSubscriber::stop() {
  running_.store(false);
  if (thread_.joinable()) thread_.join();
}

void KvEventSubscriber::setTargets(std::vector<KvEventTarget> targets) {
  const std::lock_guard lock(mutex_);
  pending_ = std::move(targets);
  pending_set_ = true;
}

std::vector<KvEventSubscriber::ReplicaStats> KvEventSubscriber::stats() const {
  const std::lock_guard lock(mutex_);
  std::vector<ReplicaStats> out;
  out.reserve(stats_.size());
  for (const auto& [replica, stats] : stats_) out.push_back({replica, stats});
  return out;
}

void KvEventSubscriber::dropNext(const std::string& replica, int count) {
  const std::lock_guard lock(mutex_);
  drops_[replica] += count;
}

void KvEventSubscriber::applyTargets() {
  std::vector<KvEventTarget> targets;
  {
    const std::lock_guard lock(mutex_);
    if (!pending_set_) return;
    targets = std::move(pending_);
    pending_set_ = false;
  }
  std::set<std::string> live;
  for (KvEventTarget& target : targets) {
    live.insert(target.replica);
    auto it = subscriptions_.find(target.replica);
    if (it != subscriptions_.end()) {
      const KvEventTarget& had = it->second->target;
      if (had.endpoint == target.endpoint && had.replay_endpoint == target.replay_endpoint &&
          had.key == target.key && had.compatible == target.compatible) {
        continue;
      }
      subscriptions_.erase(it);
    }
    auto sub = std::make_unique<Subscription>();
    sub->sub = zmq_socket(context_, ZMQ_SUB);
    if (sub->sub == nullptr) continue;
    setInt(sub->sub, ZMQ_LINGER, 0);
    setInt(sub->sub, ZMQ_RCVHWM, 100000);
    zmq_setsockopt(sub->sub, ZMQ_SUBSCRIBE, options_.topic.data(), options_.topic.size());
    if (zmq_connect(sub->sub, target.endpoint.c_str()) != 0) {
      spdlog::warn("kv events: cannot connect to {} for {}: {}", target.endpoint, target.replica,
                   zmq_strerror(zmq_errno()));
      continue;
    }
    sub->tracker = std::make_unique<ReplicaKvTracker>(options_.block_tokens, options_.resync);
    sub->target = std::move(target);
    {
      const std::lock_guard lock(mutex_);
      stats_[sub->target.replica] = sub->tracker->sharedStats();
    }
    spdlog::info("kv events: subscribed to {} ({})", sub->target.replica, sub->target.endpoint);
    subscriptions_[sub->target.replica] = std::move(sub);
    changed_ = true;
  }
  for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
    if (live.contains(it->first)) {
      ++it;
      continue;
    }
    {
      const std::lock_guard lock(mutex_);
      stats_.erase(it->first);
    }
    it = subscriptions_.erase(it);
    changed_ = true;
  }
}

void KvEventSubscriber::poll() {
  std::vector<zmq_pollitem_t> items;
  std::vector<Subscription*> order;
  items.reserve(subscriptions_.size());
  for (auto& [replica, sub] : subscriptions_) {
    items.push_back({sub->sub, 0, ZMQ_POLLIN, 0});
    order.push_back(sub.get());
  }
  const long timeout_ms = static_cast<long>(options_.poll_interval / kNsPerMs);
  if (items.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return;
  }
  if (zmq_poll(items.data(), static_cast<int>(items.size()), timeout_ms) <= 0) return;
  std::array<std::string, 4> frames;
  for (size_t i = 0; i < items.size(); ++i) {
    if ((items[i].revents & ZMQ_POLLIN) == 0) continue;
    Subscription& sub = *order[i];
    const ReplayFn replay =
        sub.target.replay_endpoint.empty() ? ReplayFn() : ReplayFn([&](int64_t from, auto& out) {
          return requestReplay(sub.target.replay_endpoint, from, out);
        });
    // A bounded number per poll, so that one busy engine does not starve the others.
    for (int k = 0; k < 1024; ++k) {
      const size_t n = receiveMessage(sub.sub, frames, ZMQ_DONTWAIT);
      if (n == 0) break;
      if (n != 3) continue;  // not a KV-event message
      const std::optional<int64_t> seq = decodeSequence(frames[1]);
      if (!seq) continue;
      {
        const std::lock_guard lock(mutex_);
        auto drop = drops_.find(sub.target.replica);
        if (drop != drops_.end() && drop->second > 0) {
          --drop->second;
          continue;
        }
      }
      sub.tracker->receive(*seq, frames[2], replay, nowNs());
    }
  }
}

bool KvEventSubscriber::requestReplay(const std::string& endpoint, int64_t from,
                                      std::vector<std::pair<int64_t, std::string>>& out) {
  out.clear();
  void* dealer = zmq_socket(context_, ZMQ_DEALER);
  if (dealer == nullptr) return false;
  setInt(dealer, ZMQ_LINGER, 0);
  bool ok = false;
  if (zmq_connect(dealer, endpoint.c_str()) == 0) {
    const std::string start = encodeSequence(from);
    if (zmq_send(dealer, "", 0, ZMQ_SNDMORE) >= 0 &&
        zmq_send(dealer, start.data(), start.size(), 0) >= 0) {
      const TimeNs deadline = nowNs() + options_.replay_timeout;
      std::array<std::string, 4> frames;
      for (;;) {
        const TimeNs left = deadline - nowNs();
        if (left <= 0) break;
        zmq_pollitem_t item{dealer, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&item, 1, static_cast<long>(left / kNsPerMs) + 1) <= 0) break;
        const size_t n = receiveMessage(dealer, frames, ZMQ_DONTWAIT);
        if (n != 3) continue;  // ["", seq, payload]
        const std::optional<int64_t> seq = decodeSequence(frames[1]);
        if (!seq) continue;
        if (*seq == -1) {
          ok = true;
          break;
        }
        out.emplace_back(*seq, frames[2]);
      }
    }
  }
  zmq_close(dealer);
  return ok;
}

void KvEventSubscriber::publishIfDue(TimeNs now, bool force) {
  for (auto& [replica, sub] : subscriptions_) {
    const bool usable = sub->target.compatible && sub->tracker->usable(now);
    sub->tracker->setExact(usable);
    if (usable != sub->was_usable) {
      sub->was_usable = usable;
      changed_ = true;
    }
  }
  if (!changed_ && !force) {
    // Index changes alone wait for the interval.
    bool dirty = false;
    for (auto& [replica, sub] : subscriptions_) dirty = dirty || sub->tracker->dirtyPending();
    if (!dirty) return;
  }
  if (!force && now - last_publish_ < options_.publish_interval) return;
  auto snapshot = std::make_shared<ExactIndexSnapshot>();
  for (auto& [replica, sub] : subscriptions_) {
    if (sub->tracker->takeDirty() || !sub->table) {
      sub->table = std::make_shared<const BlockTable>(sub->tracker->blocks());
    }
    if (sub->was_usable && sub->target.key) {
      snapshot->replicas.emplace(sub->target.key.get(), sub->table);
    }
  }
  hub_.publish(std::move(snapshot));
  last_publish_ = now;
  changed_ = false;
}

void KvEventSubscriber::run() {
  while (running_.load()) {
    applyTargets();
    poll();
    const TimeNs now = nowNs();
    publishIfDue(now, false);
    if (now - last_collect_ > kNsPerSec) {
      hub_.collectRetired();
      last_collect_ = now;
    }
  }
  subscriptions_.clear();
}

}  // namespace switchyard::fleet::kv_index
