// KeyStore: the keys file, loaded and published as immutable KeyTable snapshots.
//
// The control thread calls load() at start (throws on a bad file: the gateway does not start
// without the keys it was told to use) and refresh() on SIGHUP or when the file's stamp
// changes; a bad file on reload is logged and the current table stays. Workers read through a
// KeyTableCache: one relaxed load of the version per request, a shared_ptr copy (under the
// store's mutex) only when it changed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "auth/key_table.h"
#include "core/file_stamp.h"

namespace switchyard::auth {

class KeyStore {
 public:
  // `path` empty: no keys file (authentication off). `what` names the file in logs
  // ("keys file", "admin keys file").
  KeyStore(std::string path, std::string what);

  bool enabled() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

  // Control thread, at start: loads the file. Throws KeysFileError.
  void load();
  // Control thread: reloads when `force` or the file changed; a file that fails to parse is
  // logged and ignored. True when a new table was published.
  bool refresh(bool force);

  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  std::shared_ptr<const KeyTable> current() const;
  KeyStates& states() { return states_; }
  const KeyStates& states() const { return states_; }

  uint64_t reloadsTotal() const { return reloads_.load(std::memory_order_relaxed); }
  uint64_t reloadFailuresTotal() const { return failures_.load(std::memory_order_relaxed); }

 private:
  void publish(const KeysFile& file);

  std::string path_;
  std::string what_;
  FileStamp stamp_;
  KeyStates states_;
  mutable std::mutex mutex_;
  std::shared_ptr<const KeyTable> table_;
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> reloads_{0};
  std::atomic<uint64_t> failures_{0};
};

// One worker's view of the store.
class KeyTableCache {
 public:
  explicit KeyTableCache(const KeyStore& store) : store_(store) {}
  const KeyTable* get() {
    const uint64_t v = store_.version();
    if (v != version_) {
      table_ = store_.current();
      version_ = v;
    }
    return table_.get();
  }

 private:
  const KeyStore& store_;
  std::shared_ptr<const KeyTable> table_;
  uint64_t version_ = 0;
};

}  // namespace switchyard::auth
