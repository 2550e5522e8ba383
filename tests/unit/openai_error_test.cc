#include "api/openai_error.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard::api {
namespace {

std::string escaped(std::string_view text) {
  std::string out;
  appendJsonEscaped(out, text);
  return out;
}

TEST(AppendJsonEscapedTest, QuotesBackslashesAndControls) {
  EXPECT_EQ(escaped("plain text"), "plain text");
  EXPECT_EQ(escaped(R"(say "hi")"), R"(say \"hi\")");
  EXPECT_EQ(escaped(R"(C:\path)"), R"(C:\\path)");
  EXPECT_EQ(escaped("a\nb\tc\rd"), R"(a\u000ab\u0009c\u000dd)");
  EXPECT_EQ(escaped(std::string_view("\0\x1f\x7f", 3)), "\\u0000\\u001f\x7f");
  EXPECT_EQ(escaped(""), "");
}

TEST(AppendJsonEscapedTest, Utf8IsKeptAndInvalidBytesReplaced) {
  EXPECT_EQ(escaped("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(escaped("a\xFF" "b"), "a\\ufffdb");
  EXPECT_EQ(escaped("\xC3"), "\\ufffd");                    // truncated sequence
  EXPECT_EQ(escaped("\xC0\xAF"), "\\ufffd\\ufffd");         // overlong
  EXPECT_EQ(escaped("\xED\xA0\x80"), "\\ufffd\\ufffd\\ufffd");  // surrogate
  EXPECT_EQ(escaped("\xF4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd");  // > U+10FFFF
}

TEST(AppendJsonEscapedTest, Appends) {
  std::string out = "prefix:";
  appendJsonEscaped(out, "\"");
  EXPECT_EQ(out, "prefix:\\\"");
}

TEST(ErrorBodyTest, FullEnvelope) {
  EXPECT_EQ(errorBody({.message = "The model `x\"y` does not exist",
                       .type = kInvalidRequestError,
                       .param = "model",
                       .code = "model_not_found"}),
            R"({"error":{"message":"The model `x\"y` does not exist",)"
            R"("type":"invalid_request_error","param":"model","code":"model_not_found"}})");
}

TEST(ErrorBodyTest, NullParamAndCode) {
  EXPECT_EQ(errorBody({.message = "slow down", .type = kRateLimitError}),
            R"({"error":{"message":"slow down","type":"rate_limit_error","param":null,)"
            R"("code":null}})");
}

TEST(ErrorBodyTest, AppendsToExistingBuffer) {
  std::string out = "x";
  appendErrorBody(out, {.message = "line1\nline2", .type = kServerError, .code = "\\"});
  EXPECT_EQ(out, R"(x{"error":{"message":"line1\u000aline2","type":"server_error",)"
                 R"("param":null,"code":"\\"}})");
}

}  // namespace
}  // namespace switchyard::api
