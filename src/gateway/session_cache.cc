#include "gateway/session_cache.h"

namespace switchyard::gateway {

std::string& SessionCache::keyOf(std::string_view model, std::string_view session) {
  key_scratch_.assign(model);
  key_scratch_.push_back('\n');  // cannot occur in a model name or a header value
  key_scratch_.append(session);
  return key_scratch_;
}

std::string_view SessionCache::find(std::string_view model, std::string_view session,
                                    TimeNs now) {
  const auto it = index_.find(keyOf(model, session));
  if (it == index_.end()) return {};
  if (now - it->second->stored_at > fresh_for_) {
    order_.erase(it->second);
    index_.erase(it);
    return {};
  }
  return it->second->replica;
}

void SessionCache::store(std::string_view model, std::string_view session,
                         std::string_view replica, TimeNs now) {
  const std::string& key = keyOf(model, session);
  if (const auto it = index_.find(key); it != index_.end()) {
    it->second->replica.assign(replica);
    it->second->stored_at = now;
    order_.splice(order_.end(), order_, it->second);  // now the newest
    return;
  }
  while (!order_.empty() && index_.size() >= capacity_) {
    index_.erase(order_.front().key);
    order_.pop_front();
  }
  order_.push_back(Entry{key, std::string(replica), now});
  index_.emplace(order_.back().key, std::prev(order_.end()));
}

void SessionCache::erase(std::string_view model, std::string_view session) {
  const auto it = index_.find(keyOf(model, session));
  if (it == index_.end()) return;
  order_.erase(it->second);
  index_.erase(it);
}

}  // namespace switchyard::gateway
