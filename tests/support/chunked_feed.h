// Test helper: a chunked body fed to http::ChunkedBody in pieces of a given size, as the relay
// feeds it (what a call leaves unread is offered again with the next bytes), for the decoder's
// unit test and fuzz target.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "http/chunked_body.h"

namespace switchyard::http::chunked_feed {

struct Decoded {
  std::string body;
  ChunkedBody::Step last = ChunkedBody::Step::kNeedMore;
  ChunkedBody::Error error = ChunkedBody::Error::kNone;
  size_t consumed = 0;     // bytes the decoder read
  bool in_bounds = true;   // every piece pointed into the bytes offered
};

inline Decoded decodeInPieces(std::string_view input, size_t piece_size, uint64_t limit) {
  ChunkedBody chunks(limit);
  Decoded out;
  std::string pending;
  size_t fed = 0;
  for (;;) {
    const size_t n = std::min(piece_size, input.size() - fed);
    pending.append(input.substr(fed, n));
    fed += n;
    const char* p = pending.data();
    const char* const end = p + pending.size();
    std::string_view piece;
    ChunkedBody::Step step;
    do {
      step = chunks.next(p, end, piece);
      out.in_bounds = out.in_bounds && (piece.empty() || (piece.data() >= pending.data() &&
                                                          piece.data() + piece.size() <= end));
      out.body.append(piece);
    } while (step == ChunkedBody::Step::kPiece);
    out.consumed += static_cast<size_t>(p - pending.data());
    pending.erase(0, static_cast<size_t>(p - pending.data()));
    out.last = step;
    if (step != ChunkedBody::Step::kNeedMore || fed == input.size()) break;
  }
  out.error = chunks.error();
  return out;
}

}  // namespace switchyard::http::chunked_feed
