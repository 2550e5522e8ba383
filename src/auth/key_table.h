// KeyTable: the keys a gateway accepts, as an immutable snapshot built from the keys file, and
// the long-lived per-key state (budgets, counters) that survives reloads.
//
// Lookup (any thread, no allocation, no lock): the bearer token is hashed with the file's hash
// key (auth/api_key.h), the digest's first 8 bytes index an open-addressing table, and the full
// digest is compared in constant time. Because the digest is keyed, a client cannot aim tokens
// at a slot; the table's timing says nothing about any key.
//
// KeyState is keyed by the key's name and never freed while the process lives (a name's budget
// and counters carry over a reload, a key replaced under the same name included), so the
// request path may keep a pointer to it across awaits while snapshots come and go.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "auth/api_key.h"
#include "auth/keys_file.h"
#include "auth/quota_bucket.h"

namespace switchyard::auth {

// Per-key counters for /metrics: relaxed atomics written by every worker.
struct KeyCounters {
  std::atomic<uint64_t> allowed{0};         // requests that passed the key's checks
  std::atomic<uint64_t> model_denied{0};    // asked for a model the key may not use
  std::atomic<uint64_t> request_limited{0};  // refused by the key's requests per minute
  std::atomic<uint64_t> token_limited{0};    // refused by its tokens per minute
  std::atomic<uint64_t> prompt_tokens{0};    // counted at completion
  std::atomic<uint64_t> completion_tokens{0};
};

struct alignas(64) KeyState {
  explicit KeyState(std::string name_in) : name(std::move(name_in)) {}
  const std::string name;
  QuotaBucket requests;  // this gateway's view; shared state decides across gateways
  QuotaBucket tokens;
  KeyCounters counters;
};

struct KeyEntry {
  KeyDigest digest{};
  KeyState* state = nullptr;
  std::vector<std::string> models;  // empty: every model
  int64_t rpm = 0;                  // 0: unlimited
  int64_t tpm = 0;

  // No allocation: compares against the (short) list.
  bool mayUse(std::string_view model) const {
    if (models.empty()) return true;
    for (const std::string& m : models) {
      if (m == model) return true;
    }
    return false;
  }
};

// Owns every KeyState ever created; KeyTable entries point into it. Thread-safe (a mutex taken
// when a table is built, never on the request path).
class KeyStates {
 public:
  KeyState* get(const std::string& name);
  // Every state, ordered by name (for /metrics).
  std::vector<const KeyState*> all() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<KeyState>, std::less<>> states_;
};

class KeyTable {
 public:
  KeyTable(const KeysFile& file, KeyStates& states);

  // The key a bearer token belongs to, or nullptr. Any thread; no allocation.
  const KeyEntry* find(std::string_view token) const;
  // The same for a digest computed elsewhere (tests, benchmarks).
  const KeyEntry* findDigest(const KeyDigest& digest) const;
  size_t size() const { return entries_.size(); }
  const std::vector<KeyEntry>& entries() const { return entries_; }

 private:
  static uint64_t slotHash(const KeyDigest& digest);

  HashKey hash_key_{};
  std::vector<KeyEntry> entries_;
  std::vector<int32_t> slots_;  // indices into entries_, -1 empty; size a power of two
  uint64_t mask_ = 0;
};

}  // namespace switchyard::auth
