// The one MCP session with the server, kept across attaches and shared by the links to
// every switchboard (docs/connect.md, "Behaviour", "Twins"). Each
// switchboard makes a new MCP session after every attach; the server keeps the one it
// made first. In between sits this: the first `initialize` goes to the server and its
// result is kept, a later one (from any link) is answered from it; `notifications/
// initialized` reaches the server once. The ids of the switchboards' requests are
// replaced by ids of our own, unique for the server's life, because each link counts its
// ids on its own and afresh on each attach while the server may still be working on a
// lost attach's; so are their progress tokens. Answers, progress and the server's requests
// go back to the link they belong to; a notification that belongs to no request goes to
// every attached link. A lost attach's calls get `notifications/cancelled`, its late
// replies and progress reach no one, and the server's own requests it left unanswered get
// an error.
//
// Plain data in, plain data out: the connector does the reading and writing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "shared/json_scan.hpp"

namespace sb::connect {

// What routing needs of one JSON-RPC message, read without building a tree: spans of the
// message's own text.
struct MessageShape {
  std::optional<std::string> method;
  std::optional<TextSpan> id;
  std::optional<TextSpan> request_token;   // params._meta.progressToken, on a request
  std::optional<TextSpan> progress_token;  // params.progressToken, on notifications/progress
  std::optional<TextSpan> request_id;      // params.requestId, on notifications/cancelled
  std::optional<TextSpan> result;
  bool error = false;
};

// nullopt unless `message` is one JSON object (nested at most jsonrpc::kMaxNesting deep)
// whose members of interest each appear at most once.
std::optional<MessageShape> scan_shape(std::string_view message);

// Which switchboard link: its URL's place in the options.
using LinkId = std::size_t;

// Where one message goes: to the server, to links (each message with its own), both or
// neither (`dropped` says why when that is worth a log line).
struct Routed {
  std::optional<std::string> to_server;
  std::vector<std::pair<LinkId, std::string>> to_links;
  std::string dropped;
};

class KeptSession {
 public:
  // Requests in flight at the server, and the server's own awaiting the switchboard, at
  // most: beyond them a request is answered with an error at once.
  static constexpr std::size_t kMaxInFlight = 65536;

  // A link is attached: the server's messages may go to it from now on.
  void attach(LinkId link) { attached_.insert(link); }
  bool attached(LinkId link) const { return attached_.contains(link); }
  const std::set<LinkId>& attached_links() const { return attached_; }
  // The link is lost: what the server must be told now (cancellations of the link's calls,
  // errors for the server's requests the link had not answered).
  std::vector<std::string> detach(LinkId link);

  // A message from a link that is not attached is dropped.
  Routed from_link(LinkId link, std::string_view message);
  Routed from_server(std::string_view message);

  // Whether the server's session has been initialized, so that an attach is answered
  // from it.
  bool initialized() const { return initialize_result_.has_value(); }

 private:
  struct LinkRequest {
    LinkId link;
    std::string id;  // the switchboard's id, as it was written
    std::optional<std::string> progress_token;
  };
  using LinkRequestKey = std::pair<LinkId, std::string>;  // a link and its request's id

  Routed request_from_link(LinkId link, std::string_view message, const MessageShape& shape);
  Routed cancel_from_link(LinkId link, std::string_view message, const MessageShape& shape);
  Routed response_from_link(LinkId link, std::string_view message, const MessageShape& shape);
  Routed request_from_server(std::string_view message, const MessageShape& shape);
  Routed response_from_server(std::string_view message, const MessageShape& shape);
  Routed initialize_answered(std::string_view message, const MessageShape& shape);
  Routed progress_from_server(std::string_view message, const MessageShape& shape);
  Routed cancel_from_server(std::string_view message, const MessageShape& shape);
  std::optional<LinkId> link_for_server_request() const;
  Routed to_every_link(std::string_view message) const;

  std::set<LinkId> attached_;
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, LinkRequest> in_flight_;  // by our id
  std::map<LinkRequestKey, std::int64_t> ours_by_link_request_;
  std::optional<std::int64_t> initialize_id_;       // ours, while the first initialize is out
  std::vector<LinkRequestKey> initialize_waiting_;  // other links' initializes meanwhile
  std::optional<std::string> initialize_result_;
  bool initialized_sent_ = false;
  std::map<std::string, LinkId, std::less<>> server_asks_;  // by the server's id, canonical
};

}  // namespace sb::connect
