// Fuzz target: the keys file (auth/keys_file.h). Anything must parse or throw KeysFileError,
// never crash; a file that parses must render and parse back to the same keys, and a key table
// built from it must answer lookups.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "auth/key_table.h"
#include "auth/keys_file.h"

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::auth;
  if (size > 256 * 1024) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  KeysFile file;
  try {
    file = parseKeysFile(text);
  } catch (const KeysFileError&) {
    return 0;
  }
  const KeysFile back = parseKeysFile(renderKeysFile(file));
  check(back.hash_key == file.hash_key);
  check(back.keys.size() == file.keys.size());
  for (size_t i = 0; i < file.keys.size(); ++i) {
    check(back.keys[i].name == file.keys[i].name);
    check(back.keys[i].digest == file.keys[i].digest);
    check(back.keys[i].models == file.keys[i].models);
    check(back.keys[i].rpm == file.keys[i].rpm && back.keys[i].tpm == file.keys[i].tpm);
    check(validKeyName(file.keys[i].name));
  }
  KeyStates states;
  const KeyTable table(file, states);
  for (const KeyRecord& key : file.keys) {
    const KeyEntry* entry = table.findDigest(key.digest);
    check(entry != nullptr && entry->state->name == key.name);
  }
  check(table.find("sk-sy-not-a-key") == nullptr || !file.keys.empty());
  return 0;
}
