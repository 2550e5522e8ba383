// API keys: generation, the keyed hash they are stored as, and the bearer token a request
// carries.
//
// A key is "sk-sy-" followed by 43 base64url characters: 256 random bits from the kernel's CSPRNG
// (libsodium's randombytes). Only its digest is ever stored: BLAKE2b-256 keyed with the keys
// file's own 32-byte hash key (libsodium's crypto_generichash). Why a fast keyed hash and not a
// password hash (argon2, bcrypt): a 256-bit random key cannot be guessed, so slowing down each
// guess buys nothing, while a slow hash on every request would cost milliseconds of CPU and hand
// attackers a cheap way to burn it. The key of the hash makes a leaked digest useless without
// the file it came from and precomputed tables useless altogether. Digests are compared in
// constant time (sodium_memcmp).
//
// Everything here is thread-safe and allocation-free except where a std::string is returned.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::auth {

inline constexpr std::string_view kKeyPrefix = "sk-sy-";
inline constexpr size_t kDigestBytes = 32;
inline constexpr size_t kHashKeyBytes = 32;
// Tokens longer than this are not keys of ours: refused before hashing.
inline constexpr size_t kMaxTokenBytes = 256;

using KeyDigest = std::array<uint8_t, kDigestBytes>;
using HashKey = std::array<uint8_t, kHashKeyBytes>;

// Initialises libsodium once (any thread; idempotent). Throws std::runtime_error if it cannot.
void initCrypto();

// A new API key (the only time its text exists outside the client).
std::string generateKey();
// 32 fresh random bytes for a keys file.
HashKey generateHashKey();

// BLAKE2b-256 of `token` keyed with `hash_key`. About 150 ns for a key; no allocation.
KeyDigest digestOf(const HashKey& hash_key, std::string_view token);

// Constant-time equality of two digests.
bool digestsEqual(const KeyDigest& a, const KeyDigest& b);

// The token of an `Authorization: Bearer TOKEN` header value (scheme case-insensitive, spaces
// around the token ignored); empty when the value is not a bearer credential or the token is
// empty or longer than kMaxTokenBytes.
std::string_view bearerToken(std::string_view authorization);

// Lower-case hex, and its inverse (nullopt unless exactly 2*N hex digits).
std::string toHex(const uint8_t* bytes, size_t n);
template <size_t N>
std::optional<std::array<uint8_t, N>> fromHex(std::string_view text);

// A key name: 1 to 64 of [A-Za-z0-9._-], starting with a letter or digit. Names appear in
// metrics labels, log lines, Redis keys and traces, so they are kept plain.
bool validKeyName(std::string_view name);

}  // namespace switchyard::auth
