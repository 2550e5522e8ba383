#include "api/usage_scanner.h"

#include <bit>
#include <cstddef>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace switchyard::api {
namespace {

constexpr std::string_view kDone = "[DONE]";
constexpr uint32_t kMaxDataLen = 1u << 20;  // data_len_ saturates here; only "== 6" matters

// The first byte equal to A or B in [p, end), or end. Sixteen bytes at a time with SSE2 (every
// x86-64 has it), else eight with SWAR: the strings and lines of a streamed chunk are short (ids,
// keys, a token or two), where two memchr calls per string or line cost more than the scan.
template <char A, char B>
const char* findEither(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8(A);
  const __m128i b = _mm_set1_epi8(B);
  while (end - p >= 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int hits = _mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, a), _mm_cmpeq_epi8(bytes, b)));
    if (hits != 0) return p + std::countr_zero(static_cast<unsigned>(hits));
    p += 16;
  }
#endif
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  static_assert(std::endian::native == std::endian::little, "the first byte is the lowest");
  while (end - p >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    const uint64_t x = word ^ (kOnes * static_cast<uint8_t>(A));
    const uint64_t y = word ^ (kOnes * static_cast<uint8_t>(B));
    // A byte of `x` is zero iff its high bit is set here (exact for the lowest such byte).
    const uint64_t hits = ((x - kOnes) & ~x & kHighs) | ((y - kOnes) & ~y & kHighs);
    if (hits != 0) return p + std::countr_zero(hits) / 8;
    p += 8;
  }
  while (p < end && *p != A && *p != B) ++p;
  return p;
}

}  // namespace

int64_t UsageScanner::completionTokens() const {
  if (carry_len_ > 0) return settled().completionTokens();
  if (usage_completion_ >= 0) return usage_completion_;
  return mode_ == Mode::kSse ? text_events_ : -1;
}

void UsageScanner::feed(std::string_view piece) {
  const char* p = piece.data();
  const char* end = p + piece.size();
  if (mode_ == Mode::kJson) {
    if (jsonAtRest()) {
      const char* key = skipToUsage(p, end);
      json_started_ = key != p;  // what was passed over began the answer
      p = key;
    }
    feedJson(p, end);
  } else {
    feedSse(p, end);
  }
}

UsageScanner::Key UsageScanner::classifyKey(std::string_view key) {
  switch (key.size()) {
    case 4:
      return key == "text" ? Key::kText : Key::kNone;
    case 5:
      return key == "usage" ? Key::kUsage : Key::kNone;
    case 7:
      return key == "content" ? Key::kText : Key::kNone;
    case 9:
      return key == "reasoning" || key == "arguments" ? Key::kText : Key::kNone;
    case 13:
      return key == "prompt_tokens" ? Key::kPromptTokens : Key::kNone;
    case 17:
      if (key == "completion_tokens") return Key::kCompletionTokens;
      return key == "reasoning_content" ? Key::kText : Key::kNone;
    default:
      return Key::kNone;
  }
}

void UsageScanner::markText() {
  if (event_counted_) return;
  event_counted_ = true;
  ++text_events_;
}

void UsageScanner::resetJson() {
  in_string_ = false;
  escape_ = false;
  watch_text_ = false;
  json_started_ = false;
  pending_ = Key::kNone;
  active_ = Key::kNone;
  key_len_ = 0;
  depth_ = 0;
  usage_depth_ = -1;
  number_key_ = Key::kNone;
  number_ = 0;
}

void UsageScanner::endEvent() {
  event_counted_ = false;
  resetJson();
}

// Token counts are committed digit by digit so that a number split across pieces (or a body
// that ends right after it) needs no look-ahead.
void UsageScanner::commitDigit(char c) {
  constexpr int64_t kLimit = (std::numeric_limits<int64_t>::max() - 9) / 10;
  if (number_ > kLimit) return;  // absurd value: keep the saturated prefix
  number_ = number_ * 10 + (c - '0');
  if (number_key_ == Key::kCompletionTokens) {
    usage_completion_ = number_;
  } else {
    prompt_tokens_ = number_;
  }
}

// Inside a string (in_string_): up to and including its closing quote, or to `end`. Returns
// where the scan stopped. The string's bytes are looked at only when it closes: a string that
// opened in this piece is classified where it lies, and only one cut by the piece's end is
// copied (key_), so most strings cost one SWAR scan.
const char* UsageScanner::feedString(const char* p, const char* end) {
  const char* const start = p;
  const char* close = nullptr;
  while (p < end) {
    if (escape_) {
      escape_ = false;
      ++p;  // the escaped byte: an escaped key is never one of the plain ones we look for
      continue;
    }
    const char* stop = findEither<'"', '\\'>(p, end);
    if (stop == end) {
      p = end;
      break;
    }
    if (*stop == '\\') {
      escape_ = true;
      key_len_ = kMaxKey + 1;
      p = stop + 1;
      continue;
    }
    close = stop;
    break;
  }
  const char* const content_end = close != nullptr ? close : end;
  if (watch_text_ && content_end != start) {
    watch_text_ = false;  // a text value with at least one byte: this event carries text
    markText();
  }
  const size_t n = static_cast<size_t>(content_end - start);
  if (close == nullptr) {
    // Cut by the piece's end: keep what may still be an interesting key.
    if (key_len_ + n <= kMaxKey) {
      std::memcpy(key_ + key_len_, start, n);
      key_len_ = static_cast<uint8_t>(key_len_ + n);
    } else {
      key_len_ = kMaxKey + 1;
    }
    return end;
  }
  in_string_ = false;
  watch_text_ = false;
  if (key_len_ == 0) {
    pending_ = n <= kMaxKey ? classifyKey(std::string_view(start, n)) : Key::kNone;
  } else if (key_len_ + n <= kMaxKey) {
    std::memcpy(key_ + key_len_, start, n);
    pending_ = classifyKey(std::string_view(key_, key_len_ + n));
  } else {
    pending_ = Key::kNone;
  }
  return close + 1;
}

// Outside strings, byte by byte: the structure (depth, keys and their colons) and the digits of
// a token count inside "usage".
void UsageScanner::feedJson(const char* p, const char* end) {
  while (p < end) {
    if (in_string_) {
      p = feedString(p, end);
      continue;
    }
    const char c = *p++;
    if (number_key_ != Key::kNone) {
      if (c >= '0' && c <= '9') {
        commitDigit(c);
        continue;
      }
      number_key_ = Key::kNone;
    }
    switch (c) {
      case ' ':
      case '\t':
      case '\n':
      case '\r':
        break;  // whitespace between a key, its colon and its value keeps the key state
      case '"':
        in_string_ = true;
        escape_ = false;
        key_len_ = 0;
        watch_text_ = active_ == Key::kText && mode_ == Mode::kSse;
        active_ = pending_ = Key::kNone;
        break;
      case ':':
        active_ = pending_;
        pending_ = Key::kNone;
        break;
      case '{':
        json_started_ = true;
        ++depth_;
        if (active_ == Key::kUsage) {
          usage_depth_ = depth_;
          saw_usage_ = true;
        }
        active_ = pending_ = Key::kNone;
        break;
      case '[':
        json_started_ = true;
        ++depth_;
        active_ = pending_ = Key::kNone;
        break;
      case '}':
      case ']':
        if (depth_ == usage_depth_) usage_depth_ = -1;
        if (depth_ > 0) --depth_;
        active_ = pending_ = Key::kNone;
        break;
      default:
        if (c >= '0' && c <= '9' && depth_ == usage_depth_ &&
            (active_ == Key::kCompletionTokens || active_ == Key::kPromptTokens)) {
          number_key_ = active_;
          number_ = 0;
          commitDigit(c);
        }
        active_ = pending_ = Key::kNone;
        break;
    }
  }
}

void UsageScanner::endLine() {
  if (line_ == Line::kData || line_ == Line::kValueStart) {
    if (done_match_ == kDone.size() && data_len_ == kDone.size()) saw_done_ = true;
    static constexpr char kNewline = '\n';
    feedJson(&kNewline, &kNewline + 1);  // SSE joins an event's data lines with '\n'
    // A complete JSON value ends the event even if the blank separator line never comes.
    if (json_started_ && depth_ == 0 && !in_string_) endEvent();
  }
  line_ = Line::kFieldName;
  field_len_ = 0;
  field_overflow_ = false;
  data_len_ = 0;
  done_match_ = 0;
}

bool UsageScanner::jsonAtRest() const {
  return !in_string_ && !json_started_ && depth_ == 0 && pending_ == Key::kNone &&
         active_ == Key::kNone && usage_depth_ == -1 && number_key_ == Key::kNone;
}

namespace {

// Bit i of each mask stands for byte i of a 64-byte block.
struct BlockMasks {
  uint64_t quotes = 0;
  uint64_t colons = 0;
  // Nonzero when the block holds a backslash (a string's end is then not simply the next quote)
  // or a '\r'; not by position.
  uint64_t stops = 0;
};

BlockMasks classifyBlock(const char* at) {
  BlockMasks m;
#if defined(__SSE2__)
  // The stops only matter as "any or none": one mask for the whole block.
  __m128i stops = _mm_setzero_si128();
  for (int lane = 0; lane < 4; ++lane) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 16 * lane));
    const auto bits = [&](__m128i eq) {
      return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(eq))) << (16 * lane);
    };
    m.quotes |= bits(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"')));
    m.colons |= bits(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(':')));
    stops = _mm_or_si128(stops, _mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\')),
                                             _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\r'))));
  }
  m.stops = static_cast<uint64_t>(_mm_movemask_epi8(stops));
#else
  for (unsigned i = 0; i < 64; ++i) {
    const uint64_t bit = uint64_t{1} << i;
    m.quotes |= at[i] == '"' ? bit : 0;
    m.colons |= at[i] == ':' ? bit : 0;
    m.stops |= at[i] == '\\' || at[i] == '\r' ? bit : 0;
  }
#endif
  return m;
}

// The bytes [at, end), fewer than 64, as the low bits of a block. `start` (at or before `at`)
// is where the readable bytes begin: the block is read so that it ends at `end` when it can.
BlockMasks classifyTail(const char* at, const char* end, const char* start) {
  const auto n = static_cast<unsigned>(end - at);
  if (end - start >= 64) {
    BlockMasks m = classifyBlock(end - 64);
    const unsigned drop = 64 - n;  // the bytes before `at`, already read
    // Those bytes hold no stop either (the line's earlier blocks, or "data: " before them).
    return {m.quotes >> drop, m.colons >> drop, m.stops};
  }
  char block[64] = {};
  std::memcpy(block, at, n);
  return classifyBlock(block);
}

// Bit i set when an odd number of bits at or below i are: with quotes, "inside a string".
uint64_t prefixXor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Whether the string that ends at `close` (a closing quote) is `quoted_key`: the key's name
// with its opening quote. With no backslash in the line the string holds no quote, so a quote
// that far back is its opening one. `value` is where the line's JSON begins.
bool stringIs(const char* value, const char* close, std::string_view quoted_key,
              const char*& open) {
  if (static_cast<size_t>(close - value) < quoted_key.size() ||
      std::memcmp(close - quoted_key.size(), quoted_key.data(), quoted_key.size()) != 0) {
    return false;
  }
  open = close - quoted_key.size();
  return true;
}

// Whether a value after a colon is a string with at least one byte: blanks, a quote, and
// anything but its closing quote (the line's '\n' included, as the byte-level reading has it).
bool nonEmptyStringAfter(const char* colon, const char* eol) {
  const char* v = colon + 1;
  while (v < eol && (*v == ' ' || *v == '\t')) ++v;
  return v < eol && *v == '"' && v[1] != '"';
}

}  // namespace

// The key a colon outside strings makes active (as feedJson() reads it): the string just before
// the colon, blanks allowed between, when it is one of those this reading cares about; `open`
// is then set to its opening quote.
UsageScanner::Key UsageScanner::keyBeforeColon(const char* value, const char* colon,
                                               const char*& open) {
  const char* close = colon - 1;
  while (close > value && (*close == ' ' || *close == '\t')) --close;
  if (*close != '"') return Key::kNone;  // `value` is the '{' at the latest: close[-1] is readable
  switch (close[-1]) {
    case 't':
      return stringIs(value, close, "\"content", open) ||
                     stringIs(value, close, "\"text", open) ||
                     stringIs(value, close, "\"reasoning_content", open)
                 ? Key::kText
                 : Key::kNone;
    case 'g':
      return stringIs(value, close, "\"reasoning", open) ? Key::kText : Key::kNone;
    case 's':
      return stringIs(value, close, "\"arguments", open) ? Key::kText : Key::kNone;
    case 'e':
      return stringIs(value, close, "\"usage", open) ? Key::kUsage : Key::kNone;
    default:
      return Key::kNone;
  }
}

namespace {

constexpr std::string_view kUsageKey = "\"usage\"";

// Whether the string opening at `quote` (outside strings) is the key "usage": its bytes, then
// JSON blanks, then a colon, all before `end`.
bool usageKeyAt(const char* quote, const char* end) {
  if (end - quote < static_cast<ptrdiff_t>(kUsageKey.size()) ||
      std::memcmp(quote, kUsageKey.data(), kUsageKey.size()) != 0) {
    return false;
  }
  const char* after = quote + kUsageKey.size();
  while (after < end && (*after == ' ' || *after == '\t' || *after == '\n' || *after == '\r')) {
    ++after;
  }
  return after < end && *after == ':';
}

}  // namespace

// A plain JSON answer before anything of it was read. What counts in it is the "usage" object,
// usually at its end; before that key nothing changes an answer (the nesting depth matters only
// relative to where the usage object opens). So the first "usage" key outside strings is looked
// for, sixteen bytes at a time where they hold no backslash (the quotes then open and close
// strings in turn, and the key is a quote with another six bytes on), byte by byte where they
// do; the byte-level reading takes over at that key's opening quote, which is returned.
// Returns `p` when the piece holds no such key.
const char* UsageScanner::skipToUsage(const char* p, const char* end) {
  bool inside = false;  // in a string where `at` is
  bool escape = false;  // `at` is escaped (inside a string)
  const char* at = p;
  const auto byte = [&](const char* c) {  // true at the key's opening quote
    if (escape) {
      escape = false;
    } else if (inside) {
      if (*c == '\\') escape = true;
      inside = *c != '"';
    } else if (*c == '"') {
      if (usageKeyAt(c, end)) return true;
      inside = true;
    }
    return false;
  };
#if defined(__SSE2__)
  constexpr ptrdiff_t kLast = kUsageKey.size() - 1;  // the key's closing quote, from its opening
  for (; end - at >= 16 + kLast; at += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const auto mask = [](__m128i v, char c) {
      return static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
    };
    if (escape || mask(bytes, '\\') != 0) {
      for (const char* c = at; c < at + 16; ++c) {
        if (byte(c)) return c;
      }
      continue;
    }
    const unsigned quotes = mask(bytes, '"');
    const auto later = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + kLast));
    for (unsigned keys = quotes & mask(later, '"'); keys != 0; keys &= keys - 1) {
      const int bit = std::countr_zero(keys);
      const bool opens = inside == __builtin_parity(quotes & ((1u << bit) - 1));
      if (opens && usageKeyAt(at + bit, end)) return at + bit;
    }
    inside ^= __builtin_parity(quotes) != 0;
  }
#endif
  for (; at < end; ++at) {
    if (byte(at)) return at;
  }
  return p;
}

// At the start of a line with the JSON state at rest: an event whose one data line and blank line
// are both in this piece, read from string to string. Only text matters in it; a backslash, a
// "usage" key or anything unusual hands the event back to the byte-level reading (kDeclined),
// before anything has changed; an event the piece's end cuts is kCut, one read is kRead (`p`
// then points past its blank line).
UsageScanner::Whole UsageScanner::scanWholeEvent(const char*& p, const char* end) {
  constexpr std::string_view kField = "data:";
  constexpr std::string_view kUsual = "data: {";  // how an event's line usually starts
  const auto left = static_cast<size_t>(end - p);
  if (left < kUsual.size()) {  // cut before its value could be told: whatever it is, wait
    return std::memcmp(p, kUsual.data(), left) == 0 ? Whole::kCut : Whole::kDeclined;
  }
  if (std::memcmp(p, kField.data(), kField.size()) != 0) return Whole::kDeclined;
  const char* value = p + kField.size();
  if (*value == ' ') ++value;
  if (*value != '{') return Whole::kDeclined;  // not an object ("[DONE]", ...): byte by byte
  // The line's end first: an event cut by the piece's end costs one quick search.
  const auto* eol =
      static_cast<const char*>(std::memchr(value, '\n', static_cast<size_t>(end - value)));
  if (eol == nullptr || eol + 1 == end) return Whole::kCut;
  if (eol[1] != '\n') return Whole::kDeclined;
  // Engines repeat the same fields at the start of every event of a stream (id, object,
  // created, model, up to the delta). The line up to its first text key, when the last event
  // read whole had that same start, is known to hold nothing that counts: skip it.
  const auto length = static_cast<size_t>(eol - value);
  const char* from = value;
  if (memo_len_ > 0 && length > memo_len_ && std::memcmp(value, memo_, memo_len_) == 0) {
    from += memo_len_;
  }
  // Sixty-four bytes at a time: which colons lie outside strings (quotes counted from `from`,
  // outside any string; with no backslash in the line every quote opens or closes one), and for
  // each, the key before it and the value after it. Only colons are visited, one per key.
  bool text = false;
  const char* first_text_key = nullptr;
  uint64_t open_string = 0;  // all ones when a string is open where the block begins
  for (const char* at = from; at < eol; at += 64) {
    const BlockMasks m = eol - at >= 64 ? classifyBlock(at) : classifyTail(at, eol, p);
    if (m.stops != 0) return Whole::kDeclined;
    const uint64_t inside = prefixXor(m.quotes) ^ open_string;
    open_string = (inside >> 63) != 0 ? ~uint64_t{0} : 0;
    for (uint64_t colons = m.colons & ~inside; colons != 0; colons &= colons - 1) {
      const char* colon = at + std::countr_zero(colons);
      const char* key_open = nullptr;
      const Key key = keyBeforeColon(value, colon, key_open);
      if (key == Key::kUsage) return Whole::kDeclined;  // its counts: byte by byte
      if (key != Key::kText) continue;
      if (first_text_key == nullptr) first_text_key = key_open;
      if (!text) text = nonEmptyStringAfter(colon, eol);
    }
  }
  // Before the first text key's opening quote: outside strings, and no colon that counts.
  if (first_text_key != nullptr && first_text_key != from) {
    const auto n = static_cast<size_t>(first_text_key - value);
    memo_len_ = n <= kMemo ? static_cast<uint16_t>(n) : 0;
    std::memcpy(memo_, value, memo_len_);
  }
  if (text) markText();
  endEvent();
  p = eol + 2;
  return Whole::kRead;
}

// The carried event and the start of the next piece: read whole when the piece completes it
// (up to its blank line), kept longer when the piece ends first, read byte by byte otherwise.
// Returns where the piece's own reading resumes.
const char* UsageScanner::finishCarried(const char* p, const char* end) {
  const auto* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
  const char* through = end;  // the piece's bytes that belong with the carried ones
  if (carry_[carry_len_ - 1] == '\n' && p < end && *p == '\n') {
    through = p + 1;
  } else if (eol != nullptr && eol + 1 < end) {
    through = eol + 2;
  }
  const auto n = static_cast<size_t>(through - p);
  if (carry_len_ + n > kCarry) {
    feedCarried();
    return p;
  }
  std::memcpy(carry_ + carry_len_, p, n);
  carry_len_ = static_cast<uint16_t>(carry_len_ + n);
  if (through == end) {
    // Still cut, or the piece ended where the event does: reading it whole needs what follows.
    const bool complete = carry_len_ >= 2 && carry_[carry_len_ - 2] == '\n' &&
                          carry_[carry_len_ - 1] == '\n';
    if (!complete) return end;
  }
  feedCarried();
  return through;
}

// Reads the carried bytes as they came; they are followed by more, so nothing is carried again.
void UsageScanner::feedCarried() {
  char bytes[kCarry];
  const size_t n = carry_len_;
  std::memcpy(bytes, carry_, n);
  carry_len_ = 0;
  feedSse(bytes, bytes + n, false);
}

UsageScanner UsageScanner::settled() const {
  UsageScanner copy(*this);
  copy.feedCarried();
  return copy;
}

void UsageScanner::feedSse(const char* p, const char* end, bool may_carry) {
  if (carry_len_ > 0 && p < end) p = finishCarried(p, end);
  while (p < end) {
    if (line_ == Line::kFieldName && field_len_ == 0 && !field_overflow_ && !last_was_cr_ &&
        *p == 'd' && jsonAtRest()) {
      const Whole whole = scanWholeEvent(p, end);
      if (whole == Whole::kRead) continue;
      if (whole == Whole::kCut && may_carry && static_cast<size_t>(end - p) <= kCarry) {
        std::memcpy(carry_, p, static_cast<size_t>(end - p));
        carry_len_ = static_cast<uint16_t>(end - p);
        return;
      }
    }
    char c = *p;
    if (last_was_cr_) {
      last_was_cr_ = false;
      if (c == '\n') {
        ++p;
        continue;
      }
    }
    if (c == '\n' || c == '\r') {
      last_was_cr_ = c == '\r';
      ++p;
      if (line_ == Line::kFieldName && field_len_ == 0 && !field_overflow_) {
        endEvent();  // blank line: the event separator
      }
      endLine();
      continue;
    }
    switch (line_) {
      case Line::kFieldName:
        if (c == ':') {
          bool is_data = !field_overflow_ && field_len_ == 4 && std::memcmp(field_, "data", 4) == 0;
          line_ = is_data ? Line::kValueStart : Line::kIgnore;
        } else if (field_len_ < sizeof(field_)) {
          field_[field_len_++] = c;
        } else {
          field_overflow_ = true;
        }
        ++p;
        break;
      case Line::kValueStart:
        line_ = Line::kData;
        if (c == ' ') {
          ++p;  // the one optional space after "data:"
          break;
        }
        [[fallthrough]];
      case Line::kData: {
        const char* stop = findEither<'\n', '\r'>(p, end);
        size_t n = static_cast<size_t>(stop - p);
        for (size_t k = 0; k < n && data_len_ + k < kDone.size(); ++k) {
          if (done_match_ == data_len_ + k && p[k] == kDone[data_len_ + k]) ++done_match_;
        }
        data_len_ = n >= kMaxDataLen - data_len_ ? kMaxDataLen
                                                 : data_len_ + static_cast<uint32_t>(n);
        feedJson(p, stop);
        p = stop;
        break;
      }
      case Line::kIgnore:
        while (p < end && *p != '\n' && *p != '\r') ++p;
        break;
    }
  }
}

}  // namespace switchyard::api
