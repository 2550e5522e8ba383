// The keys file: every API key the gateway accepts, as a name, a digest (never the key), the
// models it may use and its limits. Written by `switchyard keys`, read by the gateway at start
// and whenever it changes (docs/security.md):
//
//   version: 1
//   hash_key: <64 hex>            # the file's BLAKE2b key (auth/api_key.h)
//   keys:
//     - name: alice               # [A-Za-z0-9._-], unique: shown in metrics, logs and traces
//       hash: <64 hex>            # BLAKE2b-256(hash_key, key)
//       models: [llama2-7b]       # "*": every model
//       rpm: 60                   # requests per minute; 0 or absent: unlimited
//       tpm: 100000               # tokens (prompt + completion) per minute; 0: unlimited
//       created: 2025-01-01T00:00:00Z
//
// Parsing runs on the control thread or in the CLI, never on the request path; errors throw
// KeysFileError naming the entry and field.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "auth/api_key.h"

namespace switchyard::auth {

struct KeysFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr std::string_view kAllModels = "*";
// Requests or tokens per minute above this are refused as a typo rather than honoured.
inline constexpr int64_t kMaxPerMinute = int64_t{1} << 40;

struct KeyRecord {
  std::string name;
  KeyDigest digest{};
  std::vector<std::string> models;  // kAllModels alone: every model
  int64_t rpm = 0;                  // 0: unlimited
  int64_t tpm = 0;
  std::string created;  // informational

  bool allModels() const { return models.size() == 1 && models[0] == kAllModels; }
};

struct KeysFile {
  HashKey hash_key{};
  std::vector<KeyRecord> keys;
};

KeysFile parseKeysFile(const std::string& text);
std::string renderKeysFile(const KeysFile& file);

// Reads and parses `path`. Throws KeysFileError (including when it cannot be read).
KeysFile readKeysFile(const std::string& path);
// Replaces `path` atomically (a temporary file in the same directory, fsync, rename), mode 0600.
void writeKeysFile(const std::string& path, const KeysFile& file);

// "M1,M2" as a model list: names trimmed, empty parts dropped, "*" alone for every model.
// Throws KeysFileError when nothing is left or "*" is mixed with names.
std::vector<std::string> parseModelList(const std::string& text);

}  // namespace switchyard::auth
