// Package hostile holds the hostile-tenant suite: every test starts a real
// `talaria serve` process (the binary TestMain builds) against the scripted
// model server and plays a token holder, a model or a tool result that tries
// to reach past its own sessions, read the host, see a secret or starve the
// others. The package has no product code; its tests are the evidence for the
// gateway's security rules.
package hostile
