#include "shared/config.hpp"
// Implementation in progress (issue 2).
