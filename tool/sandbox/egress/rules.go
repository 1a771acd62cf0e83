// Package egress is the way out of a sandbox whose network is a list of
// hosts (sandbox.network: [..]): the confined process has no route at all
// (its own network namespace), only a relay inside it that forwards to a
// proxy in Talaria over a Unix socket. The proxy speaks HTTP CONNECT and
// plain-HTTP absolute-URI requests, and connects only to the hosts the
// operator listed, resolving names itself so a listed name cannot lead to
// loopback, link-local or cloud metadata addresses unless those are
// listed as addresses.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrBadRule is returned by Parse for an entry that is not a host.
var ErrBadRule = errors.New("not a host")

// Rule is one entry of the list: an exact host name, a "*." suffix or an
// IP address, and a port (0: any port).
type Rule struct {
	// Host is the lower-case name without a trailing dot; for a wildcard
	// it is the suffix after "*." .
	Host     string
	Wildcard bool
	// Addr is set when the entry is an IP address.
	Addr netip.Addr
	Port int
	text string
}

// String is the entry as the operator wrote it (normalised).
func (r Rule) String() string { return r.text }

// Rules is a parsed host list.
type Rules []Rule

// Parse reads a host list: "example.com", "*.example.com", "10.0.0.5",
// "[::1]:8080", each optionally with ":port". A bare "*" is refused: that
// is network: true.
func Parse(hosts []string) (Rules, error) {
	out := make(Rules, 0, len(hosts))
	for _, h := range hosts {
		r, err := parseRule(h)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseRule(s string) (Rule, error) {
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	host, port := s, 0
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return Rule{}, fmt.Errorf("%q: %w (%v)", orig, ErrBadRule, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("%q: %w: port %q is not 1-65535", orig, ErrBadRule, p)
		}
		host, port = h, n
	}
	host = strings.TrimSuffix(host, ".")
	r := Rule{Port: port}
	if a, err := netip.ParseAddr(host); err == nil {
		r.Addr = a.Unmap().WithZone("")
		r.Host = r.Addr.String()
	} else {
		if rest, ok := strings.CutPrefix(host, "*."); ok {
			r.Wildcard, host = true, rest
		}
		if !validName(host) {
			return Rule{}, fmt.Errorf("%q: %w (use a name, *.suffix or an IP address, optionally with :port; "+
				"network: true allows every host)", orig, ErrBadRule)
		}
		r.Host = host
	}
	r.text = r.Host
	if r.Wildcard {
		r.text = "*." + r.Host
	}
	if port != 0 {
		r.text = net.JoinHostPort(r.text, strconv.Itoa(port))
	}
	return r, nil
}

// validName accepts DNS names (letters, digits, '-', '_' and dots, no
// empty label).
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// normHost lower-cases a requested host and strips brackets and a
// trailing dot.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(h, "]"), "["), "."))
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return h
}

// Match returns the rule that allows host:port, if one does. An IP
// address is matched only by an entry naming that address; a name by an
// exact entry or a "*." entry whose suffix it ends with (not the suffix
// itself: *.example.com does not allow example.com).
func (rs Rules) Match(host string, port int) (Rule, bool) {
	host = normHost(host)
	ip, ipErr := netip.ParseAddr(host)
	for _, r := range rs {
		if r.Port != 0 && r.Port != port {
			continue
		}
		switch {
		case r.Addr.IsValid():
			if ipErr == nil && ip == r.Addr {
				return r, true
			}
		case ipErr == nil:
		case r.Wildcard:
			if strings.HasSuffix(host, "."+r.Host) {
				return r, true
			}
		case host == r.Host:
			return r, true
		}
	}
	return Rule{}, false
}

// listedAddr reports whether addr:port is allowed by an entry naming the
// address itself: what a special address needs.
func (rs Rules) listedAddr(addr netip.Addr, port int) bool {
	for _, r := range rs {
		if r.Addr.IsValid() && r.Addr == addr && (r.Port == 0 || r.Port == port) {
			return true
		}
	}
	return false
}

// String lists the entries, for messages.
func (rs Rules) String() string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

// metadata are cloud metadata addresses outside the link-local range
// (AWS's IPv6 one, Alibaba's).
var metadata = []netip.Addr{netip.MustParseAddr("fd00:ec2::254"), netip.MustParseAddr("100.100.100.200")}

// special says why an address needs to be listed explicitly: loopback,
// link-local (169.254.169.254, the metadata service, among them),
// unspecified, multicast, or a cloud metadata address; "" otherwise.
func special(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast():
		return "multicast"
	}
	for _, m := range metadata {
		if a == m {
			return "cloud metadata"
		}
	}
	return ""
}
