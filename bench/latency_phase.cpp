// 1. Latency of a small tools/call, sequential, and nginx as its yardstick.
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <utility>

#include "bench/bench_run.hpp"
#include "bench/process_hop.hpp"
#include "bench/report.hpp"

namespace sbbench {
namespace {

// About the size of a small tools/call request or reply on the wire.
constexpr std::size_t kSmallCallBytes = 256;

}  // namespace

void Bench::latency(BenchSwitchboard& switchboard, const BareRelay& bare, ComputerFleet& fleet,
                    CallerPool& pool) {
  connect(pool, switchboard, fleet, {switchboard.computers()[0].name}, 1);
  connect_bare(pool, bare, {switchboard.computers()[0].name}, 1);
  if (auto error = pool.connect_relay(switchboard.port(), switchboard.token(),
                                      {switchboard.computers()[0].name}, 1, Path::kRelay2026))
    throw std::runtime_error("2026-07-28 callers: " + *error);
  std::vector<Path> paths{Path::kRelay, Path::kDirect, Path::kBareRelay, Path::kRelay2026};
  if (!switchboard.access_token().empty()) {
    if (auto error = pool.connect_relay(switchboard.port(), switchboard.access_token(),
                                        {switchboard.computers()[0].name}, 1, Path::kRelayJwt))
      throw std::runtime_error("JWT callers: " + *error);
    paths.push_back(Path::kRelayJwt);
  }
  const auto nginx = start_nginx(pool);
  if (nginx) paths.insert(paths.end(), {Path::kNginx, Path::kNginxProxy, Path::kNginxInnerProxy});
  const CallSpec small;
  for (const Path path : paths) {
    failures_.add("latency warm-up (" + name_of(path) + ")",
                  pool.sequential(path, small, plan_.latency_warmup));
  }
  std::map<Path, std::vector<std::int64_t>> samples;
  // The blocks' order rotates so that a neighbour's build slows every path alike.
  for (int round = 0; round < plan_.latency_rounds; ++round) {
    progress("latency round " + std::to_string(round + 1) + "/" +
             std::to_string(plan_.latency_rounds));
    for (std::size_t k = 0; k < paths.size(); ++k) {
      const Path path = paths[(std::size_t(round) + k) % paths.size()];
      auto tally = pool.sequential(path, small, plan_.latency_calls_per_round);
      failures_.add("latency (" + name_of(path) + ")", tally);
      auto& into = samples[path];
      into.insert(into.end(), tally.latencies_ns.begin(), tally.latencies_ns.end());
    }
  }
  const auto relay = latency_of(samples[Path::kRelay]);
  const auto direct = latency_of(samples[Path::kDirect]);
  const auto floor = latency_of(samples[Path::kBareRelay]);
  const auto stateless = latency_of(samples[Path::kRelay2026]);
  const auto signed_in = latency_of(samples[Path::kRelayJwt]);
  // What the relay is built from: a bare hop between two processes, same-sized message.
  const auto hop = latency_of(
      unix_round_trips(plan_.latency_rounds * plan_.latency_calls_per_round, kSmallCallBytes));
  std::cout << "## 1. Latency: small tools/call, one caller, sequential\n\n"
            << relay.samples << " calls per path, in " << plan_.latency_rounds
            << " alternating blocks; keep-alive HTTP/1.1 caller → supervisor → worker → "
               "computer and back, against the same request over one WebSocket to the same "
               "fake computer. Microseconds.\n\n"
            << latency_header() << latency_row("relay", relay) << latency_row("direct", direct)
            << ratio_row("relay / direct", relay, direct)
            << difference_row("relay − direct", relay, direct) << latency_row("bare relay", floor)
            << ratio_row("bare relay / direct", floor, direct)
            << ratio_row("relay / bare relay", relay, floor) << latency_row("bare process hop", hop)
            << latency_row("relay, 2026-07-28 caller", stateless)
            << ratio_row("2026-07-28 caller / relay", stateless, relay);
  if (signed_in.samples) {
    std::cout << latency_row("relay, JWT access token", signed_in)
              << ratio_row("JWT / static token", signed_in, relay)
              << difference_row("JWT − static token", signed_in, relay);
  }
  std::cout << "\n"
            << kBareRelayText << " Bare process hop: a " << kSmallCallBytes
            << "-byte message to a forked child over a Unix socket pair and back, blocking "
               "reads, nothing else. The 2026-07-28 caller sends the same call with that "
               "revision's `_meta` and headers to the same handshake-era fake computer, "
               "whose reply the switchboard reads whole to give it `resultType` "
               "(docs/protocol.md, \"Eras\"). The JWT caller is the same client signed in "
               "with an RS256 access token of an issuer whose key set the bench serves "
               "(docs/auth.md): checked once, then known by its SHA-256"
            << (signed_in.samples ? "" : " (skipped: the switchboard measured takes no [oauth])")
            << ".\n\n";
  if (direct.samples && relay.samples && floor.samples) {
    verdicts_.add("latency p50 ≤ 2.3× direct", ratio(relay.p50, direct.p50),
                  relay.p50 <= 2.3 * direct.p50, ratio(floor.p50, direct.p50));
    verdicts_.add("latency p99 ≤ 2.5× direct", ratio(relay.p99, direct.p99),
                  relay.p99 <= 2.5 * direct.p99, ratio(floor.p99, direct.p99));
  }
  if (nginx) {
    print_nginx_hops(relay, direct, latency_of(samples[Path::kNginx]),
                     latency_of(samples[Path::kNginxProxy]),
                     latency_of(samples[Path::kNginxInnerProxy]));
  } else {
    std::cout << "nginx is not installed (Debian: nginx-light): its rows were skipped.\n\n";
  }
}

// nginx as a yardstick (nginx_peer.hpp) when it is installed, its callers connected.
std::unique_ptr<NginxPeer> Bench::start_nginx(CallerPool& pool) {
  const auto program = NginxPeer::find();
  if (!program && std::getenv("SWITCHBOARD_REQUIRE_NGINX"))
    throw std::runtime_error("nginx is not installed and SWITCHBOARD_REQUIRE_NGINX is set");
  if (!program) return nullptr;
  // The shape and size of the relay's small reply.
  const std::string reply =
      R"({"jsonrpc":"2.0","id":1000,"result":{"content":[{"type":"text","text":"c0-1000"}],)"
      R"("isError":false}})";
  auto nginx = std::make_unique<NginxPeer>(*program, reply);
  for (const auto& [path, port] : {std::pair{Path::kNginx, nginx->direct_port()},
                                   std::pair{Path::kNginxProxy, nginx->proxy_port()},
                                   std::pair{Path::kNginxInnerProxy, nginx->inner_proxy_port()}}) {
    if (auto error = pool.connect_fixed(path, port, reply, 1))
      throw std::runtime_error(name_of(path) + " callers: " + *error);
  }
  return nginx;
}

void Bench::print_nginx_hops(const Latency& relay, const Latency& direct, const Latency& origin,
                             const Latency& proxied, const Latency& inner) {
  const double overhead = relay.p50 - direct.p50;
  const double hop = proxied.p50 - origin.p50;
  const double inner_hop = inner.p50 - origin.p50;
  auto in_hops = [&](double one) { return one > 0 ? fixed(overhead / one, 1) : std::string("-"); };
  std::cout << "### nginx as a yardstick\n\n"
            << "The relay's caller and request, in the same rotating blocks, to an nginx "
               "process that answers a fixed reply of the same size itself (the origin), "
               "through another nginx process that reverse-proxies to it (keep-alive "
               "upstream: a hop between two processes, as each of the relay's is), and "
               "through a second server block of the origin's own process that does the "
               "same (a hop that never leaves the process). Microseconds.\n\n"
            << latency_header() << latency_row("nginx answering", origin)
            << latency_row("nginx, proxy in another process", proxied)
            << latency_row("nginx, proxy in the same process", inner)
            << difference_row("one nginx hop between processes", proxied, origin)
            << difference_row("one nginx hop inside a process", inner, origin)
            << "\nThe relay's overhead (relay − direct, p50) is " << fixed(overhead, 1)
            << " µs: " << in_hops(hop) << " nginx hops between processes, " << in_hops(inner_hop)
            << " inside one (the relay adds two hops between processes by design: the "
               "supervisor and the worker).\n\n";
  auto hop_verdict = [&](const std::string& where, double one) {
    verdicts_.add("relay overhead ≤ 3 nginx hops " + where + " (p50)",
                  fixed(overhead, 1) + " µs = " + in_hops(one) + " × " + fixed(one, 1) + " µs",
                  overhead <= 3 * one);
  };
  if (origin.samples && proxied.samples && inner.samples && hop > 0 && inner_hop > 0) {
    hop_verdict("between processes", hop);
    hop_verdict("inside a process", inner_hop);
  }
}

}  // namespace sbbench
