package egress

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in, want string
		bad      bool
	}{
		{in: "proxy.golang.org", want: "proxy.golang.org"},
		{in: " Proxy.Golang.ORG. ", want: "proxy.golang.org"},
		{in: "*.github.com", want: "*.github.com"},
		{in: "10.0.0.5:8080", want: "10.0.0.5:8080"},
		{in: "[::1]:8080", want: "[::1]:8080"},
		{in: "::1", want: "::1"},
		{in: "*.example.com:443", want: "*.example.com:443"},
		{in: "*", bad: true},
		{in: "", bad: true},
		{in: "a..b", bad: true},
		{in: "a.com:0", bad: true},
		{in: "a.com:99999", bad: true},
		{in: "a.com:x", bad: true},
		{in: "http://a.com", bad: true},
		{in: "a.*.com", bad: true},
		{in: "a com", bad: true},
	} {
		rs, err := Parse([]string{c.in})
		switch {
		case c.bad && err == nil:
			t.Errorf("Parse(%q) = %v, want an error", c.in, rs)
		case c.bad && !errors.Is(err, ErrBadRule):
			t.Errorf("Parse(%q) error %v is not ErrBadRule", c.in, err)
		case !c.bad && err != nil:
			t.Errorf("Parse(%q): %v", c.in, err)
		case !c.bad && rs.String() != c.want:
			t.Errorf("Parse(%q) = %q, want %q", c.in, rs.String(), c.want)
		}
	}
}

func TestMatch(t *testing.T) {
	rs, err := Parse([]string{"proxy.golang.org", "*.github.com", "10.0.0.5:8080", "[::1]:9000", "example.org:443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		port int
		want string // "" for no match
	}{
		{"proxy.golang.org", 443, "proxy.golang.org"},
		{"PROXY.golang.org.", 80, "proxy.golang.org"},
		{"evil-proxy.golang.org", 443, ""},
		{"proxy.golang.org.evil.com", 443, ""},
		{"api.github.com", 443, "*.github.com"},
		{"a.b.github.com", 22, "*.github.com"},
		{"github.com", 443, ""}, // *. is a suffix below the name, not the name
		{"evilgithub.com", 443, ""},
		{"10.0.0.5", 8080, "10.0.0.5:8080"},
		{"10.0.0.5", 8081, ""},
		{"::ffff:10.0.0.5", 8080, "10.0.0.5:8080"},
		{"[::1]", 9000, "[::1]:9000"},
		{"::1", 9001, ""},
		{"example.org", 443, "example.org:443"},
		{"example.org", 80, ""},
		{"127.0.0.1", 443, ""},
	} {
		r, ok := rs.Match(c.host, c.port)
		got := ""
		if ok {
			got = r.String()
		}
		if got != c.want {
			t.Errorf("Match(%q, %d) = %q, want %q", c.host, c.port, got, c.want)
		}
	}
}

func TestSpecial(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1", true}, {"127.5.5.5", true}, {"::1", true}, {"169.254.169.254", true},
		{"fe80::1", true}, {"0.0.0.0", true}, {"::", true}, {"fd00:ec2::254", true}, {"100.100.100.200", true},
		{"::ffff:127.0.0.1", true}, {"224.0.0.1", true},
		{"10.0.0.5", false}, {"140.82.112.3", false}, {"2606:4700::1111", false},
	} {
		if got := special(netip.MustParseAddr(c.addr)) != ""; got != c.want {
			t.Errorf("special(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}
