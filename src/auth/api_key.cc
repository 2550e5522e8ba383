#include "auth/api_key.h"

#include <sodium.h>

#include <stdexcept>

namespace switchyard::auth {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool isSpace(char c) { return c == ' ' || c == '\t'; }

}  // namespace

void initCrypto() {
  // sodium_init() is thread-safe and returns 1 when already initialised.
  if (sodium_init() < 0) throw std::runtime_error("libsodium could not be initialised");
}

std::string generateKey() {
  initCrypto();
  uint8_t random[32];
  randombytes_buf(random, sizeof random);
  char encoded[64];
  sodium_bin2base64(encoded, sizeof encoded, random, sizeof random,
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  sodium_memzero(random, sizeof random);
  std::string key(kKeyPrefix);
  key.append(encoded);
  sodium_memzero(encoded, sizeof encoded);
  return key;
}

HashKey generateHashKey() {
  initCrypto();
  HashKey key;
  randombytes_buf(key.data(), key.size());
  return key;
}

KeyDigest digestOf(const HashKey& hash_key, std::string_view token) {
  KeyDigest digest;
  crypto_generichash(digest.data(), digest.size(),
                     reinterpret_cast<const unsigned char*>(token.data()), token.size(),
                     hash_key.data(), hash_key.size());
  return digest;
}

bool digestsEqual(const KeyDigest& a, const KeyDigest& b) {
  return sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view bearerToken(std::string_view value) {
  while (!value.empty() && isSpace(value.front())) value.remove_prefix(1);
  constexpr std::string_view kScheme = "bearer";
  if (value.size() <= kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    char c = value[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kScheme[i]) return {};
  }
  value.remove_prefix(kScheme.size());
  if (!isSpace(value.front())) return {};
  while (!value.empty() && isSpace(value.front())) value.remove_prefix(1);
  while (!value.empty() && isSpace(value.back())) value.remove_suffix(1);
  if (value.empty() || value.size() > kMaxTokenBytes) return {};
  for (char c : value) {
    if (isSpace(c)) return {};  // "Bearer a b" is not one token
  }
  return value;
}

std::string toHex(const uint8_t* bytes, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xF];
  }
  return out;
}

template <size_t N>
std::optional<std::array<uint8_t, N>> fromHex(std::string_view text) {
  if (text.size() != 2 * N) return std::nullopt;
  std::array<uint8_t, N> out;
  for (size_t i = 0; i < N; ++i) {
    const int hi = hexValue(text[2 * i]);
    const int lo = hexValue(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return out;
}

template std::optional<std::array<uint8_t, 32>> fromHex<32>(std::string_view text);

bool validKeyName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if (i > 0 && (c == '.' || c == '_' || c == '-')) continue;
    return false;
  }
  return true;
}

}  // namespace switchyard::auth
