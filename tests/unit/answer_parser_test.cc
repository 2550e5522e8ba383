// AnswerParser (gateway/answer_parser.h): a replica's answer parsed straight into the client's
// header fields and a caller's body buffer.
#include "gateway/answer_parser.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "http/parse_buffered.h"

namespace switchyard::gateway {
namespace {

namespace http = boost::beast::http;

// Feeds `bytes` in one piece, the body into a buffer of `room` bytes at a time; returns the body.
std::string parse(AnswerParser& parser, std::string_view bytes, size_t room) {
  std::string body;
  std::string piece(room, '\0');
  while (!parser.is_done()) {
    parser.setBody(piece.data(), room);
    boost::beast::error_code ec;
    const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
    bytes.remove_prefix(used);
    body.append(piece.data(), room - parser.bodyRoom());
    if (ec == http::error::need_buffer) continue;
    EXPECT_FALSE(ec) << ec.message();
    if (ec || (used == 0 && bytes.empty())) break;
  }
  return body;
}

TEST(AnswerParserTest, EndToEndFieldsAreKeptInOrderAndHopByHopOnesDropped) {
  std::string fields = "left over from the last answer";
  AnswerParser parser(fields);
  const std::string body = parse(parser,
                                 "HTTP/1.1 201 Created\r\n"
                                 "Content-Type: application/json\r\n"
                                 "Connection: keep-alive\r\n"
                                 "x-Engine-Id: replica-7\r\n"
                                 "Keep-Alive: timeout=5\r\n"
                                 "Content-Length: 11\r\n"
                                 "Date: Sun, 06 Dec 2026 12:00:00 GMT\r\n"
                                 "\r\n"
                                 "{\"ok\":true}",
                                 64);
  EXPECT_EQ(parser.status(), 201u);
  EXPECT_EQ(fields,
            "Content-Type: application/json\r\n"
            "x-Engine-Id: replica-7\r\n"
            "Date: Sun, 06 Dec 2026 12:00:00 GMT\r\n");
  EXPECT_EQ(body, "{\"ok\":true}");
  EXPECT_EQ(parser.content_length().value_or(0), 11u);
  EXPECT_TRUE(parser.keep_alive());
  EXPECT_FALSE(parser.eventStream());
}

TEST(AnswerParserTest, AChunkedStreamComesThroughASmallBufferWhole) {
  std::string fields;
  AnswerParser parser(fields);
  const std::string body = parse(parser,
                                 "HTTP/1.1 200 OK\r\n"
                                 "content-type: Text/Event-Stream; charset=utf-8\r\n"
                                 "Transfer-Encoding: chunked\r\n"
                                 "\r\n"
                                 "f\r\ndata: {\"a\":1}\n\n\r\n"
                                 "e\r\ndata: [DONE]\n\n\r\n"
                                 "0\r\n\r\n",
                                 5);
  EXPECT_EQ(body, "data: {\"a\":1}\n\ndata: [DONE]\n\n");
  EXPECT_TRUE(parser.eventStream());
  EXPECT_TRUE(parser.chunked());
  EXPECT_FALSE(parser.content_length().has_value());
  EXPECT_EQ(fields, "content-type: Text/Event-Stream; charset=utf-8\r\n");
}

TEST(AnswerParserTest, ViewsPointAtTheBodyWhereItLiesSixteenPiecesAtATime) {
  std::string fields;
  AnswerParser parser(fields);
  std::string bytes =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  std::string expected;
  for (int i = 0; i < 20; ++i) {
    const std::string event = "data: {\"n\":" + std::to_string(10 + i) + "}\n\n";
    bytes += "10\r\n" + event + "\r\n";
    expected += event;
  }
  bytes += "0\r\n\r\n";
  // As the relay reads: the bytes in a flat_buffer, parsed by parseBuffered() (a put() per
  // chunk) until the views are all taken.
  boost::beast::flat_buffer buffer;
  buffer.commit(boost::asio::buffer_copy(buffer.prepare(bytes.size()), boost::asio::buffer(bytes)));
  const char* const start = static_cast<const char*>(buffer.data().data());
  std::string body;
  std::vector<size_t> pieces_per_parse;
  for (int pass = 0; pass < 10 && !parser.is_done(); ++pass) {
    parser.setBodyViews();
    const boost::system::error_code ec = switchyard::http::parseBuffered(parser, buffer);
    ASSERT_FALSE(ec) << ec.message();
    size_t bytes_noted = 0;
    for (const auto& view : parser.views()) {
      // In place: each view points into the buffer's bytes, which consume() did not move.
      const auto* at = static_cast<const char*>(view.data());
      EXPECT_GE(at, start);
      EXPECT_LE(at + view.size(), start + bytes.size());
      body.append(at, view.size());
      bytes_noted += view.size();
    }
    EXPECT_EQ(bytes_noted, parser.viewBytes());
    pieces_per_parse.push_back(parser.views().size());
  }
  EXPECT_TRUE(parser.is_done());
  EXPECT_EQ(body, expected);
  // A pass stops when sixteen pieces are noted; the next goes on where it stopped.
  EXPECT_EQ(pieces_per_parse, (std::vector<size_t>{AnswerParser::kMaxViews, 4}));
  // Copying again (setBody) leaves views behind.
  parser.setBody(nullptr, 0);
  EXPECT_EQ(parser.bodyRoom(), 0u);
}

TEST(AnswerParserTest, OnlyTheFirstContentTypeSaysWhetherItIsAStream) {
  std::string fields;
  AnswerParser parser(fields);
  parse(parser,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        "Content-Type: text/event-stream\r\nContent-Length: 0\r\n\r\n",
        8);
  EXPECT_FALSE(parser.eventStream());
}

TEST(AnswerParserTest, WithoutABodyBufferTheBodyWaits) {
  std::string fields;
  AnswerParser parser(fields);
  const std::string_view bytes = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
  boost::beast::error_code ec;
  size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  EXPECT_FALSE(ec);
  EXPECT_TRUE(parser.is_header_done());
  used += parser.put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
  EXPECT_EQ(ec, http::error::need_buffer);  // no buffer named yet: nothing is taken
  EXPECT_LT(used, bytes.size());
}

TEST(AnswerParserTest, GarbageIsAnErrorNotACrash) {
  std::string fields;
  AnswerParser parser(fields);
  const std::string_view bytes = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
  EXPECT_TRUE(ec);
  EXPECT_FALSE(parser.is_header_done());
}

}  // namespace
}  // namespace switchyard::gateway
