#include "auth/key_table.h"

#include <bit>
#include <cstring>

namespace switchyard::auth {

KeyState* KeyStates::get(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto& state = states_[name];
  if (!state) state = std::make_unique<KeyState>(name);
  return state.get();
}

std::vector<const KeyState*> KeyStates::all() const {
  std::lock_guard lock(mutex_);
  std::vector<const KeyState*> out;
  out.reserve(states_.size());
  for (const auto& [name, state] : states_) out.push_back(state.get());
  return out;
}

KeyTable::KeyTable(const KeysFile& file, KeyStates& states) : hash_key_(file.hash_key) {
  entries_.reserve(file.keys.size());
  for (const KeyRecord& record : file.keys) {
    KeyEntry entry;
    entry.digest = record.digest;
    entry.state = states.get(record.name);
    if (!record.allModels()) entry.models = record.models;
    entry.rpm = record.rpm;
    entry.tpm = record.tpm;
    entries_.push_back(std::move(entry));
  }
  // At most half full, so a probe ends after a slot or two.
  const size_t size = std::bit_ceil(std::max<size_t>(8, 2 * entries_.size()));
  slots_.assign(size, -1);
  mask_ = size - 1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    uint64_t slot = slotHash(entries_[i].digest) & mask_;
    while (slots_[slot] >= 0) slot = (slot + 1) & mask_;
    slots_[slot] = static_cast<int32_t>(i);
  }
}

uint64_t KeyTable::slotHash(const KeyDigest& digest) {
  uint64_t h;
  std::memcpy(&h, digest.data(), sizeof h);
  return h;
}

const KeyEntry* KeyTable::findDigest(const KeyDigest& digest) const {
  uint64_t slot = slotHash(digest) & mask_;
  for (;;) {
    const int32_t index = slots_[slot];
    if (index < 0) return nullptr;
    const KeyEntry& entry = entries_[static_cast<size_t>(index)];
    if (digestsEqual(entry.digest, digest)) return &entry;
    slot = (slot + 1) & mask_;
  }
}

const KeyEntry* KeyTable::find(std::string_view token) const {
  if (token.empty() || token.size() > kMaxTokenBytes) return nullptr;
  return findDigest(digestOf(hash_key_, token));
}

}  // namespace switchyard::auth
