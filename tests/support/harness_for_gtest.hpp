// The harness (harness/) as the GoogleTest suites use it: its names in `sbtest`, and a
// switchboard that, when the test it served has failed, prints its stderr and audit file
// after stopping (the harness itself knows nothing of GoogleTest, so bench links it too).
#pragma once

#include <gtest/gtest.h>

#include <iostream>

#include "harness/audit_log.hpp"
#include "harness/config_builder.hpp"
#include "harness/fake_computer.hpp"
#include "harness/http_client.hpp"
#include "harness/process.hpp"
#include "harness/switchboard_process.hpp"
#include "harness/wait.hpp"

namespace sbtest {

using namespace harness;

class SwitchboardProcess : public harness::SwitchboardProcess {
 public:
  using harness::SwitchboardProcess::SwitchboardProcess;
  ~SwitchboardProcess() {
    stop();
    if (::testing::Test::HasFailure()) std::cerr << diagnostics();
  }
  SwitchboardProcess(const SwitchboardProcess&) = delete;
  SwitchboardProcess& operator=(const SwitchboardProcess&) = delete;
};

}  // namespace sbtest
