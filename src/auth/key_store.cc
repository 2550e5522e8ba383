#include "auth/key_store.h"

#include <spdlog/spdlog.h>

namespace switchyard::auth {

KeyStore::KeyStore(std::string path, std::string what)
    : path_(std::move(path)), what_(std::move(what)) {}

void KeyStore::load() {
  if (!enabled()) return;
  initCrypto();
  stamp_ = stampOf(path_);
  publish(readKeysFile(path_));
}

bool KeyStore::refresh(bool force) {
  if (!enabled()) return false;
  const FileStamp stamp = stampOf(path_);
  if (!force && stamp == stamp_) return false;
  stamp_ = stamp;
  try {
    publish(readKeysFile(path_));
  } catch (const KeysFileError& e) {
    failures_.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("auth: {} reload rejected, keeping the current keys: {}", what_, e.what());
    return false;
  }
  return true;
}

void KeyStore::publish(const KeysFile& file) {
  auto table = std::make_shared<const KeyTable>(file, states_);
  {
    std::lock_guard lock(mutex_);
    table_ = std::move(table);
  }
  version_.fetch_add(1, std::memory_order_acq_rel);
  reloads_.fetch_add(1, std::memory_order_relaxed);
  spdlog::info("auth: {} {} loaded: {} keys", what_, path_, file.keys.size());
}

std::shared_ptr<const KeyTable> KeyStore::current() const {
  std::lock_guard lock(mutex_);
  return table_;
}

}  // namespace switchyard::auth
