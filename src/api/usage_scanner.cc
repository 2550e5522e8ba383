#include "api/usage_scanner.h"

#include <array>
#include <bit>
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

// The keys classifyKey() knows, as a bit per first letter for each length: a string whose
// length and first letter match none is turned away without a comparison (most keys are).
constexpr size_t kLongestKey = 20;
constexpr std::array<uint32_t, kLongestKey + 1> kKeyFirstLetters = [] {
  std::array<uint32_t, kLongestKey + 1> letters{};
  for (const std::string_view key : {"text", "usage", "content", "reasoning", "arguments",
                                     "prompt_tokens", "completion_tokens", "reasoning_content"}) {
    letters[key.size()] |= 1u << (key[0] - 'a');
  }
  return letters;
}();

bool mayBeKnownKey(const char* name, size_t size) {
  if (size - 1 >= kLongestKey) return false;  // empty, or longer than any
  const auto letter = static_cast<unsigned>(static_cast<unsigned char>(name[0]) - 'a');
  return letter < 26 && ((kKeyFirstLetters[size] >> letter) & 1) != 0;
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
    feedJson(p, end);
  } else {
    feedSse(p, end);
  }
}

UsageScanner::Key UsageScanner::classifyKey(std::string_view key) {
  static_assert(kMaxKey == kLongestKey);
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
        watch_text_ = active_ == Key::kText;
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

// Calls `on_quote` with each quote of the line [p, eol), in order, sixteen bytes at a time; `start`
// (at or before p) is where the readable bytes begin, for the last sixteen. False as soon as
// `on_quote` is, or when the line holds a backslash (a string's end is then not simply the next
// quote) or a '\r' (another line end).
template <typename OnQuote>
bool forEachQuote(const char* p, const char* eol, const char* start, OnQuote&& on_quote) {
#if defined(__SSE2__)
  const auto masks = [](const char* at, unsigned& quotes) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    quotes = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'))));
    return static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\')),
                                       _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\r')))));
  };
  const auto walk = [&](const char* at, unsigned quotes) {
    for (; quotes != 0; quotes &= quotes - 1) {
      if (!on_quote(at + std::countr_zero(quotes))) return false;
    }
    return true;
  };
  unsigned quotes = 0;
  for (; eol - p >= 16; p += 16) {
    if (masks(p, quotes) != 0 || !walk(p, quotes)) return false;
  }
  if (p < eol && eol - start >= 16) {
    // The last bytes as the end of a full sixteen, the ones already read masked off.
    const char* at = eol - 16;
    const unsigned fresh = ~0u << static_cast<unsigned>(p - at);
    return (masks(at, quotes) & fresh) == 0 && walk(at, quotes & fresh);
  }
#else
  (void)start;
#endif
  for (; p < eol; ++p) {
    if (*p == '\\' || *p == '\r' || (*p == '"' && !on_quote(p))) return false;
  }
  return true;
}

// Whether the bytes between a string's end and the next string's start make that string a key
// whose value comes next: blanks around exactly one ':' (feedJson() reads them the same way).
bool onlyColonBetween(const char* p, const char* end) {
  int colons = 0;
  for (; p < end; ++p) {
    if (*p == ':') {
      ++colons;
    } else if (*p != ' ' && *p != '\t') {
      return false;
    }
  }
  return colons == 1;
}

}  // namespace

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
  // Strings from quote to quote: with no backslash in the line, every quote is a string's end.
  bool text = false;
  Key key = Key::kNone;       // the string just read, when it is followed as a key is
  const char* after = value;  // the end of the string just read
  const char* open = nullptr;  // the opening quote of the string being read
  const auto on_quote = [&](const char* quote) {
    if (open == nullptr) {
      open = quote;
      return true;
    }
    if (key == Key::kText && quote != open + 1 && onlyColonBetween(after, open)) text = true;
    // Only a string followed by ':' or a blank can be a key; a value is not looked at.
    const char next = quote[1];  // at most the line's '\n'
    const auto n = static_cast<size_t>(quote - open - 1);
    key = (next == ':' || next == ' ' || next == '\t') && mayBeKnownKey(open + 1, n)
              ? classifyKey(std::string_view(open + 1, n))
              : Key::kNone;
    after = quote + 1;
    open = nullptr;
    return key != Key::kUsage;
  };
  if (!forEachQuote(value, eol, p, on_quote)) return Whole::kDeclined;
  // A string the line ends in: its value gets the line's '\n' at least.
  if (open != nullptr && key == Key::kText && onlyColonBetween(after, open)) text = true;
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
