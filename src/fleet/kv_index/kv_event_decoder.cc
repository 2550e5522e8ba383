#include "fleet/kv_index/kv_event_decoder.h"

#include "fleet/kv_index/msgpack_lite.h"

namespace switchyard::fleet::kv_index {
namespace {

using msgpack::Reader;
using msgpack::Type;
using msgpack::Writer;

// An integer (signed or unsigned) or bytes (folded: the last 8 bytes, big-endian).
bool readHash(Reader& in, uint64_t& hash) {
  int64_t i = 0;
  if (in.readInt(i)) {
    hash = static_cast<uint64_t>(i);
    return true;
  }
  if (in.readUint(hash)) return true;
  std::string_view bytes;
  if (in.readBin(bytes) || in.readStr(bytes)) {
    if (bytes.empty()) return false;
    const size_t from = bytes.size() > 8 ? bytes.size() - 8 : 0;
    hash = 0;
    for (size_t k = from; k < bytes.size(); ++k)
      hash = (hash << 8) | static_cast<uint8_t>(bytes[k]);
    return true;
  }
  return false;
}

// An array of values read by `one`, bounded by kMaxHashesPerEvent and by the bytes left (each
// element takes at least one), so a lying count cannot make it reserve much.
template <typename T, typename ReadOne>
bool readList(Reader& in, std::vector<T>& out, KvDecodeError& error, ReadOne one) {
  uint32_t n = 0;
  if (!in.readArray(n)) return false;
  if (n > kMaxHashesPerEvent || n > in.remaining()) {
    error = KvDecodeError::kTooLarge;
    return false;
  }
  out.reserve(out.size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    T value{};
    if (!one(in, value)) return false;
    out.push_back(value);
  }
  return true;
}

bool readHashes(Reader& in, std::vector<uint64_t>& out, KvDecodeError& error) {
  return readList(in, out, error, readHash);
}

bool readOptionalHash(Reader& in, std::optional<uint64_t>& out) {
  if (in.readNil()) {
    out.reset();
    return true;
  }
  uint64_t h = 0;
  if (!readHash(in, h)) return false;
  out = h;
  return true;
}

bool readTokens(Reader& in, std::vector<int64_t>& out, KvDecodeError& error) {
  return readList(in, out, error, [](Reader& r, int64_t& t) { return r.readInt(t); });
}

bool readOptionalStr(Reader& in, std::string& out) {
  if (in.readNil()) return true;
  std::string_view s;
  if (!in.readStr(s)) return false;
  out.assign(s);
  return true;
}

bool readBlockSize(Reader& in, uint32_t& out) {
  uint64_t v = 0;
  if (!in.readUint(v) || v > (1u << 20)) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

// Field `index` of a positional event, or the field named `key` of a map event: one reader for
// both, keyed by the positional index. Unknown fields are skipped.
enum Field : int { kHashes, kParent, kTokens, kBlockSize, kLoraId, kMedium, kOther };

Field storedField(std::string_view key) {
  if (key == "block_hashes") return kHashes;
  if (key == "parent_block_hash") return kParent;
  if (key == "token_ids") return kTokens;
  if (key == "block_size") return kBlockSize;
  if (key == "medium") return kMedium;
  return kOther;
}
Field storedFieldAt(uint32_t index) {
  static constexpr Field kOrder[] = {kHashes, kParent, kTokens, kBlockSize, kLoraId, kMedium};
  return index < 6 ? kOrder[index] : kOther;
}
Field removedField(std::string_view key) {
  if (key == "block_hashes") return kHashes;
  if (key == "medium") return kMedium;
  return kOther;
}
Field removedFieldAt(uint32_t index) {
  return index == 0 ? kHashes : index == 1 ? kMedium : kOther;
}

bool readField(Reader& in, Field field, KvEvent& event, KvDecodeError& error) {
  switch (field) {
    case kHashes:
      return readHashes(in, event.block_hashes, error);
    case kParent:
      return readOptionalHash(in, event.parent_block_hash);
    case kTokens:
      return readTokens(in, event.token_ids, error);
    case kBlockSize:
      return readBlockSize(in, event.block_size);
    case kMedium:
      return readOptionalStr(in, event.medium);
    case kLoraId:
    case kOther:
      return in.skip();
  }
  return false;
}

bool typeOf(std::string_view tag, KvEventType& type) {
  if (tag == "BlockStored") {
    type = KvEventType::kBlockStored;
  } else if (tag == "BlockRemoved") {
    type = KvEventType::kBlockRemoved;
  } else if (tag == "AllBlocksCleared") {
    type = KvEventType::kAllBlocksCleared;
  } else {
    return false;
  }
  return true;
}

// One event; `known` false when its tag is not one of ours (it was skipped whole).
bool readEvent(Reader& in, KvEvent& event, bool& known, KvDecodeError& error) {
  known = false;
  uint32_t n = 0;
  if (in.readArray(n)) {
    std::string_view tag;
    if (n == 0 || !in.readStr(tag)) return false;
    if (!typeOf(tag, event.type)) {
      for (uint32_t i = 1; i < n; ++i) {
        if (!in.skip()) return false;
      }
      return true;
    }
    known = true;
    bool has_hashes = false;
    for (uint32_t i = 1; i < n; ++i) {
      const uint32_t index = i - 1;
      const Field field = event.type == KvEventType::kBlockStored    ? storedFieldAt(index)
                          : event.type == KvEventType::kBlockRemoved ? removedFieldAt(index)
                                                                     : kOther;
      has_hashes |= field == kHashes;
      if (!readField(in, field, event, error)) return false;
    }
    return has_hashes || event.type == KvEventType::kAllBlocksCleared;
  }
  if (!in.readMap(n)) return false;
  // The tag may come anywhere among the keys (msgspec writes it first): find it on a copy.
  Reader scan = in;
  std::string_view tag;
  bool tagged = false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!scan.readStr(key)) return false;
    if (key == "type") {
      if (!scan.readStr(tag)) return false;
      tagged = true;
      break;
    }
    if (!scan.skip()) return false;
  }
  if (!tagged) return false;
  known = typeOf(tag, event.type);
  bool has_hashes = false;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view key;
    if (!in.readStr(key)) return false;
    Field field = kOther;
    if (known && key != "type") {
      field = event.type == KvEventType::kBlockStored    ? storedField(key)
              : event.type == KvEventType::kBlockRemoved ? removedField(key)
                                                         : kOther;
    }
    has_hashes |= field == kHashes;
    if (!readField(in, field, event, error)) return false;
  }
  return !known || has_hashes || event.type == KvEventType::kAllBlocksCleared;
}

KvDecodeError readEvents(Reader& in, KvEventBatch& batch) {
  uint32_t n = 0;
  if (!in.readArray(n)) return KvDecodeError::kNotABatch;
  if (n > kMaxEventsPerBatch || n > in.remaining()) return KvDecodeError::kTooLarge;
  batch.events.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    KvEvent event;
    bool known = false;
    KvDecodeError error = KvDecodeError::kBadEvent;
    if (!readEvent(in, event, known, error)) return error;
    if (known) {
      batch.events.push_back(std::move(event));
    } else {
      ++batch.unknown;
    }
  }
  return KvDecodeError::kNone;
}

bool readRank(Reader& in, int64_t& rank) {
  if (in.readNil()) {
    rank = -1;
    return true;
  }
  return in.readInt(rank);
}

}  // namespace

std::string_view kvDecodeErrorName(KvDecodeError error) {
  switch (error) {
    case KvDecodeError::kNone:
      return "none";
    case KvDecodeError::kNotABatch:
      return "not_a_batch";
    case KvDecodeError::kBadEvent:
      return "bad_event";
    case KvDecodeError::kTrailing:
      return "trailing_bytes";
    case KvDecodeError::kTooLarge:
      return "too_large";
  }
  return "unknown";
}

KvDecodeError decodeKvEventBatch(std::string_view payload, KvEventBatch& batch) {
  batch = KvEventBatch{};
  Reader in(payload);
  uint32_t n = 0;
  if (in.readArray(n)) {
    if (n < 2 || n > 3) return KvDecodeError::kNotABatch;
    if (!in.readFloat(batch.ts)) return KvDecodeError::kNotABatch;
    if (const KvDecodeError e = readEvents(in, batch); e != KvDecodeError::kNone) return e;
    if (n == 3 && !readRank(in, batch.data_parallel_rank)) return KvDecodeError::kNotABatch;
  } else if (in.readMap(n)) {
    bool has_events = false;
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      if (!in.readStr(key)) return KvDecodeError::kNotABatch;
      if (key == "ts") {
        if (!in.readFloat(batch.ts)) return KvDecodeError::kNotABatch;
      } else if (key == "events") {
        if (const KvDecodeError e = readEvents(in, batch); e != KvDecodeError::kNone) return e;
        has_events = true;
      } else if (key == "data_parallel_rank") {
        if (!readRank(in, batch.data_parallel_rank)) return KvDecodeError::kNotABatch;
      } else if (!in.skip()) {
        return KvDecodeError::kNotABatch;
      }
    }
    if (!has_events) return KvDecodeError::kNotABatch;
  } else {
    return KvDecodeError::kNotABatch;
  }
  return in.atEnd() ? KvDecodeError::kNone : KvDecodeError::kTrailing;
}

std::optional<int64_t> decodeSequence(std::string_view frame) {
  if (frame.size() != 8) return std::nullopt;
  uint64_t v = 0;
  for (char c : frame) v = (v << 8) | static_cast<uint8_t>(c);
  return static_cast<int64_t>(v);
}

std::string encodeSequence(int64_t seq) {
  std::string out(8, '\0');
  auto v = static_cast<uint64_t>(seq);
  for (size_t i = 8; i-- > 0;) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return out;
}

std::optional<KvEventEncoding> parseKvEventEncoding(std::string_view text) {
  if (text == "map") return KvEventEncoding::kMap;
  if (text == "array") return KvEventEncoding::kArray;
  return std::nullopt;
}

namespace {

std::string_view tagOf(KvEventType type) {
  switch (type) {
    case KvEventType::kBlockStored:
      return "BlockStored";
    case KvEventType::kBlockRemoved:
      return "BlockRemoved";
    case KvEventType::kAllBlocksCleared:
      return "AllBlocksCleared";
  }
  return "";
}

void writeHashes(Writer& w, const std::vector<uint64_t>& hashes) {
  w.array(static_cast<uint32_t>(hashes.size()));
  // As vLLM's builtin hash: Python ints, written signed when they fit (msgspec does the same).
  for (uint64_t h : hashes) w.integer(static_cast<int64_t>(h));
}

void writeParent(Writer& w, const std::optional<uint64_t>& parent) {
  if (parent) {
    w.integer(static_cast<int64_t>(*parent));
  } else {
    w.nil();
  }
}

void writeTokens(Writer& w, const std::vector<int64_t>& tokens) {
  w.array(static_cast<uint32_t>(tokens.size()));
  for (int64_t t : tokens) w.integer(t);
}

void writeMedium(Writer& w, const std::string& medium) {
  if (medium.empty()) {
    w.nil();
  } else {
    w.str(medium);
  }
}

void writeEvent(Writer& w, const KvEvent& e, KvEventEncoding encoding) {
  const bool map = encoding == KvEventEncoding::kMap;
  switch (e.type) {
    case KvEventType::kBlockStored:
      if (map) {
        w.map(8);
        w.str("type");
      } else {
        w.array(8);
      }
      w.str(tagOf(e.type));
      if (map) w.str("block_hashes");
      writeHashes(w, e.block_hashes);
      if (map) w.str("parent_block_hash");
      writeParent(w, e.parent_block_hash);
      if (map) w.str("token_ids");
      writeTokens(w, e.token_ids);
      if (map) w.str("block_size");
      w.uinteger(e.block_size);
      if (map) w.str("lora_id");
      w.nil();
      if (map) w.str("medium");
      writeMedium(w, e.medium);
      if (map) w.str("lora_name");
      w.nil();
      break;
    case KvEventType::kBlockRemoved:
      if (map) {
        w.map(3);
        w.str("type");
      } else {
        w.array(3);
      }
      w.str(tagOf(e.type));
      if (map) w.str("block_hashes");
      writeHashes(w, e.block_hashes);
      if (map) w.str("medium");
      writeMedium(w, e.medium);
      break;
    case KvEventType::kAllBlocksCleared:
      if (map) {
        w.map(1);
        w.str("type");
      } else {
        w.array(1);
      }
      w.str(tagOf(e.type));
      break;
  }
}

}  // namespace

void encodeKvEventBatch(const KvEventBatch& batch, KvEventEncoding encoding, std::string& out) {
  Writer w(out);
  const bool map = encoding == KvEventEncoding::kMap;
  const bool rank = batch.data_parallel_rank >= 0;
  const uint32_t fields = rank ? 3 : 2;
  if (map) {
    w.map(fields);
    w.str("ts");
  } else {
    w.array(fields);
  }
  w.float64(batch.ts);
  if (map) w.str("events");
  w.array(static_cast<uint32_t>(batch.events.size()));
  for (const KvEvent& e : batch.events) writeEvent(w, e, encoding);
  if (rank) {
    if (map) w.str("data_parallel_rank");
    w.integer(batch.data_parallel_rank);
  }
}

}  // namespace switchyard::fleet::kv_index
