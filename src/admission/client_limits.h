// ClientLimits: what one gateway allows a client before any API key is looked at — open
// connections (in all and per source address), a request rate per source address — and the
// counters of every refusal by those limits and by the request-reading caps (header count and
// size, the time to read headers and body), for /metrics.
//
// Shared by the gateway's worker threads without a lock. Source addresses live in a fixed
// open-addressing table (ClientAddressTable): each slot packs a 48-bit keyed hash of the address
// (SipHash with a per-process random key, so clients cannot aim at a slot) and the address's
// open connections into one 64-bit atomic, so counting a connection, refusing one over the cap
// and recycling an idle slot for another address are each one compare-and-swap. A slot also
// keeps the address's request-rate state (GCRA). An address is looked up once per connection;
// its slot index is kept by the connection, so a request pays one CAS for the rate.
//
// When all slots an address may use are busy with other active addresses (tens of thousands of
// concurrent clients), the connection is let through untracked and counted
// (`table_full`): the gateway-wide cap still holds. Two first connections of one address racing
// on different workers may claim two slots, splitting that address's count until they close.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/clock.h"

namespace switchyard::admission {

struct ClientLimitSettings {
  int64_t max_connections = 0;         // open client connections per gateway; 0: unlimited
  int64_t max_connections_per_ip = 0;  // per source address; 0: unlimited
  double requests_per_second_per_ip = 0;  // 0: unlimited
  double burst_per_ip = 0;             // requests at once; 0: one second's worth (at least 1)
  size_t max_header_count = 100;       // request header fields
  size_t max_header_bytes = 64 * 1024; // request line + header fields
};

// What a refusal or a cap was about, as the `limit` label of switchyard_client_limits_total.
enum class ClientLimit : uint8_t {
  kGatewayConnections = 0,  // the gateway's open-connection cap
  kAddressConnections,      // the source address's open-connection cap
  kAddressRate,             // the source address's request rate (429)
  kHeaderCount,             // too many header fields (431)
  kHeaderBytes,             // headers larger than the cap (431)
  kHeaderTime,              // headers not complete in time (connection closed)
  kBodyTime,                // body not complete in time (connection closed)
  kTableFull,               // an address let through untracked (not a refusal)
  kCount,
};
std::string_view clientLimitName(ClientLimit limit);

class ClientAddressTable {
 public:
  static constexpr int32_t kUntracked = -1;
  static constexpr int32_t kRefused = -2;
  static constexpr size_t kProbe = 8;

  explicit ClientAddressTable(size_t slots = 65536);

  // Counts one connection of `address` (16 bytes: IPv6, or IPv4 mapped). Returns its slot, or
  // kRefused when the address already has `cap` connections (cap 0: no cap), or kUntracked.
  int32_t acquire(const std::array<uint8_t, 16>& address, int64_t cap, TimeNs now);
  void release(int32_t slot);
  // One request of the address in `slot` at `now`: 0 when let through, else the wait.
  TimeNs tryRequest(int32_t slot, TimeNs now, double rate, double burst);
  // Open connections counted in `slot` (tests).
  int64_t connections(int32_t slot) const;

 private:
  struct alignas(16) Slot {
    std::atomic<uint64_t> word{0};  // tag << 16 | connections; 0: empty
    std::atomic<TimeNs> tat{0};     // request-rate GCRA
  };
  uint64_t tagOf(const std::array<uint8_t, 16>& address) const;

  std::unique_ptr<Slot[]> slots_;
  uint64_t mask_;
  std::array<uint8_t, 16> hash_key_{};
};

class ClientLimits {
 public:
  explicit ClientLimits(const ClientLimitSettings& settings);

  const ClientLimitSettings& settings() const { return settings_; }

  // A connection was accepted from `address`: the slot to give back with closeConnection()
  // (ClientAddressTable::kUntracked when only the gateway-wide count holds it), or kRefused
  // (over a cap: close it at once; counted, nothing to give back).
  int32_t openConnection(const std::array<uint8_t, 16>& address, TimeNs now);
  void closeConnection(int32_t slot);
  // One request on a connection whose open returned `slot`: 0 or the wait (counted).
  TimeNs admitRequest(int32_t slot, TimeNs now);

  void count(ClientLimit limit) {
    counters_[static_cast<size_t>(limit)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t counted(ClientLimit limit) const {
    return counters_[static_cast<size_t>(limit)].load(std::memory_order_relaxed);
  }
  int64_t openConnections() const { return open_.load(std::memory_order_relaxed); }
  const ClientAddressTable& table() const { return table_; }

 private:
  ClientLimitSettings settings_;
  bool track_addresses_;
  ClientAddressTable table_;
  alignas(64) std::atomic<int64_t> open_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(ClientLimit::kCount)> counters_{};
};

}  // namespace switchyard::admission
