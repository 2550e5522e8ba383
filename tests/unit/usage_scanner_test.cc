#include "api/usage_scanner.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace switchyard::api {
namespace {

// A vLLM-style chat stream: role chunk, three content chunks, an empty final chunk with
// finish_reason, a usage chunk, [DONE].
const std::string kChatStream =
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo \"usage\":{\"completion_tokens\":999}"},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"!"},"logprobs":null,"finish_reason":null}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"}]})"
    "\n\n"
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":17,"total_tokens":22,"completion_tokens":5,"completion_tokens_details":null}})"
    "\n\n"
    "data: [DONE]\n\n";

std::string withoutUsageChunk(const std::string& s) {
  size_t begin = s.find("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
                        "\"created\":1,\"model\":\"m\",\"choices\":[],");
  size_t end = s.find("data: [DONE]");
  return s.substr(0, begin) + s.substr(end);
}

UsageScanner scanWhole(std::string_view body, UsageScanner::Mode mode) {
  UsageScanner s(mode);
  s.feed(body);
  return s;
}

TEST(UsageScannerTest, StreamWithUsage) {
  UsageScanner s = scanWhole(kChatStream, UsageScanner::Mode::kSse);
  EXPECT_TRUE(s.sawUsage());
  EXPECT_TRUE(s.sawDone());
  EXPECT_EQ(s.completionTokens(), 5);
  EXPECT_EQ(s.promptTokens(), 17);
  EXPECT_EQ(s.textEvents(), 3);  // the escaped "usage" inside content is text, not a key
}

TEST(UsageScannerTest, StreamWithoutUsageCountsTextEvents) {
  UsageScanner s = scanWhole(withoutUsageChunk(kChatStream), UsageScanner::Mode::kSse);
  EXPECT_FALSE(s.sawUsage());
  EXPECT_TRUE(s.sawDone());
  EXPECT_EQ(s.completionTokens(), 3);
  EXPECT_EQ(s.promptTokens(), -1);
}

TEST(UsageScannerTest, EverySplitGivesTheSameAnswer) {
  for (size_t cut = 0; cut <= kChatStream.size(); ++cut) {
    UsageScanner s(UsageScanner::Mode::kSse);
    s.feed(std::string_view(kChatStream).substr(0, cut));
    s.feed(std::string_view(kChatStream).substr(cut));
    ASSERT_EQ(s.completionTokens(), 5) << cut;
    ASSERT_EQ(s.promptTokens(), 17) << cut;
    ASSERT_EQ(s.textEvents(), 3) << cut;
    ASSERT_TRUE(s.sawDone()) << cut;
  }
  UsageScanner bytewise(UsageScanner::Mode::kSse);
  for (char c : kChatStream) bytewise.feed(std::string_view(&c, 1));
  EXPECT_EQ(bytewise.completionTokens(), 5);
  EXPECT_EQ(bytewise.textEvents(), 3);
  EXPECT_TRUE(bytewise.sawDone());
}

UsageScanner scanBytewise(std::string_view body) {
  UsageScanner s(UsageScanner::Mode::kSse);
  for (char c : body) s.feed(std::string_view(&c, 1));
  return s;
}

// Every answer of `a` and `b` agrees.
void expectSameAnswers(const UsageScanner& a, const UsageScanner& b, std::string_view context) {
  EXPECT_EQ(a.textEvents(), b.textEvents()) << context;
  EXPECT_EQ(a.completionTokens(), b.completionTokens()) << context;
  EXPECT_EQ(a.promptTokens(), b.promptTokens()) << context;
  EXPECT_EQ(a.sawUsage(), b.sawUsage()) << context;
  EXPECT_EQ(a.sawDone(), b.sawDone()) << context;
}

// An event that lies whole in a piece is read from string to string; one fed byte by byte is
// read byte by byte. Both readings must agree on every shape of event, valid JSON or not.
TEST(UsageScannerTest, WholeEventsAgreeWithByteByByteReading) {
  const std::vector<std::string> events = {
      R"(data: {"choices":[{"delta":{"content":"x"}}]})",
      R"(data: {"choices":[{"delta":{"content":""}}]})",
      R"(data: {"choices":[{"delta":{"content":null}}]})",
      R"(data: {"delta":{"content" :  "x"}})",
      R"(data: {"delta":{"content"	:	"x"}})",
      R"(data: {"delta":{"content"::"x"}})",
      R"(data: {"delta":{"content":1,"x":"y"}})",
      R"(data: {"delta":{"content":)",
      R"(data: {"delta":{"content":")",
      R"(data: {"delta":{"content":"ab)",
      R"(data: {"delta":{"content":"")",
      R"(data:{"text":"x"})",
      R"(data:  {"text":"x"})",
      R"(data: {"reasoning_content":"x"} {"content":"y"})",
      R"(data: {"arguments":"{}"})",
      R"(data: {"a":"content","b":":","c":"x"})",
      R"(data: {"content","x"})",
      R"(data: {"content":"a\"b"})",
      R"(data: {"content":""})",
      R"(data: {"usage":{"completion_tokens":7,"prompt_tokens":3}})",
      R"(data: {"completion_tokens":9,"usage":null})",
      R"(data: {"prompt_tokens":4,"content":"z"})",
      R"(data: {"a_key_longer_than_twenty_bytes_content":"x","content":"y"})",
      R"(data: {})",
      R"(data: {)",
      R"(data: {"x":"y"}}]]})",
      R"(data: [DONE])",
      "data: {\"content\":\"x\"}\r",
      "data: {\"content\":\"x\"}\ndata: {\"content\":\"y\"}",
      "data: {\"content\":\ndata: \"y\"}",
      "id: 3\ndata: {\"content\":\"x\"}",
      ": comment\ndata: {\"content\":\"x\"}",
  };
  std::string body;
  for (const std::string& event : events) {
    for (const std::string& pair : {event + "\n\n", event + "\n\n" + event + "\n\n"}) {
      expectSameAnswers(scanWhole(pair, UsageScanner::Mode::kSse), scanBytewise(pair), pair);
    }
    body += event + "\n\n";
  }
  // All of them in one piece, each event starting wherever the one before left the state.
  const UsageScanner whole = scanWhole(body, UsageScanner::Mode::kSse);
  const UsageScanner bytewise = scanBytewise(body);
  expectSameAnswers(whole, bytewise, "all events");
  EXPECT_GT(whole.textEvents(), 10);
  // Cut anywhere, in two and in three: an event cut by a piece's end is kept for the next.
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    UsageScanner two(UsageScanner::Mode::kSse);
    two.feed(std::string_view(body).substr(0, cut));
    two.feed(std::string_view(body).substr(cut));
    ASSERT_EQ(two.textEvents(), bytewise.textEvents()) << cut;
    ASSERT_EQ(two.completionTokens(), bytewise.completionTokens()) << cut;
    ASSERT_EQ(two.sawDone(), bytewise.sawDone()) << cut;
    const size_t second = cut + (body.size() - cut) / 3;
    UsageScanner three(UsageScanner::Mode::kSse);
    three.feed(std::string_view(body).substr(0, cut));
    EXPECT_LE(three.textEvents(), bytewise.textEvents());  // answers mid-stream read what is kept
    three.feed(std::string_view(body).substr(cut, second - cut));
    three.feed(std::string_view(body).substr(second));
    ASSERT_EQ(three.textEvents(), bytewise.textEvents()) << cut << " " << second;
    ASSERT_EQ(three.promptTokens(), bytewise.promptTokens()) << cut << " " << second;
  }
}

// A second space after "data:" is JSON's own blank, but the reading of whole events turns such a
// line away: the same event is then read byte by byte. Random events, valid JSON or not, of every
// length from a few bytes to several 64-byte blocks, must get the same answers both ways. Streams
// of them share their first bytes (as engines' events do), which the whole reading skips when it
// has read them before: their answers must not change either.
TEST(UsageScannerTest, WholeEventsAgreeWithByteLevelReadingOnRandomEvents) {
  const std::vector<std::string> parts = {
      "\"", "\"", "\"", ":", ":", " ", "\t", "{", "}", "[", "]", ",", "1", "x", "null",
      "\"content\"", "\"text\"", "\"reasoning\"", "\"arguments\"", "\"reasoning_content\"",
      "\"usage\"", "\"completion_tokens\"", "\"prompt_tokens\"", "content", "\"xcontent\"",
      "_content\"", "\"model\":\"m\",", "\"choices\":[{\"delta\":{", "\\", "\r"};
  std::mt19937 random(17);
  const auto draw = [&](size_t most) {
    std::string json;
    const size_t count = 1 + random() % most;
    for (size_t i = 0; i < count; ++i) json += parts[random() % parts.size()];
    return json;
  };
  int text_events = 0;
  for (int stream = 0; stream < 2000; ++stream) {
    UsageScanner whole(UsageScanner::Mode::kSse);
    UsageScanner bytewise(UsageScanner::Mode::kSse);
    const std::vector<std::string> starts = {"{" + draw(stream % 4 == 0 ? 60 : 8),
                                             "{" + draw(4) + "\"content\":", "{"};
    for (int event = 0; event < 10; ++event) {
      const std::string json = starts[random() % starts.size()] + draw(event % 3 == 0 ? 40 : 6);
      whole.feed("data: " + json + "\n\n");
      bytewise.feed("data:  " + json + "\n\n");
      expectSameAnswers(whole, bytewise, json);
      if (whole.textEvents() != bytewise.textEvents()) return;
    }
    text_events += static_cast<int>(whole.textEvents());
  }
  EXPECT_GT(text_events, 2000);  // the draw reaches both answers
}

// A stream that ends inside an event it kept: the answers read what was kept.
TEST(UsageScannerTest, AnEventKeptAtTheStreamsEndIsCounted) {
  const std::string cut = R"(data: {"choices":[{"delta":{"content":"x"}}]})";
  for (size_t n = 1; n <= cut.size() + 1; ++n) {
    const std::string body = (cut + "\n").substr(0, n);
    expectSameAnswers(scanWhole(body, UsageScanner::Mode::kSse), scanBytewise(body), body);
  }
  UsageScanner s(UsageScanner::Mode::kSse);
  s.feed(cut);
  EXPECT_EQ(s.completionTokens(), 1);
}

// Strings are skipped 16 or 8 bytes at a time: a quote or backslash at any offset of a block, and
// high bytes (UTF-8) around them, end or escape the string where they are.
TEST(UsageScannerTest, QuotesAndEscapesAtEveryOffsetOfALongString) {
  for (size_t at = 0; at < 24; ++at) {
    std::string content(at, 'x');
    content += "\\\"completion_tokens:99 \xc3\xa9\xe2\x82\xac \\\\";  // one escaped quote
    content += std::string(at % 9, 'y');
    const std::string body = R"({"choices":[{"message":{"content":")" + content +
                             R"("}}],"usage":{"prompt_tokens":3,"completion_tokens":7}})";
    UsageScanner s = scanWhole(body, UsageScanner::Mode::kJson);
    EXPECT_EQ(s.completionTokens(), 7) << at;
    EXPECT_EQ(s.promptTokens(), 3) << at;
  }
}

TEST(UsageScannerTest, CrlfLineEndings) {
  std::string crlf;
  for (char c : kChatStream) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  for (size_t cut = 0; cut <= crlf.size(); cut += 7) {
    UsageScanner s(UsageScanner::Mode::kSse);
    s.feed(std::string_view(crlf).substr(0, cut));
    s.feed(std::string_view(crlf).substr(cut));
    ASSERT_EQ(s.completionTokens(), 5) << cut;
    ASSERT_EQ(s.textEvents(), 3) << cut;
    ASSERT_TRUE(s.sawDone()) << cut;
  }
}

TEST(UsageScannerTest, CompletionsStreamUsesText) {
  std::string stream =
      "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
      "\"text\":\" Paris\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"
      "data:{\"choices\":[{\"index\":0,\"text\":\".\",\"finish_reason\":null}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n"
      ": keep-alive comment\n\n"
      "data: [DONE]\n\n";
  UsageScanner s = scanWhole(stream, UsageScanner::Mode::kSse);
  EXPECT_EQ(s.completionTokens(), 2);
  EXPECT_TRUE(s.sawDone());
  EXPECT_FALSE(s.sawUsage());
}

TEST(UsageScannerTest, NullUsageAndNullContentDoNotCount) {
  std::string stream =
      "data: {\"choices\":[{\"delta\":{\"content\":null,\"tool_calls\":[]}}],\"usage\":null}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\" : \"x\"}}],\"usage\":null}\n\n";
  UsageScanner s = scanWhole(stream, UsageScanner::Mode::kSse);
  EXPECT_FALSE(s.sawUsage());
  EXPECT_FALSE(s.sawDone());  // truncated: no terminator
  EXPECT_EQ(s.completionTokens(), 1);
}

TEST(UsageScannerTest, ContinuousUsageLastValueWins) {
  std::string stream =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":3,"
      "\"completion_tokens\":1}}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}],\"usage\":{\"prompt_tokens\":3,"
      "\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  UsageScanner s = scanWhole(stream, UsageScanner::Mode::kSse);
  EXPECT_EQ(s.completionTokens(), 2);
  EXPECT_EQ(s.promptTokens(), 3);
}

TEST(UsageScannerTest, DoneMustBeExact) {
  EXPECT_FALSE(scanWhole("data: [DONE]x\n\n", UsageScanner::Mode::kSse).sawDone());
  EXPECT_FALSE(scanWhole("data: [DON\n\n", UsageScanner::Mode::kSse).sawDone());
  EXPECT_FALSE(scanWhole("event: [DONE]\n\n", UsageScanner::Mode::kSse).sawDone());
  EXPECT_TRUE(scanWhole("data:[DONE]\r\n\r\n", UsageScanner::Mode::kSse).sawDone());
  EXPECT_TRUE(scanWhole("data: [DONE]", UsageScanner::Mode::kSse).sawDone() == false);
  EXPECT_TRUE(scanWhole("data: [DONE]\n", UsageScanner::Mode::kSse).sawDone());
}

TEST(UsageScannerTest, ReasoningAndToolCallArgumentsCountAsText) {
  std::string stream =
      "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
      "{\"arguments\":\"{\\\"city\\\"\"}}]}}]}\n\n";
  EXPECT_EQ(scanWhole(stream, UsageScanner::Mode::kSse).completionTokens(), 2);
}

TEST(UsageScannerTest, PlainJsonResponse) {
  std::string body = R"({"id":"chatcmpl-9","object":"chat.completion","choices":[{"index":0,
    "message":{"role":"assistant","content":"The \"completion_tokens\": 1000 answer"},
    "finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":34,
    "total_tokens":46}})";
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    UsageScanner s(UsageScanner::Mode::kJson);
    s.feed(std::string_view(body).substr(0, cut));
    s.feed(std::string_view(body).substr(cut));
    ASSERT_TRUE(s.sawUsage()) << cut;
    ASSERT_EQ(s.completionTokens(), 34) << cut;
    ASSERT_EQ(s.promptTokens(), 12) << cut;
    ASSERT_FALSE(s.sawDone());
  }
}

TEST(UsageScannerTest, PlainJsonWithoutUsageIsUnknown) {
  UsageScanner s = scanWhole(R"({"choices":[{"message":{"content":"hi"}}]})",
                             UsageScanner::Mode::kJson);
  EXPECT_EQ(s.completionTokens(), -1);
  EXPECT_EQ(s.promptTokens(), -1);
  EXPECT_FALSE(s.sawUsage());
}

// A JSON answer fed whole is passed over up to its "usage" key; fed byte by byte, or cut
// before that key, it is read byte by byte throughout. Random answers, valid JSON or not (stray
// brackets, keys and colons inside strings, blanks and newlines between a key and its colon,
// backslashes), must get the same answers every way.
TEST(UsageScannerTest, JsonAnswersAgreeWithByteLevelReadingOnRandomBodies) {
  const std::vector<std::string> parts = {
      "\"", "\"", ":", ":", " ", "\n", "\t", "{", "{", "}", "[", "]", ",", "12", "x",
      "\"usage\"", "\"usage\":", "\"usage\" :{", "\"usage\"\n:", "\"xusage\":",
      "\"completion_tokens\":", "\"prompt_tokens\": ", "\"content\":\"hi\"",
      "\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,",
      "{\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}", "\\", "\r"};
  std::mt19937 random(29);
  int usage_seen = 0;
  for (int body_index = 0; body_index < 20000; ++body_index) {
    std::string body;
    const size_t count = 1 + random() % (body_index % 5 == 0 ? 80 : 16);
    for (size_t i = 0; i < count; ++i) body += parts[random() % parts.size()];
    UsageScanner whole(UsageScanner::Mode::kJson);
    whole.feed(body);
    UsageScanner bytewise(UsageScanner::Mode::kJson);
    for (char c : body) bytewise.feed(std::string_view(&c, 1));
    const size_t cut = random() % (body.size() + 1);
    UsageScanner halves(UsageScanner::Mode::kJson);
    halves.feed(std::string_view(body).substr(0, cut));
    halves.feed(std::string_view(body).substr(cut));
    expectSameAnswers(whole, bytewise, body);
    expectSameAnswers(whole, halves, body);
    if (::testing::Test::HasFailure()) return;
    usage_seen += whole.completionTokens() >= 0;
  }
  EXPECT_GT(usage_seen, 1000);  // the draw reaches token counts inside a usage object
}

TEST(UsageScannerTest, EmbeddingsUsageHasNoCompletionTokens) {
  UsageScanner s = scanWhole(R"({"data":[],"usage":{"prompt_tokens":8,"total_tokens":8}})",
                             UsageScanner::Mode::kJson);
  EXPECT_TRUE(s.sawUsage());
  EXPECT_EQ(s.promptTokens(), 8);
  EXPECT_EQ(s.completionTokens(), -1);
}

TEST(UsageScannerTest, TokenKeysOutsideUsageAreIgnored) {
  UsageScanner s = scanWhole(R"({"completion_tokens":7,"x":{"completion_tokens":9}})",
                             UsageScanner::Mode::kJson);
  EXPECT_EQ(s.completionTokens(), -1);
}

TEST(UsageScannerTest, BrokenEventDoesNotPoisonTheNext) {
  std::string stream =
      "data: {\"choices\":[{\"delta\":{\"content\":\"unterminated\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n"
      "data: [DONE]\n\n";
  UsageScanner s = scanWhole(stream, UsageScanner::Mode::kSse);
  EXPECT_EQ(s.completionTokens(), 2);
  EXPECT_TRUE(s.sawDone());
}

TEST(UsageScannerTest, ResetStartsOver) {
  UsageScanner s = scanWhole(kChatStream, UsageScanner::Mode::kSse);
  s.reset(UsageScanner::Mode::kJson);
  EXPECT_FALSE(s.sawUsage());
  EXPECT_FALSE(s.sawDone());
  EXPECT_EQ(s.completionTokens(), -1);
}

}  // namespace
}  // namespace switchyard::api
