#include "admission/client_limits.h"

#include <sodium.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace switchyard::admission {
namespace {

constexpr uint64_t kCountMask = 0xFFFF;

uint64_t countOf(uint64_t word) { return word & kCountMask; }
uint64_t tagBits(uint64_t word) { return word >> 16; }

}  // namespace

std::string_view clientLimitName(ClientLimit limit) {
  switch (limit) {
    case ClientLimit::kGatewayConnections: return "gateway_connections";
    case ClientLimit::kAddressConnections: return "ip_connections";
    case ClientLimit::kAddressRate: return "ip_request_rate";
    case ClientLimit::kHeaderCount: return "header_count";
    case ClientLimit::kHeaderBytes: return "header_bytes";
    case ClientLimit::kHeaderTime: return "header_time";
    case ClientLimit::kBodyTime: return "body_time";
    case ClientLimit::kTableFull: return "ip_table_full";
    case ClientLimit::kCount: break;
  }
  return "other";
}

ClientAddressTable::ClientAddressTable(size_t slots) {
  const size_t size = std::bit_ceil(std::max<size_t>(slots, kProbe));
  slots_ = std::make_unique<Slot[]>(size);
  mask_ = size - 1;
  if (sodium_init() < 0) std::abort();
  randombytes_buf(hash_key_.data(), hash_key_.size());
}

uint64_t ClientAddressTable::tagOf(const std::array<uint8_t, 16>& address) const {
  static_assert(crypto_shorthash_KEYBYTES == 16 && crypto_shorthash_BYTES == 8);
  uint8_t out[8];
  crypto_shorthash(out, address.data(), address.size(), hash_key_.data());
  uint64_t h;
  std::memcpy(&h, out, sizeof h);
  return h;
}

int32_t ClientAddressTable::acquire(const std::array<uint8_t, 16>& address, int64_t cap,
                                    TimeNs now) {
  const uint64_t hash = tagOf(address);
  const uint64_t tag = (hash >> 16) | (uint64_t{1} << 47);  // 48 bits, never 0
  const uint64_t start = hash & mask_;
  const uint64_t limit = cap > 0 ? std::min<uint64_t>(static_cast<uint64_t>(cap), kCountMask)
                                 : kCountMask;
  // The address's own slot, if it has one.
  for (uint64_t i = 0; i < kProbe; ++i) {
    const uint64_t index = (start + i) & mask_;
    Slot& slot = slots_[index];
    uint64_t word = slot.word.load(std::memory_order_relaxed);
    while (tagBits(word) == tag) {
      if (countOf(word) >= limit) return kRefused;
      if (slot.word.compare_exchange_weak(word, word + 1, std::memory_order_relaxed)) {
        return static_cast<int32_t>(index);
      }
    }
  }
  // Claim an empty slot, or one whose address has no connection and no rate debt left.
  for (uint64_t i = 0; i < kProbe; ++i) {
    const uint64_t index = (start + i) & mask_;
    Slot& slot = slots_[index];
    uint64_t word = slot.word.load(std::memory_order_relaxed);
    const bool reusable =
        word == 0 || (countOf(word) == 0 && slot.tat.load(std::memory_order_relaxed) <= now);
    if (!reusable) continue;
    if (slot.word.compare_exchange_strong(word, tag << 16 | 1, std::memory_order_relaxed)) {
      slot.tat.store(0, std::memory_order_relaxed);
      return static_cast<int32_t>(index);
    }
  }
  return kUntracked;
}

void ClientAddressTable::release(int32_t slot) {
  if (slot < 0) return;
  slots_[static_cast<size_t>(slot)].word.fetch_sub(1, std::memory_order_relaxed);
}

int64_t ClientAddressTable::connections(int32_t slot) const {
  if (slot < 0) return 0;
  return static_cast<int64_t>(
      countOf(slots_[static_cast<size_t>(slot)].word.load(std::memory_order_relaxed)));
}

TimeNs ClientAddressTable::tryRequest(int32_t slot, TimeNs now, double rate, double burst) {
  if (slot < 0 || !(rate > 0)) return 0;
  const TimeNs interval = std::max<TimeNs>(1, static_cast<TimeNs>(kNsPerSec / rate));
  const auto tolerance = static_cast<TimeNs>(std::max(0.0, burst - 1.0) *
                                             static_cast<double>(interval));
  std::atomic<TimeNs>& tat = slots_[static_cast<size_t>(slot)].tat;
  TimeNs current = tat.load(std::memory_order_relaxed);
  for (;;) {
    const TimeNs start = std::max(current, now);
    if (start - now > tolerance) return start - now - tolerance;
    if (tat.compare_exchange_weak(current, start + interval, std::memory_order_relaxed)) {
      return 0;
    }
  }
}

ClientLimits::ClientLimits(const ClientLimitSettings& settings)
    : settings_(settings),
      track_addresses_(settings.max_connections_per_ip > 0 ||
                       settings.requests_per_second_per_ip > 0),
      table_(track_addresses_ ? 65536 : ClientAddressTable::kProbe) {
  if (settings_.burst_per_ip <= 0) {
    settings_.burst_per_ip = std::max(1.0, settings_.requests_per_second_per_ip);
  }
}

int32_t ClientLimits::openConnection(const std::array<uint8_t, 16>& address, TimeNs now) {
  const int64_t open = open_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (settings_.max_connections > 0 && open > settings_.max_connections) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    count(ClientLimit::kGatewayConnections);
    return ClientAddressTable::kRefused;
  }
  if (!track_addresses_) return ClientAddressTable::kUntracked;
  const int32_t slot = table_.acquire(address, settings_.max_connections_per_ip, now);
  if (slot == ClientAddressTable::kRefused) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    count(ClientLimit::kAddressConnections);
  } else if (slot == ClientAddressTable::kUntracked) {
    count(ClientLimit::kTableFull);
  }
  return slot;
}

void ClientLimits::closeConnection(int32_t slot) {
  if (slot == ClientAddressTable::kRefused) return;
  open_.fetch_sub(1, std::memory_order_relaxed);
  table_.release(slot);
}

TimeNs ClientLimits::admitRequest(int32_t slot, TimeNs now) {
  const TimeNs wait = table_.tryRequest(slot, now, settings_.requests_per_second_per_ip,
                                        settings_.burst_per_ip);
  if (wait > 0) count(ClientLimit::kAddressRate);
  return wait;
}

}  // namespace switchyard::admission
