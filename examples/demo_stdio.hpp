// (5) The same MCP server over stdio, one JSON-RPC message per line: what
// switchboard-connect runs (`switchboard-connect --url ... -- switchboard-demo-computer
// --stdio`), and the bench's stdio server for twin switchboards.
#pragma once

namespace demo {

// Answers each request read from stdin on stdout until stdin ends; 0 then.
int serve_stdio();

}  // namespace demo
