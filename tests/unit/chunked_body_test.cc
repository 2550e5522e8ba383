#include "http/chunked_body.h"

#include <gtest/gtest.h>

#include <boost/beast/http/error.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "../support/chunked_feed.h"

namespace switchyard::http {
namespace {

using chunked_feed::Decoded;

// Whole (0) or in pieces of `piece_size` bytes.
Decoded decode(std::string_view input, size_t piece_size = 0, uint64_t limit = 1 << 20) {
  const size_t size = piece_size == 0 ? input.size() + 1 : piece_size;
  return chunked_feed::decodeInPieces(input, size, limit);
}

TEST(ChunkedBodyTest, DecodesChunksToTheirData) {
  const Decoded d = decode("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
  EXPECT_EQ(d.body, "hello world");
  EXPECT_EQ(d.last, ChunkedBody::Step::kDone);
  EXPECT_EQ(d.consumed, 26u);
}

TEST(ChunkedBodyTest, PiecesPointIntoTheInput) {
  const std::string input = "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  ChunkedBody chunks(100);
  const char* p = input.data();
  std::string_view piece;
  ASSERT_EQ(chunks.next(p, input.data() + input.size(), piece), ChunkedBody::Step::kPiece);
  EXPECT_EQ(piece.data(), input.data() + 3);
  EXPECT_EQ(piece, "abc");
  ASSERT_EQ(chunks.next(p, input.data() + input.size(), piece), ChunkedBody::Step::kPiece);
  EXPECT_EQ(piece, "de");
  EXPECT_EQ(chunks.next(p, input.data() + input.size(), piece), ChunkedBody::Step::kDone);
  EXPECT_TRUE(piece.empty());
  EXPECT_TRUE(chunks.done());
  EXPECT_EQ(chunks.bodyBytes(), 5u);
}

TEST(ChunkedBodyTest, EverySplitGivesTheSameBody) {
  const std::string input =
      "0005;name=value\r\nhello\r\nA\r\n0123456789\r\n1 ; x=\"y\"\r\n!\r\n"
      "0;last\r\nExpires: never\r\nX-Folded: a\r\n b\r\n\r\n";
  const Decoded whole = decode(input);
  EXPECT_EQ(whole.body, "hello0123456789!");
  EXPECT_EQ(whole.last, ChunkedBody::Step::kDone);
  EXPECT_EQ(whole.consumed, input.size());
  for (size_t size = 1; size <= input.size(); ++size) {
    const Decoded pieces = decode(input, size);
    ASSERT_EQ(pieces.body, whole.body) << size;
    ASSERT_EQ(pieces.last, ChunkedBody::Step::kDone) << size;
    ASSERT_EQ(pieces.consumed, input.size()) << size;
  }
}

TEST(ChunkedBodyTest, BytesAfterTheBodyAreLeft) {
  const Decoded d = decode("1\r\nx\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n");
  EXPECT_EQ(d.last, ChunkedBody::Step::kDone);
  EXPECT_EQ(d.consumed, 11u);
}

TEST(ChunkedBodyTest, AnUnfinishedBodyNeedsMore) {
  for (const char* input : {"", "5", "5\r", "5\r\nhel", "5\r\nhello\r", "5\r\nhello\r\n0\r\n",
                            "0\r\nX: y\r\n", "0\r\n\r"}) {
    const Decoded d = decode(input);
    EXPECT_EQ(d.last, ChunkedBody::Step::kNeedMore) << input;
    EXPECT_EQ(d.error, ChunkedBody::Error::kNone) << input;
  }
}

TEST(ChunkedBodyTest, MalformedFramingIsRefusedWithItsReason) {
  using Error = ChunkedBody::Error;
  const std::vector<std::pair<std::string, Error>> cases = {
      {"g\r\n", Error::kBadChunkSize},
      {"\r\n", Error::kBadChunkSize},
      {"5x\r\nhello\r\n", Error::kBadChunkSize},
      {"5\nhello\r\n", Error::kBadChunkSize},
      {"5\r\rhello", Error::kBadLineEnd},
      {"5\r\nhelloXY", Error::kBadLineEnd},
      {"5\r\nhello\rX", Error::kBadLineEnd},
      {std::string("5;a\rhello\r\n"), Error::kBadLineEnd},
      {"5;" + std::string(ChunkedBody::kMaxSizeLine, 'e') + "\r\n", Error::kBadChunkExtension},
      {"0\r\nbad name: x\r\n\r\n", Error::kBadTrailer},
      {"0\r\n: x\r\n\r\n", Error::kBadTrailer},
      {"0\r\n folded-first\r\n\r\n", Error::kBadTrailer},
      {"0\r\nX: y\rZ", Error::kBadLineEnd},
      {"0\r\n\rZ", Error::kBadLineEnd},
      {"0\r\nX: " + std::string(ChunkedBody::kMaxTrailer, 'v') + "\r\n\r\n",
       Error::kTrailerTooLong},
  };
  for (const auto& [input, error] : cases) {
    const Decoded whole = decode(input);
    EXPECT_EQ(whole.last, ChunkedBody::Step::kFailed) << input;
    EXPECT_EQ(whole.error, error) << input;
    const Decoded bytewise = decode(input, 1);
    EXPECT_EQ(bytewise.error, error) << input;
  }
}

TEST(ChunkedBodyTest, SizesPastTheLimitAreRefused) {
  EXPECT_EQ(decode("a\r\n0123456789\r\n0\r\n\r\n", 0, 10).last, ChunkedBody::Step::kDone);
  EXPECT_EQ(decode("b\r\n", 0, 10).error, ChunkedBody::Error::kChunkTooLarge);
  EXPECT_EQ(decode("6\r\nabcdef\r\n5\r\n", 0, 10).error, ChunkedBody::Error::kChunkTooLarge);
  // No overflow however many digits, whatever the limit.
  EXPECT_EQ(decode("ffffffffffffffffffff\r\n", 0, UINT64_MAX).error,
            ChunkedBody::Error::kChunkTooLarge);
  EXPECT_EQ(decode("1" + std::string(40, '0') + "\r\n", 0, UINT64_MAX).error,
            ChunkedBody::Error::kChunkTooLarge);
}

TEST(ChunkedBodyTest, AnErrorIsKeptAndNamedAsBeastNamesIt) {
  ChunkedBody chunks(100);
  const std::string input = "z\r\n5\r\nhello\r\n";
  const char* p = input.data();
  std::string_view piece;
  EXPECT_EQ(chunks.next(p, input.data() + input.size(), piece), ChunkedBody::Step::kFailed);
  EXPECT_EQ(chunks.next(p, input.data() + input.size(), piece), ChunkedBody::Step::kFailed);
  EXPECT_TRUE(piece.empty());
  EXPECT_EQ(chunks.errorCode(), boost::beast::http::error::bad_chunk);
  EXPECT_EQ(ChunkedBody(1).errorCode(), boost::system::error_code{});
  EXPECT_EQ(decode("b\r\n", 0, 10).error, ChunkedBody::Error::kChunkTooLarge);
}

}  // namespace
}  // namespace switchyard::http
