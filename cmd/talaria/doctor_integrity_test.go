package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talaria-agent/talaria/internal/fakellm"
)

// doctor runs an integrity check: a database whose pages are damaged is a
// FAIL, even when opening it and listing its sessions still work.
func TestDoctorFindsADamagedDatabase(t *testing.T) {
	e := newCLIEnv(t)
	e.env["OPENAI_API_KEY"] = "sk-x"
	e.srv.Script(fakellm.Text(strings.Repeat("a long answer that fills pages ", 2000)), fakellm.Text("short"))
	for _, p := range []string{"hello", "again"} {
		if out := e.runTurn("openai", nil, p); out.code != exitOK {
			t.Fatalf("run: exit %d\n%s", out.code, out.stderr)
		}
	}
	db := filepath.Join(e.home, "state.db")
	if out := e.run("", "doctor"); out.code != exitOK || strings.Contains(out.stdout, "FAIL") {
		t.Fatalf("doctor on a sound database: exit %d\n%s", out.code, out.stdout)
	}
	// Deleting the session frees its pages; damage the freelist (first
	// trunk page, from the header): no read touches it, a full check does.
	list := e.run("", "sessions", "list", "--json")
	ids := strings.Split(list.stdout, `"id": "`)
	id := strings.Split(ids[len(ids)-1], `"`)[0] // the oldest: the long answer
	if out := e.run("", "sessions", "delete", id); out.code != exitOK {
		t.Fatalf("delete: exit %d\n%s", out.code, out.stderr)
	}
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(b[16])<<8 | int(b[17])
	trunk := int(b[32])<<24 | int(b[33])<<16 | int(b[34])<<8 | int(b[35])
	if trunk == 0 || trunk*pageSize > len(b) {
		t.Fatalf("no freelist to damage (trunk page %d, %d bytes)", trunk, len(b))
	}
	at := (trunk - 1) * pageSize
	copy(b[at+4:at+8], []byte{0x00, 0x00, 0xff, 0xff}) // leaf count far beyond the page
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.run("", "sessions", "list"); out.code != exitOK {
		t.Fatalf("listing should still work on this damage (else the test proves nothing): exit %d\n%s", out.code, out.stderr)
	}
	out := e.run("", "doctor")
	if out.code == exitOK || !strings.Contains(out.stdout, "FAIL database") {
		t.Errorf("doctor on a damaged database: exit %d\n%s", out.code, out.stdout)
	}
}
