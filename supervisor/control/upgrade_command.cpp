#include "supervisor/control/upgrade_command.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "supervisor/config/config.hpp"
#include "supervisor/control/control_client.hpp"

namespace sb::supervisor {

using json = nlohmann::json;

std::string upgrade_report(const std::string& answer, int& status) {
  status = 1;
  const json body = json::parse(answer, nullptr, false);
  if (!body.is_object()) return "the switchboard answered something unreadable: " + answer;
  if (!body.value("switched", false)) {
    return "not switched: " + body.value("error", std::string("no reason given")) + "\n";
  }
  std::string text = "switched from " + body.value("old_build", std::string("?")) + " to " +
                     body.value("new_build", std::string("?")) + " in " +
                     std::to_string(body.value("pause_ms", 0)) + " ms\n";
  bool all_taken_up = true;
  for (const auto& computer : body.value("computers", json::array())) {
    const std::string outcome = computer.value("outcome", std::string("?"));
    all_taken_up = all_taken_up && outcome == "resumed";
    text += computer.value("computer", std::string("?")) + "\t" + outcome;
    if (computer.contains("why")) text += " (" + computer.value("why", std::string()) + ")";
    text += "\n";
  }
  status = all_taken_up ? 0 : 1;
  return text;
}

int run_upgrade(const std::string& config_path, std::string_view home) {
  const auto config = config::load_config_file(config_path, home);
  // The switch waits up to drain_secs for each part, then the new build starts its
  // workers: a minute more is plenty.
  const auto deadline = std::chrono::seconds(config.timeouts.drain_secs + 60);
  boost::asio::io_context io;
  auto answer = boost::asio::co_spawn(
      io, ask_control(config.control_socket_path(), config_path, "upgrade", deadline),
      boost::asio::use_future);
  io.run();
  const ControlAnswer reply = answer.get();
  if (!reply.reply) throw std::runtime_error(reply.failure);
  if (reply.reply->empty()) {
    throw std::runtime_error(
        "the switchboard closed the control connection without an answer; see its log");
  }
  int status = 1;
  std::cout << upgrade_report(*reply.reply, status);
  return status;
}

}  // namespace sb::supervisor
