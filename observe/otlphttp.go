package observe

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The OTLP/HTTP exporters are written here rather than taken from
// otlptracehttp/otlpmetrichttp: those import the collector's service
// packages, which carry gRPC stubs, and gRPC costs every invocation of
// the binary tens of MiB (its x/net/trace init keeps every exported
// method alive). The two export requests are a single repeated field
// each, so they are encoded from the plain message packages.

// otlpHTTP posts protobuf export requests to one OTLP/HTTP endpoint with
// the OTLP exporter spec's retry rules (429, 502, 503, 504 and
// connection failures are retried with backoff, Retry-After honoured).
type otlpHTTP struct {
	url     string
	headers http.Header
	gzip    bool
	timeout time.Duration
	client  *http.Client
	// backoff is the first retry's wait; it doubles up to maxBackoff, and
	// retries stop after maxElapsed.
	backoff, maxBackoff, maxElapsed time.Duration
}

// otlpEnv reads the OTEL_EXPORTER_OTLP_[signal_]* variable, the
// signal's own first.
func otlpEnv(getenv func(string) string, signal, name string) string {
	return firstOf(getenv("OTEL_EXPORTER_OTLP_"+signal+"_"+name), getenv("OTEL_EXPORTER_OTLP_"+name))
}

// newOTLPHTTP configures a sender for endpoint; signal is "TRACES" or
// "METRICS" (which OTEL_EXPORTER_OTLP_<signal>_* variables apply).
// headers (config.yaml) override the environment's.
func newOTLPHTTP(endpoint, signal string, headers map[string]string, getenv func(string) string) (*otlpHTTP, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q is not an http(s) URL", endpoint)
	}
	h := http.Header{}
	if raw := otlpEnv(getenv, signal, "HEADERS"); raw != "" {
		for item := range strings.SplitSeq(raw, ",") {
			k, v, ok := strings.Cut(item, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", item)
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = dv
			}
			h.Set(k, v)
		}
	}
	for k, v := range headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/x-protobuf")
	h.Set("User-Agent", "talaria OTLP/HTTP exporter")
	e := &otlpHTTP{url: u.String(), headers: h, timeout: 10 * time.Second,
		backoff: 5 * time.Second, maxBackoff: 30 * time.Second, maxElapsed: time.Minute}
	switch c := strings.ToLower(otlpEnv(getenv, signal, "COMPRESSION")); c {
	case "", "none":
	case "gzip":
		e.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION %q is not supported: use gzip or none", c)
	}
	if t := otlpEnv(getenv, signal, "TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q is not a positive number of milliseconds", t)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg, err := otlpTLS(getenv, signal); err != nil {
		return nil, err
	} else if cfg != nil {
		tr.TLSClientConfig = cfg
	}
	e.client = &http.Client{Transport: tr}
	return e, nil
}

// otlpTLS builds the TLS settings the CERTIFICATE, CLIENT_CERTIFICATE and
// CLIENT_KEY variables ask for (nil when none is set).
func otlpTLS(getenv func(string) string, signal string) (*tls.Config, error) {
	ca, cert, key := otlpEnv(getenv, signal, "CERTIFICATE"), otlpEnv(getenv, signal, "CLIENT_CERTIFICATE"), otlpEnv(getenv, signal, "CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
		cfg.RootCAs = pool
	}
	if cert != "" || key != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/CLIENT_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}

// exportRequest encodes an Export*ServiceRequest: field 1, repeated, of
// the given messages (the collector's request types are nothing more).
func exportRequest[M proto.Message](items []M) ([]byte, error) {
	var out []byte
	for _, m := range items {
		b, err := proto.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("OTLP encode: %w", err)
		}
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, b)
	}
	return out, nil
}

// errRetryable marks an answer the spec says to retry.
type retryableError struct {
	err   error
	after time.Duration // the server's Retry-After, 0 if none
}

func (e *retryableError) Error() string { return e.err.Error() }
func (e *retryableError) Unwrap() error { return e.err }

// send posts body, retrying as the spec says until ctx ends or the
// retry budget is spent.
func (e *otlpHTTP) send(ctx context.Context, body []byte) error {
	if e.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write(body)
		if err := zw.Close(); err != nil {
			return fmt.Errorf("OTLP gzip: %w", err)
		}
		body = buf.Bytes()
	}
	start := time.Now()
	wait := e.backoff
	for {
		err := e.post(ctx, body)
		var re *retryableError
		if err == nil || !errors.As(err, &re) {
			return err
		}
		// Jitter the wait (±50%) so a fleet does not retry in step.
		d := wait/2 + rand.N(wait)
		if re.after > 0 {
			d = re.after
		}
		if time.Since(start)+d > e.maxElapsed {
			return fmt.Errorf("OTLP export to %s: giving up after %s: %w", e.url, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("OTLP export to %s: %w (last error: %w)", e.url, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(wait*2, e.maxBackoff)
	}
}

func (e *otlpHTTP) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = e.headers.Clone()
	if e.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return err
		}
		// Connection failures and per-attempt timeouts are transient.
		return &retryableError{err: fmt.Errorf("OTLP export to %s: %w", e.url, err)}
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return partialSuccess(reply)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusBadGateway ||
		resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
		return &retryableError{err: fmt.Errorf("OTLP export to %s: HTTP %d", e.url, resp.StatusCode), after: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return fmt.Errorf("OTLP export to %s: HTTP %d: %s", e.url, resp.StatusCode, strings.TrimSpace(string(reply[:min(len(reply), 512)])))
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// partialSuccess reads an Export*ServiceResponse (field 1: partial_success
// {1: rejected count, 2: error_message}) and reports a rejection.
func partialSuccess(b []byte) error {
	ps := protoField(b, 1)
	if ps == nil {
		return nil
	}
	var rejected uint64
	var msg string
	for len(ps) > 0 {
		num, typ, n := protowire.ConsumeTag(ps)
		if n < 0 {
			return nil
		}
		ps = ps[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(ps)
			if m < 0 {
				return nil
			}
			rejected, ps = v, ps[m:]
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(ps)
			if m < 0 {
				return nil
			}
			msg, ps = string(v), ps[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, ps)
			if m < 0 {
				return nil
			}
			ps = ps[m:]
		}
	}
	if rejected == 0 && msg == "" {
		return nil
	}
	return fmt.Errorf("OTLP partial success: %d rejected: %s", rejected, msg)
}

// protoField returns the bytes of the first length-delimited field num.
func protoField(b []byte, num protowire.Number) []byte {
	for len(b) > 0 {
		n, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			return nil
		}
		b = b[m:]
		if n == num && typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return nil
			}
			return v
		}
		k := protowire.ConsumeFieldValue(n, typ, b)
		if k < 0 {
			return nil
		}
		b = b[k:]
	}
	return nil
}

// traceClient is otlptrace's upload client over otlpHTTP: otlptrace.New
// turns it into an sdktrace.SpanExporter with the SDK's own span
// conversion (that package links no gRPC).
type traceClient struct{ h *otlpHTTP }

func (c traceClient) Start(context.Context) error { return nil }
func (c traceClient) Stop(context.Context) error  { return nil }
func (c traceClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := exportRequest(spans)
	if err != nil {
		return err
	}
	return c.h.send(ctx, body)
}

func httpTraceExporter(ctx context.Context, endpoint string, headers map[string]string, getenv func(string) string) (sdktrace.SpanExporter, error) {
	h, err := newOTLPHTTP(endpoint, "TRACES", headers, getenv)
	if err != nil {
		return nil, err
	}
	return otlptrace.New(ctx, traceClient{h: h})
}

// metricExporter is an sdkmetric.Exporter over otlpHTTP (cumulative
// temporality and the default aggregations, as otlpmetrichttp's
// defaults).
type httpMetricExporter struct {
	h        *otlpHTTP
	mu       sync.Mutex
	shutdown bool
}

var _ sdkmetric.Exporter = (*httpMetricExporter)(nil)

func httpMetricExporterFor(endpoint string, headers map[string]string, getenv func(string) string) (*httpMetricExporter, error) {
	h, err := newOTLPHTTP(endpoint, "METRICS", headers, getenv)
	if err != nil {
		return nil, err
	}
	return &httpMetricExporter{h: h}, nil
}

func (e *httpMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *httpMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *httpMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	e.mu.Lock()
	down := e.shutdown
	e.mu.Unlock()
	if down {
		return errors.New("OTLP metric exporter is shut down")
	}
	body, err := exportRequest([]proto.Message{resourceMetricsPB(rm)})
	if err != nil {
		return err
	}
	return e.h.send(ctx, body)
}

func (e *httpMetricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

func (e *httpMetricExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	e.shutdown = true
	e.mu.Unlock()
	e.h.client.CloseIdleConnections()
	return ctx.Err()
}
