// A stdio MCP server for the switchboard-connect tests: newline-delimited JSON-RPC on
// stdin and stdout. Its tools:
//   echo      one text item: the compact JSON of the call's arguments
//   progress  two notifications/progress with the call's progressToken, then as echo
//   exit      exits at once with status 3, as a server that crashes mid-call
//   wait      never answers (a call for the caller to cancel)
//   count     one text item: how many times count has been called in this process, so that
//             a restart shows (1, 2, 3 ... and back to 1)
//   flood     `count` notifications/message of `bytes` bytes of data each, then as echo
// Like a real server it initializes once: a second initialize is refused. Each call is noted
// on stderr ("called NAME id=ID"), and so are notifications/initialized ("initialized") and
// each notifications/cancelled ("cancelled id=ID reason=REASON"), for the tests to read in
// switchboard-connect's log.
// Options: --junk (a line that is not JSON before every answer), --stderr TEXT (a line on
// stderr at start), --stderr-lines N (N lines "noise 1"... on stderr at start). It ends when its
// stdin does.
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using json = nlohmann::json;

json tool(const std::string& name) {
  return json{
      {"name", name}, {"description", "fake " + name}, {"inputSchema", {{"type", "object"}}}};
}

json text_result(const json& arguments) {
  return json{{"content", json::array({{{"type", "text"}, {"text", arguments.dump()}}})},
              {"isError", false}};
}

struct Server {
  bool junk = false;
  bool initialized = false;
  int counted = 0;

  void send(const json& message) const {
    if (junk) std::cout << "this line is not JSON-RPC\n";
    std::cout << message.dump() << "\n" << std::flush;
  }

  void answer(const json& request);
};

void Server::answer(const json& request) {
  const std::string method = request.value("method", "");
  const json id = request["id"];
  const json params = request.value("params", json::object());
  if (method == "initialize" && initialized) {
    send({{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", -32600}, {"message", "already initialized"}}}});
  } else if (method == "initialize") {
    initialized = true;
    send({{"jsonrpc", "2.0"},
          {"id", id},
          {"result",
           {{"protocolVersion", params.value("protocolVersion", "2025-06-18")},
            {"capabilities", {{"tools", json::object()}}},
            {"serverInfo", {{"name", "fake-stdio-server"}, {"version", "1.0.0"}}}}}});
  } else if (method == "tools/list") {
    send({{"jsonrpc", "2.0"},
          {"id", id},
          {"result",
           {{"tools", json::array({tool("echo"), tool("progress"), tool("exit"), tool("wait"),
                                   tool("count"), tool("flood")})}}}});
  } else if (method == "ping") {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", json::object()}});
  } else if (method == "tools/call") {
    const std::string name = params.value("name", "");
    const json arguments = params.value("arguments", json::object());
    std::cerr << "called " << name << " id=" << id.dump() << std::endl;
    if (name == "exit") std::exit(3);
    if (name == "wait") return;
    if (name == "count") {
      send({{"jsonrpc", "2.0"}, {"id", id}, {"result", text_result(++counted)}});
      return;
    }
    if (name == "flood") {
      const std::string data(arguments.value("bytes", 0), 'x');
      for (int n = arguments.value("count", 0); n > 0; --n)
        send({{"jsonrpc", "2.0"},
              {"method", "notifications/message"},
              {"params", {{"level", "info"}, {"data", data}}}});
    }
    if (name == "progress") {
      const json token = params.value("_meta", json::object()).value("progressToken", json());
      for (int step = 1; step <= 2; ++step)
        send({{"jsonrpc", "2.0"},
              {"method", "notifications/progress"},
              {"params", {{"progressToken", token}, {"progress", step}, {"total", 2}}}});
    }
    send({{"jsonrpc", "2.0"}, {"id", id}, {"result", text_result(arguments)}});
  } else {
    send({{"jsonrpc", "2.0"},
          {"id", id},
          {"error", {{"code", -32601}, {"message", "no method " + method}}}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  Server server;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--junk") server.junk = true;
    if (args[i] == "--stderr" && i + 1 < args.size()) std::cerr << args[++i] << std::endl;
    if (args[i] == "--stderr-lines" && i + 1 < args.size()) {
      const int lines = std::stoi(args[++i]);
      for (int n = 1; n <= lines; ++n) std::cerr << "noise " << n << "\n";
      std::cerr << std::flush;
    }
  }
  for (std::string line; std::getline(std::cin, line);) {
    const json message = json::parse(line, nullptr, false);
    if (!message.is_object() || !message.contains("method")) continue;
    if (message.contains("id")) {
      server.answer(message);
    } else if (message["method"] == "notifications/initialized") {
      std::cerr << "initialized" << std::endl;
    } else if (message["method"] == "notifications/cancelled") {
      const json params = message.value("params", json::object());
      std::cerr << "cancelled id=" << params.value("requestId", json()).dump()
                << " reason=" << params.value("reason", "") << std::endl;
    }
  }
  return 0;
}
