// Package multinode runs several real `talaria serve` processes on one
// PostgreSQL database, with the scripted model server behind them, to test
// what one node cannot show: a session's turns serialized across nodes,
// messages queued on one node and run on another, SSE streams that follow
// a turn running on another node and resume anywhere with Last-Event-ID,
// and a node killed with kill -9 mid-turn taken over after the lease TTL.
// It holds only tests; the binary is built once per run.
//
// Without PostgreSQL the tests skip with one loud line (they fail under
// CI=true). TALARIA_SOAK=1 runs the many-sessions test at 200 sessions
// instead of 30, and the random kill soak at 200 kills instead of 30. The
// write_file kill points hold a node inside its rename with strace (syscall
// delay injection); without strace they skip (fail under CI=true).
// BenchmarkNodes measures turns per second through 1, 2 and 3 nodes (go
// test -run '^$' -bench Nodes -benchtime 600x).
package multinode
