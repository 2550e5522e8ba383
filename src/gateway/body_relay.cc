#include "gateway/body_relay.h"

#include <spdlog/spdlog.h>

#include <boost/asio/write.hpp>
#include <charconv>
#include <span>

#include "gateway/async_jobs.h"
#include "http/parse_buffered.h"
#include "http/write_all.h"

namespace switchyard::gateway {

constexpr size_t kEventPieceSize = 4 * 1024;

BodyRelay::BodyRelay(WorkerView worker, ClientConnection& conn, AnswerParser& parser,
                     switchyard::http::ConnectionStream& upstream, fleet::ReplicaState& replica,
                     const fleet::ModelEntry& model, RelayTarget target)
    : worker_(worker),
      conn_(conn),
      parser_(parser),
      upstream_(upstream),
      replica_(replica),
      model_(model),
      target_(target),
      piece_room_(target.event_stream ? kEventPieceSize : kPieceSize),
      in_place_(target.event_stream && !target.capture_job_id),
      decode_chunks_(in_place_ && parser.chunked()),
      chunks_(kUpstreamBodyLimit),
      scanner_(target.event_stream ? api::UsageScanner::Mode::kSse
                                   : api::UsageScanner::Mode::kJson) {}

BodyRelay::Step BodyRelay::run() {
  Step step = Step::kNext;
  while (step == Step::kNext) step = parseOrRead();
  return step;
}

BodyRelay::Step BodyRelay::parseOrRead() {
  if (bodyDone()) return afterParse({}, 0);
  if (in_place_) {
    parser_.setBodyViews();
  } else {
    parser_.setBody(conn_.piece.get(), piece_room_);
  }
  // What came with the head or the last read goes first, without a pass of the event loop.
  boost::system::error_code ec;
  if (more_buffered_) ec = parseBody();
  more_buffered_ = roomFilled();
  if (!ec && parsedBytes() == 0 && !bodyDone()) {
    // Nothing parsed: no view is pending when readRoom() moves the buffer's bytes.
    upstream_.expires_after(asDuration(model_.timeouts.idle));
    upstream_.async_read_some(
        switchyard::http::readRoom(conn_.upstream_buffer),
        [pending = Pending(this)](boost::system::error_code read_ec, size_t n) mutable {
          pending.take()->onRead(read_ec, n);
        });
    return Step::kWaiting;
  }
  return afterParse(ec, parsedBytes());
}

void BodyRelay::onRead(boost::system::error_code ec, size_t transferred) {
  ec = parseReadBody(ec, transferred);
  more_buffered_ = roomFilled();
  if (afterParse(ec, parsedBytes()) == Step::kNext) run();
}

boost::system::error_code BodyRelay::parseBody() {
  if (!decode_chunks_) return switchyard::http::parseBuffered(parser_, conn_.upstream_buffer);
  return decodeChunks();
}

boost::system::error_code BodyRelay::parseReadBody(boost::system::error_code ec,
                                                   size_t transferred) {
  if (!decode_chunks_) {
    return switchyard::http::parseRead(parser_, conn_.upstream_buffer, ec, transferred);
  }
  conn_.upstream_buffer.commit(transferred);
  // The connection's end before the last chunk: what Beast's parser reports for it.
  if (ec == asio::error::eof) return beast::http::error::partial_message;
  if (ec) return ec;
  return decodeChunks();
}

// Pieces of data go to the parser's views, up to their number; the framing is passed over. The
// bytes read are consumed from the buffer at once: consume() moves nothing, so the views stay
// valid until the next read prepares room.
boost::system::error_code BodyRelay::decodeChunks() {
  beast::flat_buffer& buffer = conn_.upstream_buffer;
  const auto bytes = buffer.data();
  const char* const begin = static_cast<const char*>(bytes.data());
  const char* const end = begin + bytes.size();
  const char* p = begin;
  using ChunkStep = switchyard::http::ChunkedBody::Step;
  ChunkStep step = ChunkStep::kPiece;
  std::string_view piece;
  while (step == ChunkStep::kPiece && parser_.views().size() < AnswerParser::kMaxViews) {
    step = chunks_.next(p, end, piece);
    if (!piece.empty()) parser_.addView(piece);
  }
  buffer.consume(static_cast<size_t>(p - begin));
  return step == ChunkStep::kFailed ? chunks_.errorCode() : boost::system::error_code{};
}

BodyRelay::Step BodyRelay::afterParse(boost::system::error_code ec, size_t got) {
  observe::WorkerObserver& observer = worker_.observer;
  if (ec && conn_.watch->gone) {
    observer.onClientCancelled(conn_.observed, relayed_.first_byte_at < 0
                                                   ? observe::CancelStage::kWaitingFirstByte
                                                   : observe::CancelStage::kStreaming);
    return end(ForwardResult::kAborted);
  }
  if (ec) {
    replica_.counters().upstream_errors_total.fetch_add(1, std::memory_order_relaxed);
    replica_.recordFailure();
    observer.onUpstreamError(conn_.observed, ec == beast::error::timeout
                                                 ? observe::UpstreamErrorKind::kTimeout
                                                 : observe::UpstreamErrorKind::kReset);
    spdlog::warn("request {}: {} failed mid-response: {}", target_.request_id, replica_.name(),
                 ec.message());
    return end(head_sent_ ? ForwardResult::kAborted : ForwardResult::kFailedBeforeSending);
  }
  const bool done = bodyDone();
  if (got == 0 && !done) return Step::kNext;
  if (got > 0) {
    if (relayed_.first_byte_at < 0) {
      relayed_.first_byte_at = SteadyClock::instance().now();
      target_.prefill->release();
    }
    if (in_place_) {
      for (const asio::const_buffer& view : parser_.views()) {
        scanner_.feed(std::string_view(static_cast<const char*>(view.data()), view.size()));
      }
      return write(got, done);
    }
    const std::string_view piece(conn_.piece.get(), got);
    scanner_.feed(piece);
    if (target_.capture_job_id && conn_.job_id.empty() && conn_.job_id_scanned < kJobIdScanBytes) {
      conn_.job_id_scanned += got;
      conn_.job_id.assign(findResourceId(piece));
    }
  }
  return write(got, done);
}

BodyRelay::Step BodyRelay::write(size_t got, bool done) {
  size_t count = 0;
  if (!head_sent_) out_[count++] = asio::buffer(conn_.head);
  if (got > 0) {
    if (target_.chunk_to_client) {
      // The chunk's size line: to_chars, not snprintf (a format parse per relayed piece).
      char* line_end = std::to_chars(chunk_prefix_, chunk_prefix_ + 16, got, 16).ptr;
      *line_end++ = '\r';
      *line_end++ = '\n';
      out_[count++] = asio::buffer(chunk_prefix_, static_cast<size_t>(line_end - chunk_prefix_));
    }
    if (in_place_) {
      for (const asio::const_buffer& view : parser_.views()) out_[count++] = view;
    } else {
      out_[count++] = asio::buffer(conn_.piece.get(), got);
    }
    if (target_.chunk_to_client) out_[count++] = asio::buffer(std::string_view("\r\n"));
  }
  if (done && target_.chunk_to_client) out_[count++] = asio::buffer(std::string_view("0\r\n\r\n"));
  last_piece_ = done;
  conn_.stream.expires_after(asDuration(worker_.client_write_timeout));
  const std::span<const asio::const_buffer> buffers(out_.data(), count);
  // The handler is made where the write is started: destroyed unused, it would abandon the relay.
  const auto written = [this] {
    return [pending = Pending(this)](boost::system::error_code write_ec, size_t) mutable {
      pending.take()->onWritten(write_ec);
    };
  };
  // What the socket takes at once goes without the event loop (http/write_all.h says when). An
  // event stream's client answers nothing: its write needs no pass of the loop to wait in, and
  // the relay's next step is a read of the replica, which waits anyway.
  if (in_place_ || worker_.inflight.load(std::memory_order_relaxed) == 1) {
    const auto at_once = switchyard::http::sendAtOnce(conn_.stream, buffers);
    if (at_once.whole) return afterWrite({});
    asio::async_write(conn_.stream, at_once.rest, written());
    return Step::kWaiting;
  }
  asio::async_write(conn_.stream, buffers, written());
  return Step::kWaiting;
}

void BodyRelay::onWritten(boost::system::error_code ec) {
  if (afterWrite(ec) == Step::kNext) run();
}

BodyRelay::Step BodyRelay::afterWrite(boost::system::error_code ec) {
  head_sent_ = true;
  if (ec) {
    // The client went away; dropping the upstream connection aborts the engine's work.
    if (ec != beast::error::timeout) {
      worker_.observer.onClientCancelled(conn_.observed, observe::CancelStage::kStreaming);
    }
    return end(ForwardResult::kAborted);
  }
  return last_piece_ ? end(ForwardResult::kDone) : Step::kNext;
}

BodyRelay::Step BodyRelay::end(ForwardResult result) {
  relayed_.result = result;
  if (result == ForwardResult::kDone) {
    relayed_.prompt_tokens = scanner_.promptTokens();
    relayed_.completion_tokens = scanner_.completionTokens();
    relayed_.saw_done = scanner_.sawDone();
  }
  // Ended inside begin(): the coroutine reads result() and never waits.
  if (!done_) return Step::kEnded;
  // The handler resumes the coroutine whose frame owns this relay: it is the last thing done.
  asio::any_completion_handler<void(RelayedBody)> done(std::move(*done_));
  done(relayed_);
  return Step::kEnded;
}

void BodyRelay::abandon() {
  if (!done_) return;  // torn down inside begin(): nothing waits yet
  asio::any_completion_handler<void(RelayedBody)> done(std::move(*done_));
  done_.reset();
  // `done` goes out of scope last: with it the waiting coroutine's frame, and this relay.
}

}  // namespace switchyard::gateway
