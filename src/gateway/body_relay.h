// BodyRelay: an answer's body relayed from the replica's connection to the client, piece by piece
// as it comes, driven by the two sockets' completions rather than by a coroutine.
//
// A relayed stream costs two completions per piece (the upstream read, the client write). In a
// coroutine each of them resumes the frame through Asio's awaitable machinery (the awaitable
// thread's pump, the executor's type erasure, the result's tuple), which was the largest user-space
// item of a streaming gateway's profile. Here a completion calls a member function. The
// forwarding coroutine runs the relay until it has to wait (begin()), so an answer that is
// already buffered and written at once never suspends it, and otherwise waits once for the end.
//
// Owned by the forwarding coroutine's frame, which stays suspended until the relay completes its
// handler; nothing of the relay is touched after that call (it resumes the frame, which ends it).
// The handler of the relay's pending operation holds the relay (Pending): torn down without
// running (a worker stopped mid-stream), it destroys the waiting coroutine, as the socket's own
// operation would, rather than leave the frame and the relay holding each other. One worker
// thread.
#pragma once

#include <array>
#include <atomic>
#include <boost/asio/any_completion_handler.hpp>
#include <cstddef>
#include <optional>
#include <utility>

#include "api/usage_scanner.h"
#include "gateway/worker_impl.h"
#include "http/chunked_body.h"

namespace switchyard::gateway {

class BodyRelay {
 public:
  // What the relay's steps left to do: wait for a completion, go on at once, or nothing (ended).
  enum class Step : uint8_t { kWaiting, kNext, kEnded };

  // What the relay uses of its worker.
  struct WorkerView {
    observe::WorkerObserver& observer;
    const std::atomic<int64_t>& inflight;  // one: the request is alone on its worker
    TimeNs client_write_timeout;
  };

  BodyRelay(WorkerView worker, ClientConnection& conn, AnswerParser& parser,
            switchyard::http::ConnectionStream& upstream, fleet::ReplicaState& replica,
            const fleet::ModelEntry& model, RelayTarget target);
  BodyRelay(const BodyRelay&) = delete;
  BodyRelay& operator=(const BodyRelay&) = delete;

  // Relays what needs no wait; kEnded when the body is done (or failed): result() says how.
  Step begin() { return run(); }
  // After begin() returned kWaiting: `done` is called once with the result when the relay ends.
  void await(asio::any_completion_handler<void(RelayedBody)> done) {
    done_.emplace(std::move(done));  // constructed, not assigned (Boost 1.81's assignment recurses)
  }
  const RelayedBody& result() const { return relayed_; }

 private:
  Step run();  // steps until one waits or the relay ends
  Step parseOrRead();
  // Whether the last parse stopped because the body's room (or views) was full: more may be
  // buffered. Otherwise it stopped for want of bytes, and parsing the same bytes again would
  // only ask for more: the next step reads.
  bool roomFilled() const {
    return in_place_ ? parser_.views().size() == AnswerParser::kMaxViews : parser_.bodyRoom() == 0;
  }
  size_t parsedBytes() const {  // body bytes the parse has given since setBody/setBodyViews
    return in_place_ ? parser_.viewBytes() : piece_room_ - parser_.bodyRoom();
  }
  // The body's bytes: Beast's parser, or for an event stream in chunks, the relay's own
  // decoder (http/chunked_body.h) writing the same views. What is buffered, and after a read.
  boost::system::error_code parseBody();
  boost::system::error_code parseReadBody(boost::system::error_code ec, size_t transferred);
  boost::system::error_code decodeChunks();
  bool bodyDone() const { return decode_chunks_ ? chunks_.done() : parser_.is_done(); }
  Step afterParse(boost::system::error_code ec, size_t got);
  Step write(size_t got, bool done);  // the piece (and the head, the end) to the client
  Step afterWrite(boost::system::error_code ec);
  Step end(ForwardResult result);
  void abandon();  // the pending operation was destroyed without completing

  class Pending {
   public:
    explicit Pending(BodyRelay* relay) : relay_(relay) {}
    Pending(Pending&& other) noexcept : relay_(std::exchange(other.relay_, nullptr)) {}
    Pending& operator=(Pending&&) = delete;
    ~Pending() {
      if (relay_ != nullptr) relay_->abandon();
    }
    BodyRelay* take() { return std::exchange(relay_, nullptr); }

   private:
    BodyRelay* relay_;
  };
  void onRead(boost::system::error_code ec, size_t transferred);
  void onWritten(boost::system::error_code ec);

  const WorkerView worker_;
  ClientConnection& conn_;
  AnswerParser& parser_;
  switchyard::http::ConnectionStream& upstream_;
  fleet::ReplicaState& replica_;
  const fleet::ModelEntry& model_;
  const RelayTarget target_;
  // A stream's events are small and come a few at a time: at most one page of them per client
  // write keeps each of thousands of streams' pieces to one resident page, where a sized body
  // fills the whole piece per write.
  const size_t piece_room_;
  // An event stream's pieces are written from where the replica's bytes were read (the parser's
  // views); other bodies are copied into the piece (a job's id is looked for in it).
  const bool in_place_;
  const bool decode_chunks_;  // in place, and chunked: chunks_ reads the body
  switchyard::http::ChunkedBody chunks_;
  api::UsageScanner scanner_;
  RelayedBody relayed_;
  bool more_buffered_ = true;  // roomFilled() after the last parse (the head's may leave a body)
  bool head_sent_ = false;
  bool last_piece_ = false;  // the write in flight carries the body's end
  // The write in flight: the head, a chunk's size line, the body's pieces, its end.
  std::array<asio::const_buffer, AnswerParser::kMaxViews + 4> out_;
  char chunk_prefix_[24];
  std::optional<asio::any_completion_handler<void(RelayedBody)>> done_;  // set by await()
};

}  // namespace switchyard::gateway
