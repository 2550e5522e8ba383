// A small MessagePack reader and writer: the subset KV-cache events use (nil, booleans, integers,
// floats, strings, binaries, arrays, maps; extension types are read and skipped).
//
// Why not msgpack-c: Debian 12's libmsgpack-dev depends on libmsgpack-cxx-dev, which depends on
// libboost-dev 1.74, and that conflicts with the libboost1.81-dev Switchyard builds with; the two
// cannot be installed together. This reader is also what the hot-path rules ask for: it never
// throws and never allocates (it reads in place), and every read is bounds-checked, so truncated
// or hostile input yields a defined error (tests/fuzz/kv_events_fuzz.cc).
//
// Reader: a cursor over a byte range; each read*() consumes one value of the expected type or
// returns false (and leaves the cursor where it was, so the caller may try another type).
// skip() consumes one value of any type, nested up to kMaxDepth levels. Not thread-safe (a value).
// Writer: appends to a std::string (the publisher's side, off the step loop's critical path).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace switchyard::fleet::kv_index::msgpack {

enum class Type : uint8_t { kNil, kBool, kInt, kFloat, kStr, kBin, kArray, kMap, kExt, kInvalid };

class Reader {
 public:
  static constexpr int kMaxDepth = 32;

  explicit Reader(std::string_view data) : p_(data.data()), end_(data.data() + data.size()) {}

  bool atEnd() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  // The type of the next value (kInvalid at the end or on a reserved byte); consumes nothing.
  Type peek() const;

  bool readNil();
  bool readBool(bool& value);
  // Any integer that fits: positive fixint, uint8..64, negative fixint, int8..64. A uint64 above
  // INT64_MAX read as signed fails; a negative integer read as unsigned fails.
  bool readInt(int64_t& value);
  bool readUint(uint64_t& value);
  // float32 / float64, and integers (converted).
  bool readFloat(double& value);
  bool readStr(std::string_view& value);
  bool readBin(std::string_view& value);
  // The header of an array / map: its element (pair) count; the elements follow.
  bool readArray(uint32_t& count);
  bool readMap(uint32_t& count);
  // Consumes one complete value of any type; false on truncation or nesting beyond kMaxDepth.
  bool skip() { return skipValue(0); }

 private:
  bool skipValue(int depth);
  // An array or map header: fix-size form `fix | count` (count <= fix_mask), else b16 / b32.
  bool readHeader(uint8_t fix, uint8_t fix_mask, uint8_t b16, uint8_t b32, uint32_t& count);
  bool take(size_t n, const char*& at);  // n bytes or false
  uint64_t be(const char* at, size_t n) const;

  const char* p_;
  const char* end_;
};

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  void nil();
  void boolean(bool value);
  void integer(int64_t value);
  void uinteger(uint64_t value);
  void float64(double value);
  void str(std::string_view value);
  void bin(std::string_view value);
  void array(uint32_t count);
  void map(uint32_t count);

 private:
  void be(uint64_t value, size_t bytes);
  void header(uint8_t fix, uint8_t b16, uint8_t b32, uint32_t count);
  std::string& out_;
};

}  // namespace switchyard::fleet::kv_index::msgpack
