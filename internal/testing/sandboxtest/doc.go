// Package sandboxtest is the sandbox escape suite: each test runs the real
// talaria binary (`talaria run` over the scripted model server) with a
// scripted shell or file call that tries to escape, and checks it failed —
// and that the legitimate case next to it works.
package sandboxtest
