// SessionCache: one worker's read-through cache of session pins (session id -> replica name),
// so that a session's requests on this gateway do not each wait on shared state. Entries live
// for a short time (`fresh_for`, far below the shared pin's TTL): a pin changed by another
// gateway (a re-pin after its replica went away) is seen within that time. Bounded: when full,
// the oldest entries go. Worker thread only.
#pragma once

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/clock.h"

namespace switchyard::gateway {

class SessionCache {
 public:
  SessionCache(size_t capacity, TimeNs fresh_for) : capacity_(capacity), fresh_for_(fresh_for) {}

  // The cached pin of (model, session), or "" when absent or no longer fresh.
  std::string_view find(std::string_view model, std::string_view session, TimeNs now);
  void store(std::string_view model, std::string_view session, std::string_view replica,
             TimeNs now);
  void erase(std::string_view model, std::string_view session);
  size_t size() const { return index_.size(); }

 private:
  struct Entry {
    std::string key;
    std::string replica;
    TimeNs stored_at;
  };
  std::string& keyOf(std::string_view model, std::string_view session);

  size_t capacity_;
  TimeNs fresh_for_;
  std::list<Entry> order_;  // oldest first
  std::unordered_map<std::string_view, std::list<Entry>::iterator> index_;
  std::string key_scratch_;
};

}  // namespace switchyard::gateway
