// Package crashtest drives real talaria processes against the scripted
// model server to test what a single process cannot: two processes on one
// session, SIGINT, SIGKILL at many points of a turn, and a locked or damaged
// database. It holds only tests; TestMain builds the binary once per run.
//
// TALARIA_CRASH_POINTS=200 runs the kill test at more points than the
// default 30.
package crashtest
