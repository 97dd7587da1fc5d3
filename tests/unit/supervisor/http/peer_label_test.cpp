// The peer label an audit line names (docs/protocol.md, "Peer label").
#include <gtest/gtest.h>

#include "supervisor/http/peer_label.hpp"

namespace sb::supervisor {
namespace {

TEST(PeerLabel, PrefersTheTailscaleLogin) {
  EXPECT_EQ(peer_label("alice@example.com", "10.0.0.1", "127.0.0.1:5"),
            "alice@example.com via 127.0.0.1:5");
}

TEST(PeerLabel, FallsBackToTheFirstForwardedForEntry) {
  EXPECT_EQ(peer_label(std::nullopt, "203.0.113.7, 10.0.0.1", "127.0.0.1:5"),
            "203.0.113.7 via 127.0.0.1:5");
  EXPECT_EQ(peer_label("caf\xc3\xa9", "203.0.113.7", "127.0.0.1:5"), "203.0.113.7 via 127.0.0.1:5");
}

TEST(PeerLabel, IsTheSocketAddressWithoutAUsableHeader) {
  EXPECT_EQ(peer_label(std::nullopt, std::nullopt, "[::1]:8"), "[::1]:8");
  EXPECT_EQ(peer_label("bad\x01", std::nullopt, "127.0.0.1:5"), "127.0.0.1:5");
}

TEST(PeerLabel, TruncatesLongIdentities) {
  const std::string label = peer_label(std::string(300, 'a'), std::nullopt, "127.0.0.1:5");
  EXPECT_EQ(label, std::string(128, 'a') + " via 127.0.0.1:5");
}

}  // namespace
}  // namespace sb::supervisor
