#include "http/response_head.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard::http {
namespace {

TEST(ResponseHeadTest, ContentLengthAndKeepAlive) {
  const std::string bytes =
      "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nContent-Length: 5\r\n\r\nhello";
  ResponseHead head;
  ASSERT_EQ(parseResponseHead(bytes, head), HeadResult::kComplete);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.content_length, 5);
  EXPECT_FALSE(head.chunked);
  EXPECT_TRUE(head.keep_alive);
  EXPECT_EQ(bytes.substr(head.head_bytes), "hello");
}

TEST(ResponseHeadTest, CloseChunkedAndHttp10) {
  ResponseHead head;
  ASSERT_EQ(parseResponseHead("HTTP/1.1 503 Busy\r\nConnection: close\r\n"
                              "Transfer-Encoding: gzip, chunked\r\n\r\n",
                              head),
            HeadResult::kComplete);
  EXPECT_EQ(head.status, 503);
  EXPECT_TRUE(head.chunked);
  EXPECT_FALSE(head.keep_alive);
  ASSERT_EQ(parseResponseHead("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", head),
            HeadResult::kComplete);
  EXPECT_FALSE(head.keep_alive);
}

TEST(ResponseHeadTest, IncompleteAndMalformed) {
  ResponseHead head;
  EXPECT_EQ(parseResponseHead("HTTP/1.1 200 OK\r\nContent-Le", head), HeadResult::kIncomplete);
  EXPECT_EQ(parseResponseHead("HTTP/2 200\r\n\r\n", head), HeadResult::kMalformed);
  EXPECT_EQ(parseResponseHead("HTTP/1.1 2x0 OK\r\n\r\n", head), HeadResult::kMalformed);
  EXPECT_EQ(parseResponseHead("HTTP/1.1 200 OK\r\nno colon\r\n\r\n", head),
            HeadResult::kMalformed);
  EXPECT_EQ(parseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", head),
            HeadResult::kMalformed);
  EXPECT_EQ(parseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                              head),
            HeadResult::kMalformed);
}

TEST(ResponseHeadTest, ChunkedDecodesInPlace) {
  std::string body = "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n";
  size_t decoded = 0, consumed = 0;
  ASSERT_EQ(decodeChunkedInPlace(body.data(), body.size(), decoded, consumed),
            ChunkedResult::kComplete);
  EXPECT_EQ(body.substr(0, decoded), "hello world");
  EXPECT_EQ(consumed, body.size());
}

TEST(ResponseHeadTest, ChunkedIncompleteLeavesTheInputAlone) {
  const std::string whole = "5\r\nhello\r\n0\r\n\r\n";
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    std::string part = whole.substr(0, cut);
    const std::string before = part;
    size_t decoded = 0, consumed = 0;
    EXPECT_EQ(decodeChunkedInPlace(part.data(), part.size(), decoded, consumed),
              ChunkedResult::kIncomplete)
        << cut;
    EXPECT_EQ(part, before);
  }
  std::string bad = "5\r\nhelloXX0\r\n\r\n";
  size_t decoded = 0, consumed = 0;
  EXPECT_EQ(decodeChunkedInPlace(bad.data(), bad.size(), decoded, consumed),
            ChunkedResult::kMalformed);
  std::string huge = "fffffffffffffffff\r\n";
  EXPECT_EQ(decodeChunkedInPlace(huge.data(), huge.size(), decoded, consumed),
            ChunkedResult::kMalformed);
}

}  // namespace
}  // namespace switchyard::http
