// In-flight slot leases: how a worker admits requests under a replica's in-flight limit shared
// with other gateways without a round trip to shared state per request.
//
// Each worker leases slots of the limit in shared state, a few ahead of its requests, and
// admits within them locally. Only a request that finds no free slot asks shared state for more
// (one call, which leases `lead` more ahead), and a request that ends gives slots back when more
// than twice the lead sits unused (down to the lead). A replica the worker stopped sending to
// keeps at most twice the lead, until a sweep finds it untouched since the previous one and
// gives those back too. Shared state grants a slot only while every live gateway's leases and
// request-by-request counts stay under the limit, so the limit holds across gateways exactly;
// the price is that slots leased ahead by one worker are not free for the others, which the
// lead bounds (an eighth of one worker's share of the limit at most).
//
// One table per worker, used from its thread only. Pure: no I/O, no clock.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <unordered_map>

namespace switchyard::admission {

class InflightSlots {
 public:
  struct Lease {
    int64_t held = 0;      // slots this worker leases in shared state
    int64_t used = 0;      // of which requests in flight hold one
    bool touched = false;  // a request took a slot since the last sweep
  };

  // Slots leased ahead of need: the configured lead, at most an eighth of one worker's share of
  // the limit (limit / (gateways × workers)), so unused leases never hold much of a small limit;
  // 0 leases exactly what requests use (one call per request past the free slots).
  static int64_t lead(int64_t limit, int live_gateways, int workers, int64_t configured) {
    const int64_t holders = static_cast<int64_t>(std::max(1, live_gateways)) * std::max(1, workers);
    return std::clamp<int64_t>(limit / (8 * holders), 0, std::max<int64_t>(0, configured));
  }

  // A free leased slot for a request: true if one was taken.
  bool take(std::string_view model, std::string_view replica) {
    Lease& lease = at(model, replica);
    if (lease.used >= lease.held) return false;
    ++lease.used;
    lease.touched = true;
    return true;
  }

  // Shared state leased `granted` (>= 1) more slots for a request, which takes one, and says the
  // worker's field now holds `held_in_shared`. Returns how many slots shared state lacks (it
  // lost them, e.g. restarted): the caller adds them back so the others count them again.
  int64_t granted(std::string_view model, std::string_view replica, int64_t granted,
                  int64_t held_in_shared) {
    Lease& lease = at(model, replica);
    lease.held += granted;
    ++lease.used;
    lease.touched = true;
    return std::max<int64_t>(0, lease.held - held_in_shared);
  }

  // A request holding a slot ended: the slots to give back now (0: keep them leased).
  int64_t put(std::string_view model, std::string_view replica, int64_t lead) {
    Lease& lease = at(model, replica);
    lease.used = std::max<int64_t>(0, lease.used - 1);
    const int64_t unused = lease.held - lease.used;
    // Hysteresis: slots go back only past twice the lead, down to the lead, so traffic that
    // swings by up to the lead leases nothing and returns nothing.
    const int64_t back = unused > 2 * lead ? unused - lead : 0;
    lease.held -= back;
    return back;
  }

  // Gives back every slot of leases with nothing in flight that no request touched since the
  // previous sweep: `give_back(model, replica, slots)`, and forgets them (replicas come and go).
  // Call it every second or so.
  template <class GiveBack>
  void sweep(GiveBack&& give_back) {
    for (auto m = leases_.begin(); m != leases_.end();) {
      auto& replicas = m->second;
      for (auto r = replicas.begin(); r != replicas.end();) {
        Lease& lease = r->second;
        if (lease.used == 0 && !lease.touched) {
          if (lease.held > 0)
            give_back(std::string_view(m->first), std::string_view(r->first), lease.held);
          r = replicas.erase(r);
          continue;
        }
        lease.touched = false;
        ++r;
      }
      m = replicas.empty() ? leases_.erase(m) : std::next(m);
    }
  }
  size_t replicasTracked() const {
    size_t n = 0;
    for (const auto& [model, replicas] : leases_) n += replicas.size();
    return n;
  }

  Lease lease(std::string_view model, std::string_view replica) const {
    const auto m = leases_.find(model);
    if (m == leases_.end()) return {};
    const auto r = m->second.find(replica);
    return r == m->second.end() ? Lease{} : r->second;
  }

 private:
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using ByName = std::unordered_map<std::string, V, NameHash, std::equal_to<>>;

  // Allocates only the first time a model or replica is seen.
  Lease& at(std::string_view model, std::string_view replica) {
    auto m = leases_.find(model);
    if (m == leases_.end()) m = leases_.emplace(std::string(model), ByName<Lease>{}).first;
    auto r = m->second.find(replica);
    if (r == m->second.end()) r = m->second.emplace(std::string(replica), Lease{}).first;
    return r->second;
  }

  ByName<ByName<Lease>> leases_;
};

}  // namespace switchyard::admission
