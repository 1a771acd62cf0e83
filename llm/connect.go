package llm

import (
	"errors"
	"net"
	"strings"
	"syscall"
)

// ConnectCause says why no connection could be made (TransportConnect). Its
// value is the system's own short phrase, which people recognise.
type ConnectCause string

const (
	ConnectUnknown        ConnectCause = ""
	ConnectRefused        ConnectCause = "connection refused"     // nothing listens on the port
	ConnectNoHost         ConnectCause = "no such host"           // the name does not resolve
	ConnectNetUnreachable ConnectCause = "network is unreachable" // no route to that network
	ConnectNoRoute        ConnectCause = "no route to host"       // the host is down or filtered
)

// ConnectCauseOf names why err could not connect: from the error's type
// first, then, for errors whose type is lost in wrapping, from its text.
// ConnectUnknown when err says neither.
func ConnectCauseOf(err error) ConnectCause {
	switch {
	case err == nil:
		return ConnectUnknown
	case errors.Is(err, syscall.ECONNREFUSED):
		return ConnectRefused
	case isDNSError(err):
		return ConnectNoHost
	case errors.Is(err, syscall.ENETUNREACH):
		return ConnectNetUnreachable
	case errors.Is(err, syscall.EHOSTUNREACH):
		return ConnectNoRoute
	}
	low := strings.ToLower(err.Error())
	for _, c := range []ConnectCause{ConnectRefused, ConnectNoHost, ConnectNetUnreachable, ConnectNoRoute} {
		if strings.Contains(low, string(c)) {
			return c
		}
	}
	// Node, Python and curl spell the same causes their own way; a pasted
	// client message says one of these.
	for _, w := range connectCauseWords {
		if strings.Contains(low, w.word) {
			return w.cause
		}
	}
	return ConnectUnknown
}

var connectCauseWords = [...]struct {
	word  string
	cause ConnectCause
}{
	{"econnrefused", ConnectRefused},
	{"enotfound", ConnectNoHost},
	{"eai_again", ConnectNoHost},
	{"eai_noname", ConnectNoHost},
	{"name or service not known", ConnectNoHost},
	{"nodename nor servname", ConnectNoHost},
	{"temporary failure in name resolution", ConnectNoHost},
	{"could not resolve host", ConnectNoHost},
	{"enetunreach", ConnectNetUnreachable},
	{"ehostunreach", ConnectNoRoute},
}

func isDNSError(err error) bool {
	_, ok := errors.AsType[*net.DNSError](err)
	return ok
}
