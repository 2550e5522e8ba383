#include "gateway/upstream_pool.h"

namespace switchyard::gateway {

UpstreamPool::Stream UpstreamPool::take(const fleet::ReplicaState* replica, TimeNs now) {
  auto it = buckets_.find(replica);
  if (it == buckets_.end()) return nullptr;
  auto& idle = it->second.idle;
  while (!idle.empty()) {
    Idle entry = std::move(idle.back());
    idle.pop_back();
    if (now - entry.since < max_idle_ && entry.stream->socket().is_open()) {
      return std::move(entry.stream);
    }
    boost::system::error_code ignored;
    entry.stream->socket().close(ignored);
  }
  return nullptr;
}

void UpstreamPool::give(const std::shared_ptr<fleet::ReplicaState>& replica,
                        Stream stream, TimeNs now) {
  Bucket& bucket = buckets_[replica.get()];
  if (!bucket.replica) bucket.replica = replica;
  if (bucket.idle.size() >= max_per_replica_) {
    boost::system::error_code ignored;
    stream->socket().close(ignored);
    return;
  }
  bucket.idle.push_back(Idle{std::move(stream), now});
}

void UpstreamPool::sweep(TimeNs now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    auto& idle = it->second.idle;
    std::erase_if(idle, [&](Idle& entry) {
      if (now - entry.since < max_idle_) return false;
      boost::system::error_code ignored;
      entry.stream->socket().close(ignored);
      return true;
    });
    it = idle.empty() ? buckets_.erase(it) : std::next(it);
  }
}

size_t UpstreamPool::idleCount() const {
  size_t n = 0;
  for (const auto& [key, bucket] : buckets_) n += bucket.idle.size();
  return n;
}

}  // namespace switchyard::gateway
