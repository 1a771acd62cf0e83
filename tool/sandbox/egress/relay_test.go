package egress

import (
	"slices"
	"testing"
)

func TestProxyEnv(t *testing.T) {
	got := proxyEnv([]string{"PATH=/bin", "NO_PROXY=*", "no_proxy=x", "HTTPS_PROXY=http://elsewhere", "HOME=/h"}, "http://127.0.0.1:3128")
	want := []string{"PATH=/bin", "HOME=/h",
		"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "ALL_PROXY=http://127.0.0.1:3128",
		"http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "all_proxy=http://127.0.0.1:3128"}
	if !slices.Equal(got, want) {
		t.Errorf("proxyEnv =\n%q\nwant\n%q", got, want)
	}
}

func TestRelayUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"s", "1", "x"}, {"s", "1", "--"}} {
		if code := RelayMain(args); code != 125 {
			t.Errorf("RelayMain(%q) = %d, want 125", args, code)
		}
	}
}
