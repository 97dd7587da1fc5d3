#include "worker/reply_scan.hpp"

#include "shared/json_scan.hpp"

namespace sb::worker {
namespace {

class Scanner {
 public:
  Scanner(std::string_view text, int max_nesting) : json_(text, max_nesting), text_(text) {}

  std::optional<ScannedMessage> scan() {
    json_.skip_byte_order_mark();
    json_.skip_space();
    if (!json_.at('{')) return std::nullopt;  // arrays and scalars are ignored, valid or not
    ScannedMessage message;
    message.object.begin = json_.position();
    TextSpan id_member;
    bool error_seen = false;
    bool result_is_error = false;
    const bool parsed = json_.object(1, [&](std::string_view key, std::size_t member_begin) {
      if (key == "id") {
        if (message.has_id) return false;
        message.has_id = true;
        const std::size_t value_begin = json_.position();
        if (!json_.value(1)) return false;
        message.id = integer_token<std::uint64_t>(json_.since(value_begin));
        id_member = {member_begin, json_.position()};
        return true;
      }
      if (key == "result") {
        message.is_response = true;
        return flagged_member(1, "isError", result_is_error);
      }
      if (key == "error") {
        message.is_response = true;
        error_seen = true;
        return integer_member(1, "code", message.error_code);
      }
      return json_.value(1);
    });
    if (!parsed) return std::nullopt;
    message.object.end = json_.position();
    json_.skip_space();
    if (!json_.at_end()) return std::nullopt;
    if (error_seen) {
      message.kind = ipc::ReplyKind::kRpcError;
    } else {
      message.error_code.reset();
      if (result_is_error) message.kind = ipc::ReplyKind::kToolError;
    }
    if (message.has_id) message.id_cut = cut_for(id_member);
    return message;
  }

 private:
  // A member whose value may be an object with a boolean `flag` (result.isError).
  bool flagged_member(int depth, std::string_view flag, bool& flag_value) {
    flag_value = false;
    if (!json_.at('{')) return json_.value(depth);
    return json_.object(depth + 1, [&](std::string_view key, std::size_t) {
      if (key == flag) flag_value = text_.substr(json_.position()).starts_with("true");
      return json_.value(depth + 1);
    });
  }

  // A member whose value may be an object with an integer `field` (error.code).
  bool integer_member(int depth, std::string_view field, std::optional<std::int64_t>& field_value) {
    field_value.reset();
    if (!json_.at('{')) return json_.value(depth);
    return json_.object(depth + 1, [&](std::string_view key, std::size_t) {
      const std::size_t value_begin = json_.position();
      if (!json_.value(depth + 1)) return false;
      if (key == field) {
        field_value = integer_token<std::int64_t>(json_.since(value_begin));
      }
      return true;
    });
  }

  // The id member and one comma next to it, so that what remains is still one object.
  TextSpan cut_for(TextSpan member) const {
    std::size_t after = member.end;
    while (is_json_space(text_[after])) ++after;
    if (text_[after] == ',') return {member.begin, after + 1};
    std::size_t before = member.begin;
    while (is_json_space(text_[before - 1])) --before;
    if (text_[before - 1] == ',') return {before - 1, member.end};
    return member;  // the only member
  }

  JsonScanner json_;
  std::string_view text_;
};

}  // namespace

std::optional<ScannedMessage> scan_message(std::string_view text, int max_nesting) {
  return Scanner(text, max_nesting).scan();
}

std::string without_id(std::string_view text, const ScannedMessage& message) {
  const TextSpan cut =
      message.has_id ? message.id_cut : TextSpan{message.object.end, message.object.end};
  std::string body;
  body.reserve(message.object.end - message.object.begin - (cut.end - cut.begin));
  body.append(text.substr(message.object.begin, cut.begin - message.object.begin));
  body.append(text.substr(cut.end, message.object.end - cut.end));
  return body;
}

}  // namespace sb::worker
