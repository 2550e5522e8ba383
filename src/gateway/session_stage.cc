#include "gateway/session_stage.h"

namespace switchyard::gateway {
namespace {

constexpr size_t kSessionCacheEntries = 65536;  // per worker
constexpr TimeNs kSessionCacheFresh = 5 * kNsPerSec;

}  // namespace

SessionStage::SessionStage(const SessionAffinityConfig& config, state::SharedStateClient& shared,
                           SharedStateNotice& notice)
    : config_(config),
      shared_(shared),
      notice_(notice),
      cache_(kSessionCacheEntries, kSessionCacheFresh) {}

boost::asio::awaitable<void> SessionStage::findPin(std::string_view model,
                                                   std::string_view session, TimeNs now,
                                                   std::string& pin) {
  const std::string_view cached = cache_.find(model, session, now);
  if (!cached.empty()) {
    pin.assign(cached);
    co_return;
  }
  const state::SessionPin found = co_await shared_.lookupSession(model, session, config_.ttl);
  notice_.note(found.degraded);
  pin = found.replica;
  if (!pin.empty()) cache_.store(model, session, pin, now);
}

boost::asio::awaitable<void> SessionStage::pinTo(std::string_view model, std::string_view session,
                                                 std::string_view chosen, TimeNs now,
                                                 std::string& pin) {
  const state::SessionPin result =
      co_await shared_.pinSession(model, session, pin, chosen, config_.ttl);
  notice_.note(result.degraded);
  if (result.degraded || result.replica.empty()) {
    pin.assign(chosen);
  } else {
    pin = result.replica;
  }
  cache_.store(model, session, pin, now);
}

}  // namespace switchyard::gateway
