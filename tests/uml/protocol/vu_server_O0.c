// SPDX-License-Identifier: MIT
/*
 * vu_server.c built without optimisation (tests/uml/protocol/CMakeLists.txt
 * gives this file -O0 -fno-optimize-sibling-calls): a tail call stays a
 * call, so stack growth per served frontend shows (issue 22, finding 6).
 */
#include "../../../vhost_user/vu_server.c"
