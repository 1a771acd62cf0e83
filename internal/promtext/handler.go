package promtext

import (
	"compress/gzip"
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// ContentType is the text format's media type; the escaping parameter is
// appended per request as client_golang does (names written here are
// always legacy-valid, so the escaping changes nothing in the body).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Gatherer returns the families to serve, not yet normalized.
type Gatherer func(ctx context.Context) ([]Family, error)

// Handler serves the families in the text format, as client_golang's
// promhttp does with default options: gzip when the scraper accepts it,
// the name[] query parameter as a filter, 500 when gathering fails.
// Protobuf and OpenMetrics are not offered: every Prometheus scrape
// accepts the text format.
func Handler(gather Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams, err := gather(r.Context())
		if err != nil {
			slog.Default().Warn("metrics: gathering failed", "err", err)
			http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		fams = Normalize(fams)
		if names := r.URL.Query()["name[]"]; len(names) > 0 {
			keep := fams[:0]
			for _, f := range fams {
				for _, n := range names {
					if f.Name == n {
						keep = append(keep, f)
						break
					}
				}
			}
			fams = keep
		}
		h := w.Header()
		h.Add("Vary", "Accept")
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Type", ContentType+"; escaping="+escaping(r.Header.Get("Accept")))
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			if err := Write(w, fams); err != nil {
				slog.Default().Debug("metrics: writing failed", "err", err)
			}
			return
		}
		h.Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		err = Write(gz, fams)
		if cerr := gz.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			slog.Default().Debug("metrics: writing failed", "err", err)
		}
	})
}

// escaping is the name-escaping scheme the scraper asked for, if it is
// one Prometheus knows; "underscores" otherwise.
func escaping(accept string) string {
	for part := range strings.SplitSeq(accept, ",") {
		for param := range strings.SplitSeq(part, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
			if !ok || strings.TrimSpace(k) != "escaping" {
				continue
			}
			switch v = strings.TrimSpace(v); v {
			case "allow-utf-8", "underscores", "dots", "values":
				return v
			}
		}
	}
	return "underscores"
}

// acceptsGzip reports whether Accept-Encoding offers gzip with a non-zero
// quality and prefers it over identity (promhttp offers gzip and
// identity only, zstd not being linked by default).
func acceptsGzip(header string) bool {
	gzipQ, identityQ := -1.0, 0.0
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			q = parseQ(strings.TrimSpace(v))
		}
		switch strings.ToLower(strings.TrimSpace(coding)) {
		case "gzip":
			gzipQ = q
		case "identity":
			identityQ = q
		case "*":
			if gzipQ < 0 {
				gzipQ = q
			}
		}
	}
	return gzipQ > 0 && gzipQ >= identityQ
}

func parseQ(s string) float64 {
	q, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return q
}
