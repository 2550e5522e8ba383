#include "state/shared_state.h"

#include <fmt/format.h>

#include <random>
#include <utility>

#include "state/memory_state.h"
#include "state/redis/redis_backend.h"

namespace switchyard::state {
namespace {

// 64 random bits: gateways started together on one host must still tell their counts apart.
std::string randomGatewayId() {
  std::random_device device;
  const uint64_t bits = (static_cast<uint64_t>(device()) << 32) | device();
  return fmt::format("{:016x}", bits);
}

}  // namespace

boost::asio::awaitable<QuotaResult> SharedStateClient::checkQuota(const QuotaRequest&) {
  co_return QuotaResult{};
}

void SharedStateClient::settleQuota(std::string_view, int64_t, int64_t) {}

boost::asio::awaitable<SlotGrant> SharedStateClient::growSlots(const SlotRequest&) {
  co_return SlotGrant{};
}

void SharedStateClient::changeSlots(std::string_view, std::string_view, int64_t) {}

std::shared_ptr<SharedStateBackend> makeBackend(const SharedStateSettings& settings,
                                                std::string gateway_id) {
  if (gateway_id.empty()) gateway_id = randomGatewayId();
  switch (settings.backend) {
    case SharedStateSettings::Backend::kRedis:
      return makeRedisBackend(settings, std::move(gateway_id));
    case SharedStateSettings::Backend::kMemory:
      break;
  }
  return makeMemoryBackend(std::make_shared<MemoryStore>(), std::move(gateway_id));
}

}  // namespace switchyard::state
