#include "fleet/kv_index/msgpack_lite.h"

#include <bit>
#include <cstring>
#include <limits>

namespace switchyard::fleet::kv_index::msgpack {

Type Reader::peek() const {
  if (p_ == end_) return Type::kInvalid;
  const auto b = static_cast<uint8_t>(*p_);
  if (b <= 0x7f || b >= 0xe0) return Type::kInt;
  if (b <= 0x8f) return Type::kMap;
  if (b <= 0x9f) return Type::kArray;
  if (b <= 0xbf) return Type::kStr;
  switch (b) {
    case 0xc0:
      return Type::kNil;
    case 0xc2:
    case 0xc3:
      return Type::kBool;
    case 0xc4:
    case 0xc5:
    case 0xc6:
      return Type::kBin;
    case 0xc7:
    case 0xc8:
    case 0xc9:
    case 0xd4:
    case 0xd5:
    case 0xd6:
    case 0xd7:
    case 0xd8:
      return Type::kExt;
    case 0xca:
    case 0xcb:
      return Type::kFloat;
    case 0xcc:
    case 0xcd:
    case 0xce:
    case 0xcf:
    case 0xd0:
    case 0xd1:
    case 0xd2:
    case 0xd3:
      return Type::kInt;
    case 0xd9:
    case 0xda:
    case 0xdb:
      return Type::kStr;
    case 0xdc:
    case 0xdd:
      return Type::kArray;
    case 0xde:
    case 0xdf:
      return Type::kMap;
    default:
      return Type::kInvalid;  // 0xc1 is never used
  }
}

bool Reader::take(size_t n, const char*& at) {
  if (static_cast<size_t>(end_ - p_) < n) return false;
  at = p_;
  p_ += n;
  return true;
}

uint64_t Reader::be(const char* at, size_t n) const {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(at[i]);
  return v;
}

bool Reader::readNil() {
  if (p_ == end_ || static_cast<uint8_t>(*p_) != 0xc0) return false;
  ++p_;
  return true;
}

bool Reader::readBool(bool& value) {
  if (p_ == end_) return false;
  const auto b = static_cast<uint8_t>(*p_);
  if (b != 0xc2 && b != 0xc3) return false;
  value = b == 0xc3;
  ++p_;
  return true;
}

bool Reader::readInt(int64_t& value) {
  const char* save = p_;
  uint64_t u = 0;
  if (p_ != end_) {
    const auto b = static_cast<uint8_t>(*p_);
    const char* at = nullptr;
    if (b >= 0xe0) {
      ++p_;
      value = static_cast<int8_t>(b);
      return true;
    }
    auto signedOf = [&](size_t n) {
      if (!take(n, at)) return false;
      const uint64_t raw = be(at, n);
      const unsigned shift = static_cast<unsigned>(64 - 8 * n);
      value = static_cast<int64_t>(raw << shift) >> shift;
      return true;
    };
    switch (b) {
      case 0xd0:
        ++p_;
        if (signedOf(1)) return true;
        break;
      case 0xd1:
        ++p_;
        if (signedOf(2)) return true;
        break;
      case 0xd2:
        ++p_;
        if (signedOf(4)) return true;
        break;
      case 0xd3:
        ++p_;
        if (signedOf(8)) return true;
        break;
      default:
        if (readUint(u)) {
          if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) break;
          value = static_cast<int64_t>(u);
          return true;
        }
    }
  }
  p_ = save;
  return false;
}

bool Reader::readUint(uint64_t& value) {
  if (p_ == end_) return false;
  const char* save = p_;
  const auto b = static_cast<uint8_t>(*p_);
  const char* at = nullptr;
  if (b <= 0x7f) {
    ++p_;
    value = b;
    return true;
  }
  size_t n = 0;
  switch (b) {
    case 0xcc:
      n = 1;
      break;
    case 0xcd:
      n = 2;
      break;
    case 0xce:
      n = 4;
      break;
    case 0xcf:
      n = 8;
      break;
    default:
      return false;
  }
  ++p_;
  if (!take(n, at)) {
    p_ = save;
    return false;
  }
  value = be(at, n);
  return true;
}

bool Reader::readFloat(double& value) {
  if (p_ == end_) return false;
  const char* save = p_;
  const auto b = static_cast<uint8_t>(*p_);
  const char* at = nullptr;
  if (b == 0xca || b == 0xcb) {
    ++p_;
    const size_t n = b == 0xca ? 4 : 8;
    if (!take(n, at)) {
      p_ = save;
      return false;
    }
    const uint64_t raw = be(at, n);
    if (n == 4) {
      value = std::bit_cast<float>(static_cast<uint32_t>(raw));
    } else {
      value = std::bit_cast<double>(raw);
    }
    return true;
  }
  int64_t i = 0;
  if (readInt(i)) {
    value = static_cast<double>(i);
    return true;
  }
  uint64_t u = 0;
  if (readUint(u)) {
    value = static_cast<double>(u);
    return true;
  }
  return false;
}

bool Reader::readStr(std::string_view& value) {
  if (p_ == end_) return false;
  const char* save = p_;
  const auto b = static_cast<uint8_t>(*p_);
  const char* at = nullptr;
  size_t len = 0;
  ++p_;
  if (b >= 0xa0 && b <= 0xbf) {
    len = b & 0x1f;
  } else if (b >= 0xd9 && b <= 0xdb) {
    const size_t n = size_t{1} << (b - 0xd9);
    if (!take(n, at)) {
      p_ = save;
      return false;
    }
    len = be(at, n);
  } else {
    p_ = save;
    return false;
  }
  if (!take(len, at)) {
    p_ = save;
    return false;
  }
  value = {at, len};
  return true;
}

bool Reader::readBin(std::string_view& value) {
  if (p_ == end_) return false;
  const char* save = p_;
  const auto b = static_cast<uint8_t>(*p_);
  if (b < 0xc4 || b > 0xc6) return false;
  ++p_;
  const char* at = nullptr;
  const size_t n = size_t{1} << (b - 0xc4);
  size_t len = 0;
  if (take(n, at)) {
    len = be(at, n);
    if (take(len, at)) {
      value = {at, len};
      return true;
    }
  }
  p_ = save;
  return false;
}

bool Reader::readHeader(uint8_t fix, uint8_t fix_mask, uint8_t b16, uint8_t b32, uint32_t& count) {
  if (p_ == end_) return false;
  const char* save = p_;
  const auto b = static_cast<uint8_t>(*p_);
  const char* at = nullptr;
  if ((b & ~fix_mask) == fix) {
    ++p_;
    count = b & fix_mask;
    return true;
  }
  if (b != b16 && b != b32) return false;
  ++p_;
  const size_t n = b == b16 ? 2 : 4;
  if (!take(n, at)) {
    p_ = save;
    return false;
  }
  count = static_cast<uint32_t>(be(at, n));
  return true;
}

bool Reader::readArray(uint32_t& count) { return readHeader(0x90, 0x0f, 0xdc, 0xdd, count); }

bool Reader::readMap(uint32_t& count) { return readHeader(0x80, 0x0f, 0xde, 0xdf, count); }

bool Reader::skipValue(int depth) {
  if (depth > kMaxDepth) return false;
  const char* save = p_;
  bool ok = false;
  uint32_t count = 0;
  std::string_view bytes;
  double f = 0;
  bool flag = false;
  switch (peek()) {
    case Type::kNil:
      ok = readNil();
      break;
    case Type::kBool:
      ok = readBool(flag);
      break;
    case Type::kInt: {
      int64_t i = 0;
      uint64_t u = 0;
      ok = readInt(i) || readUint(u);
      break;
    }
    case Type::kFloat:
      ok = readFloat(f);
      break;
    case Type::kStr:
      ok = readStr(bytes);
      break;
    case Type::kBin:
      ok = readBin(bytes);
      break;
    case Type::kArray:
      ok = readArray(count);
      for (uint32_t i = 0; ok && i < count; ++i) ok = skipValue(depth + 1);
      break;
    case Type::kMap:
      ok = readMap(count);
      for (uint32_t i = 0; ok && i < count; ++i) ok = skipValue(depth + 1) && skipValue(depth + 1);
      break;
    case Type::kExt: {
      const auto b = static_cast<uint8_t>(*p_);
      ++p_;
      const char* at = nullptr;
      size_t len = 0;
      if (b >= 0xd4 && b <= 0xd8) {
        len = size_t{1} << (b - 0xd4);
        ok = true;
      } else {
        const size_t n = size_t{1} << (b - 0xc7);
        ok = take(n, at);
        if (ok) len = be(at, n);
      }
      ok = ok && take(1 + len, at);  // the type byte, then the data
      break;
    }
    case Type::kInvalid:
      ok = false;
      break;
  }
  if (!ok) p_ = save;
  return ok;
}

void Writer::be(uint64_t value, size_t bytes) {
  for (size_t i = bytes; i-- > 0;) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void Writer::nil() { out_.push_back(static_cast<char>(0xc0)); }

void Writer::boolean(bool value) { out_.push_back(static_cast<char>(value ? 0xc3 : 0xc2)); }

void Writer::uinteger(uint64_t value) {
  if (value <= 0x7f) {
    out_.push_back(static_cast<char>(value));
  } else if (value <= 0xff) {
    out_.push_back(static_cast<char>(0xcc));
    be(value, 1);
  } else if (value <= 0xffff) {
    out_.push_back(static_cast<char>(0xcd));
    be(value, 2);
  } else if (value <= 0xffffffffull) {
    out_.push_back(static_cast<char>(0xce));
    be(value, 4);
  } else {
    out_.push_back(static_cast<char>(0xcf));
    be(value, 8);
  }
}

void Writer::integer(int64_t value) {
  if (value >= 0) {
    uinteger(static_cast<uint64_t>(value));
  } else if (value >= -32) {
    out_.push_back(static_cast<char>(static_cast<int8_t>(value)));
  } else if (value >= std::numeric_limits<int8_t>::min()) {
    out_.push_back(static_cast<char>(0xd0));
    be(static_cast<uint64_t>(value), 1);
  } else if (value >= std::numeric_limits<int16_t>::min()) {
    out_.push_back(static_cast<char>(0xd1));
    be(static_cast<uint64_t>(value), 2);
  } else if (value >= std::numeric_limits<int32_t>::min()) {
    out_.push_back(static_cast<char>(0xd2));
    be(static_cast<uint64_t>(value), 4);
  } else {
    out_.push_back(static_cast<char>(0xd3));
    be(static_cast<uint64_t>(value), 8);
  }
}

void Writer::float64(double value) {
  out_.push_back(static_cast<char>(0xcb));
  be(std::bit_cast<uint64_t>(value), 8);
}

void Writer::str(std::string_view value) {
  const size_t n = value.size();
  if (n <= 31) {
    out_.push_back(static_cast<char>(0xa0 | n));
  } else if (n <= 0xff) {
    out_.push_back(static_cast<char>(0xd9));
    be(n, 1);
  } else if (n <= 0xffff) {
    out_.push_back(static_cast<char>(0xda));
    be(n, 2);
  } else {
    out_.push_back(static_cast<char>(0xdb));
    be(n, 4);
  }
  out_.append(value);
}

void Writer::bin(std::string_view value) {
  const size_t n = value.size();
  if (n <= 0xff) {
    out_.push_back(static_cast<char>(0xc4));
    be(n, 1);
  } else if (n <= 0xffff) {
    out_.push_back(static_cast<char>(0xc5));
    be(n, 2);
  } else {
    out_.push_back(static_cast<char>(0xc6));
    be(n, 4);
  }
  out_.append(value);
}

void Writer::header(uint8_t fix, uint8_t b16, uint8_t b32, uint32_t count) {
  if (count <= 15) {
    out_.push_back(static_cast<char>(fix | count));
  } else if (count <= 0xffff) {
    out_.push_back(static_cast<char>(b16));
    be(count, 2);
  } else {
    out_.push_back(static_cast<char>(b32));
    be(count, 4);
  }
}

void Writer::array(uint32_t count) { header(0x90, 0xdc, 0xdd, count); }

void Writer::map(uint32_t count) { header(0x80, 0xde, 0xdf, count); }

}  // namespace switchyard::fleet::kv_index::msgpack
