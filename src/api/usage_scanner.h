// UsageScanner: counts the tokens of an upstream OpenAI response while it streams through.
//
// Fed successive pieces of a (de-chunked) response body, split anywhere, it finds the "usage"
// object's token counts and, for SSE streams, counts the events that carry generated text, so the
// gateway can account output tokens even when the engine sends no usage. It does not build a
// JSON tree: a byte-level state machine tracks only string/escape state, nesting depth and the
// key being read. This is sound because in valid JSON an unescaped `"completion_tokens":` can
// only be a key.
//
// Memory is constant (a few dozen bytes of state carried between pieces, and up to 512 bytes of
// an event cut by a piece's end); feed() never allocates. Strings are skipped sixteen bytes at a
// time and classified where they lie; only the structure between them is read byte by byte. An
// event that lies whole in a piece (the usual `data: {...}` line and its blank line, without a
// backslash or a "usage" key) is read from key to key instead, with the same answer; one
// cut by a piece's end is kept until the next piece completes it (the answers, asked meanwhile,
// read what is kept). A plain JSON answer is passed over up to its first "usage" key outside
// strings (sixteen bytes at a time where they hold no backslash), and read byte by byte from
// there. One scanner per response; not thread-safe; reset() to reuse. Never throws; garbage
// input yields unknown/zero counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace switchyard::api {

class UsageScanner {
 public:
  enum class Mode {
    kSse,   // text/event-stream: `data: {...}` events, terminated by `data: [DONE]`
    kJson,  // one plain JSON response body
  };

  explicit UsageScanner(Mode mode = Mode::kSse) : mode_(mode) {}

  void reset(Mode mode) { *this = UsageScanner(mode); }
  void feed(std::string_view piece);

  // The usage object's completion_tokens if one was seen (the last one wins: engines that send
  // usage on every chunk report running totals). Otherwise, for streams, the number of events
  // whose delta carried non-empty generated text: "content" or "text", and also "reasoning",
  // "reasoning_content" and tool-call "arguments" (also generated tokens). For plain JSON
  // responses without usage, -1 (unknown). An event counts as one token: engines emit about one
  // token per chunk, so this is an estimate when they batch several.
  int64_t completionTokens() const;
  int64_t promptTokens() const {  // -1 unknown
    return carry_len_ > 0 ? settled().prompt_tokens_ : prompt_tokens_;
  }
  bool sawUsage() const {  // a "usage" object (not null) was seen
    return carry_len_ > 0 ? settled().saw_usage_ : saw_usage_;
  }
  bool sawDone() const {  // the stream's `data: [DONE]` terminator
    return carry_len_ > 0 ? settled().saw_done_ : saw_done_;
  }
  // Streams only (0 for a plain JSON answer, whose text is not counted).
  int64_t textEvents() const { return carry_len_ > 0 ? settled().text_events_ : text_events_; }

 private:
  // Keys the scanner reacts to; kNone for every other string.
  enum class Key : uint8_t { kNone, kUsage, kCompletionTokens, kPromptTokens, kText };
  // Where the SSE line parser is within the current line.
  enum class Line : uint8_t { kFieldName, kValueStart, kData, kIgnore };

  static constexpr size_t kMaxKey = 20;  // longest interesting key is "reasoning_content"

  void feedJson(const char* p, const char* end);
  const char* skipToUsage(const char* p, const char* end);
  // What scanWholeEvent() made of the event at a line's start.
  enum class Whole : uint8_t { kRead, kCut, kDeclined };
  void feedSse(const char* p, const char* end, bool may_carry = true);
  Whole scanWholeEvent(const char*& p, const char* end);
  const char* finishCarried(const char* p, const char* end);
  void feedCarried();
  UsageScanner settled() const;  // a copy with the carried bytes read
  bool jsonAtRest() const;
  const char* feedString(const char* p, const char* end);
  void endLine();
  void commitDigit(char c);
  void endEvent();
  void resetJson();
  void markText();
  static Key classifyKey(std::string_view key);
  static Key keyBeforeColon(const char* value, const char* colon, const char*& open);

  Mode mode_ = Mode::kSse;
  int64_t usage_completion_ = -1;
  int64_t prompt_tokens_ = -1;
  int64_t text_events_ = 0;
  bool saw_usage_ = false;
  bool saw_done_ = false;

  // SSE line state.
  Line line_ = Line::kFieldName;
  bool last_was_cr_ = false;  // swallow the '\n' of a "\r\n" pair
  uint8_t field_len_ = 0;
  char field_[4] = {};        // first bytes of the field name; only "data" matters
  bool field_overflow_ = false;
  uint32_t data_len_ = 0;     // bytes of the current data line's value (saturating)
  uint8_t done_match_ = 0;    // prefix of "[DONE]" matched so far on this line
  bool event_counted_ = false;

  // JSON state (reset per SSE event).
  bool in_string_ = false;
  bool escape_ = false;
  bool watch_text_ = false;   // the current string is a text value: is it non-empty?
  bool json_started_ = false;
  Key pending_ = Key::kNone;  // a string that may be a key, awaiting ':'
  Key active_ = Key::kNone;   // a key whose value comes next
  uint8_t key_len_ = 0;       // kMaxKey + 1 means "too long / escaped: not interesting"
  char key_[kMaxKey] = {};
  int32_t depth_ = 0;
  int32_t usage_depth_ = -1;  // depth inside the "usage" object, -1 outside
  Key number_key_ = Key::kNone;  // token count being read, digit by digit
  int64_t number_ = 0;

  // An event cut by a piece's end, kept until the rest arrives so that it too is read whole
  // (the byte-level reading would take both halves). Upstream reads end mid-event often.
  static constexpr size_t kCarry = 512;
  uint16_t carry_len_ = 0;
  char carry_[kCarry] = {};

  // The start of the last event read whole, up to its first text key (scanWholeEvent()), when
  // it fits: most events of a stream begin with the same bytes.
  static constexpr size_t kMemo = 256;
  uint16_t memo_len_ = 0;
  char memo_[kMemo] = {};
};

}  // namespace switchyard::api
