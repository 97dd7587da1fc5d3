// The worker's sandbox, entered once it holds its channel and its status record: from
// then on it can only do what a worker does (docs/architecture.md, "Sandbox").
#pragma once

#include <optional>
#include <string>

namespace sb::worker {

// Sets no_new_privs and loads a seccomp filter that allows I/O on descriptors the worker
// already holds (and on sockets passed to it), epoll, timers, memory, futexes and exit,
// and kills the process for anything else: opening a file, creating or connecting a
// socket, signalling another process, executing a program. What failed, if anything.
std::optional<std::string> enter_sandbox();

}  // namespace sb::worker
