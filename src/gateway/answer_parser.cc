#include "gateway/answer_parser.h"

namespace switchyard::gateway {

bool isHopByHop(boost::beast::http::field f) {
  using boost::beast::http::field;
  switch (f) {
    case field::connection:
    case field::keep_alive:
    case field::transfer_encoding:
    case field::content_length:
    case field::te:
    case field::trailer:
    case field::upgrade:
    case field::proxy_authorization:
    case field::proxy_connection:
    case field::host:
    case field::expect:
      return true;
    default:
      return false;
  }
}

}  // namespace switchyard::gateway
