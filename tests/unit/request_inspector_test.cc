#include "api/request_inspector.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

namespace switchyard::api {
namespace {

class RequestInspectorTest : public ::testing::Test {
 protected:
  // Inspects through the zero-copy path: the body lives in a string with padding reserved.
  InspectError inspect(std::string_view body) {
    buffer_.assign(body);
    size_t size = buffer_.size();
    buffer_.append(RequestInspector::kRequiredPadding, ' ');
    return inspector_.inspect(buffer_.data(), size, buffer_.size(), out_);
  }
  bool pointsIntoBuffer(std::string_view v) const {
    return v.data() >= buffer_.data() && v.data() + v.size() <= buffer_.data() + buffer_.size();
  }

  RequestInspector inspector_;
  InspectedRequest out_;
  std::string buffer_;
};

TEST_F(RequestInspectorTest, ChatRequest) {
  ASSERT_EQ(inspect(R"({"model":"llama-3","messages":[{"role":"system","content":"Be brief."},
      {"role":"user","content":"Hello there"}],"stream":true,
      "stream_options":{"include_usage":true},"user":"u-42","max_tokens":128})"),
            InspectError::kNone)
      << inspector_.errorMessage();
  EXPECT_EQ(out_.model, "llama-3");
  EXPECT_TRUE(out_.stream);
  EXPECT_TRUE(out_.include_usage);
  EXPECT_EQ(out_.user, "u-42");
  EXPECT_EQ(out_.max_tokens, 128);
  EXPECT_EQ(out_.prompt_bytes, 9u + 11u);
  EXPECT_TRUE(pointsIntoBuffer(out_.model));  // no escapes: a view into the body
  EXPECT_TRUE(inspector_.errorMessage().empty());
}

TEST_F(RequestInspectorTest, Defaults) {
  ASSERT_EQ(inspect(R"({"model":"m"})"), InspectError::kNone);
  EXPECT_FALSE(out_.stream);
  EXPECT_FALSE(out_.include_usage);
  EXPECT_EQ(out_.user, "");
  EXPECT_EQ(out_.max_tokens, -1);
  EXPECT_EQ(out_.prompt_bytes, 0u);
}

TEST_F(RequestInspectorTest, MaxCompletionTokensPreferredInEitherOrder) {
  ASSERT_EQ(inspect(R"({"model":"m","max_tokens":10,"max_completion_tokens":20})"),
            InspectError::kNone);
  EXPECT_EQ(out_.max_tokens, 20);
  ASSERT_EQ(inspect(R"({"model":"m","max_completion_tokens":20,"max_tokens":10})"),
            InspectError::kNone);
  EXPECT_EQ(out_.max_tokens, 20);
  ASSERT_EQ(inspect(R"({"model":"m","max_tokens":10,"max_completion_tokens":null})"),
            InspectError::kNone);
  EXPECT_EQ(out_.max_tokens, 10);
}

TEST_F(RequestInspectorTest, EscapedStringsAreUnescapedIntoOwnedStorage) {
  ASSERT_EQ(inspect(R"({"model":"org\/m\u00e9\"x\"","user":"a\\b"})"), InspectError::kNone);
  EXPECT_EQ(out_.model, "org/m\xC3\xA9\"x\"");
  EXPECT_EQ(out_.user, "a\\b");
  EXPECT_FALSE(pointsIntoBuffer(out_.model));
}

TEST_F(RequestInspectorTest, KeysAreMatchedAfterUnescaping) {
  ASSERT_EQ(inspect(R"({"mod\u0065l":"m","Stream":"not the stream key","streams":1})"),
            InspectError::kNone);
  EXPECT_EQ(out_.model, "m");
  EXPECT_FALSE(out_.stream);
}

TEST_F(RequestInspectorTest, PromptBytesForCompletionsEmbeddingsAndContentParts) {
  ASSERT_EQ(inspect(R"({"model":"m","prompt":"abcd"})"), InspectError::kNone);
  EXPECT_EQ(out_.prompt_bytes, 4u);
  ASSERT_EQ(inspect(R"({"model":"m","prompt":["ab","cde"]})"), InspectError::kNone);
  EXPECT_EQ(out_.prompt_bytes, 5u);
  ASSERT_EQ(inspect(R"({"model":"m","prompt":[1,2,3]})"), InspectError::kNone);
  EXPECT_EQ(out_.prompt_bytes, 3 * RequestInspector::kBytesPerPromptToken);
  ASSERT_EQ(inspect(R"({"model":"m","input":[[1,2],[3]]})"), InspectError::kNone);
  EXPECT_EQ(out_.prompt_bytes, 3 * RequestInspector::kBytesPerPromptToken);
  ASSERT_EQ(inspect(R"({"model":"e","input":"embed me"})"), InspectError::kNone);
  EXPECT_EQ(out_.prompt_bytes, 8u);
  ASSERT_EQ(inspect(R"({"model":"m","messages":[{"role":"user","content":[
      {"type":"text","text":"look at"},{"type":"image_url","image_url":{"url":"data:xyz"}},
      {"text":"this\n","type":"text"}]},{"role":"assistant","content":null,
      "tool_calls":[{"id":"1"}]}]})"),
            InspectError::kNone)
      << inspector_.errorMessage();
  EXPECT_EQ(out_.prompt_bytes, 7u + 5u);  // the escaped \n counts as one byte
}

TEST_F(RequestInspectorTest, MissingOrEmptyModel) {
  EXPECT_EQ(inspect(R"({"messages":[]})"), InspectError::kMissingModel);
  EXPECT_EQ(inspector_.errorParam(), "model");
  EXPECT_EQ(inspect(R"({"model":""})"), InspectError::kMissingModel);
  EXPECT_EQ(inspect(R"({})"), InspectError::kMissingModel);
}

TEST_F(RequestInspectorTest, WrongTypesNameTheField) {
  struct Case {
    std::string_view body;
    std::string_view field;
  };
  for (const Case& c : {
           Case{R"({"model":5})", "model"},
           Case{R"({"model":null})", "model"},
           Case{R"({"model":"m","stream":"yes"})", "stream"},
           Case{R"({"model":"m","stream":1})", "stream"},
           Case{R"({"model":"m","stream_options":true})", "stream_options"},
           Case{R"({"model":"m","stream_options":{"include_usage":"y"}})", "stream_options"},
           Case{R"({"model":"m","user":7})", "user"},
           Case{R"({"model":"m","max_tokens":"10"})", "max_tokens"},
           Case{R"({"model":"m","max_tokens":10.5})", "max_tokens"},
           Case{R"({"model":"m","max_tokens":-1})", "max_tokens"},
           Case{R"({"model":"m","max_completion_tokens":1e3})", "max_completion_tokens"},
           Case{R"({"model":"m","max_tokens":99999999999999999999})", "max_tokens"},
           Case{R"({"model":"m","messages":{}})", "messages"},
           Case{R"({"model":"m","messages":["hi"]})", "messages"},
           Case{R"({"model":"m","messages":[{"content":5}]})", "messages"},
           Case{R"({"model":"m","messages":[{"content":[{"text":1}]}]})", "messages"},
           Case{R"({"model":"m","prompt":{"a":1}})", "prompt"},
           Case{R"({"model":"m","input":[true]})", "input"},
       }) {
    EXPECT_EQ(inspect(c.body), InspectError::kInvalidField) << c.body;
    EXPECT_EQ(inspector_.errorParam(), c.field) << c.body;
    EXPECT_NE(inspector_.errorMessage().find(c.field), std::string_view::npos)
        << inspector_.errorMessage();
  }
}

TEST_F(RequestInspectorTest, MalformedDocumentsAreRejected) {
  for (std::string_view body : {
           "", "   ", "[]", "\"model\"", "42", "null", "{", R"({"model":"m")",
           R"({"model":"m",})", R"({"model":"m"} trailing)", R"({"model":"m"}})",
           R"({"model":"m"}{"model":"n"})", R"({"model" "m"})", R"({model:"m"})",
           R"({"model":"m","x":tru})", R"({"model":"m","x":[1,2,}})",
           R"({"model":"m","x":{"a":nul}})", R"({"model":"m","x":007})",
           R"({"model":"m","x":"bad \q escape"})", "{\"model\":\"m\",\"x\":\"raw\ttab\"}",
           "{\"model\":\"m\xff\"}", R"({"model":"m","x":[[[[[[[[[[)",
           // A wrong-typed field does not hide a syntax error later in the body.
           R"({"model":5,"x":})",
       }) {
    EXPECT_EQ(inspect(body), InspectError::kMalformedJson) << body;
    EXPECT_FALSE(inspector_.errorMessage().empty());
  }
}

TEST_F(RequestInspectorTest, NestingLimit) {
  std::string deep = R"({"model":"m","x":)";
  for (int i = 0; i < RequestInspector::kMaxDepth + 5; ++i) deep += '[';
  for (int i = 0; i < RequestInspector::kMaxDepth + 5; ++i) deep += ']';
  deep += '}';
  EXPECT_EQ(inspect(deep), InspectError::kMalformedJson);
  EXPECT_EQ(inspect(R"({"model":"m","x":[[[[{"a":[{}]}]]]]})"), InspectError::kNone);
}

TEST_F(RequestInspectorTest, ShortCapacityIsCopiedNotOverread) {
  std::string exact = R"({"model":"m","stream":true,"user":"bob"})";
  // A heap copy of exactly the body size: ASan would flag any read past the end.
  auto heap = std::make_unique<char[]>(exact.size());
  std::memcpy(heap.get(), exact.data(), exact.size());
  ASSERT_EQ(inspector_.inspect(heap.get(), exact.size(), exact.size(), out_), InspectError::kNone);
  EXPECT_EQ(out_.model, "m");
  EXPECT_EQ(out_.user, "bob");
  EXPECT_TRUE(out_.stream);
}

TEST_F(RequestInspectorTest, ReusableAcrossBodiesOfDifferentSizes) {
  std::string big = R"({"model":"big","messages":[{"role":"user","content":")" +
                    std::string(100000, 'x') + R"("}]})";
  ASSERT_EQ(inspect(big), InspectError::kNone);
  EXPECT_EQ(out_.prompt_bytes, 100000u);
  ASSERT_EQ(inspect(R"({"model":"small"})"), InspectError::kNone);
  EXPECT_EQ(out_.model, "small");
  EXPECT_EQ(out_.prompt_bytes, 0u);
  EXPECT_EQ(inspect("{"), InspectError::kMalformedJson);
  ASSERT_EQ(inspect(R"({"model":"again"})"), InspectError::kNone);
  EXPECT_TRUE(inspector_.errorMessage().empty());
}

TEST_F(RequestInspectorTest, WhitespaceAndNullsAreAccepted) {
  ASSERT_EQ(inspect(" \n{ \"model\" : \"m\" , \"stream\" : null , \"user\" : null ,"
                    " \"stream_options\" : null }\r\n "),
            InspectError::kNone)
      << inspector_.errorMessage();
  EXPECT_EQ(out_.model, "m");
  EXPECT_FALSE(out_.stream);
}

}  // namespace
}  // namespace switchyard::api
