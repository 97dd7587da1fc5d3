// A response written whole, in one write within the write deadline: the head, then the
// body (the caller's id and the computer's reply as two buffers, never joined), or the head
// alone for HEAD.
#pragma once

#include <functional>

#include "supervisor/http/response_head.hpp"
#include "supervisor/http/types.hpp"
#include "supervisor/http/wire.hpp"

namespace sb::supervisor {

// `written(ok)` runs once, after the write or its failure; the response's lease is given
// back then.
void write_plain_response(const Wire& wire, HttpResponse response, const Framing& framing,
                          std::function<void(bool ok)> written);

}  // namespace sb::supervisor
