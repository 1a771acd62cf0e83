package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/talaria-agent/talaria/bench/benchscript"
	"github.com/talaria-agent/talaria/internal/fakellm"
)

// measurer runs a command against the server and measures each run.
type measurer struct {
	srv       *fakellm.Server
	first     *firstRequest
	url       string
	steps     []fakellm.Step // re-queued before each run; nil for built-ins
	args      []string
	taskFiles bool // give each run a fresh workspace with the task's files
}

// sample is one measured run.
type sample struct {
	Run        int     `json:"run"`
	ColdMS     float64 `json:"cold_start_ms"` // process start → first request
	WallMS     float64 `json:"wall_ms"`
	UserMS     float64 `json:"user_ms"`
	SysMS      float64 `json:"sys_ms"`
	CPUMS      float64 `json:"cpu_ms"` // user + sys, reaped children included
	MaxRSSMB   float64 `json:"max_rss_mb"`
	Requests   int     `json:"requests"`
	Violations int     `json:"violations"`
	Exit       int     `json:"exit"`
}

func (m *measurer) measure(warmup, runs int, jsonOut bool) error {
	var samples []sample
	for i := -warmup; i < runs; i++ {
		s, err := m.once()
		if err != nil {
			return err
		}
		if i < 0 {
			continue
		}
		s.Run = i + 1
		samples = append(samples, s)
		if jsonOut {
			b, _ := json.Marshal(s)
			fmt.Println(string(b))
		}
	}
	if !jsonOut {
		printTable(samples)
	}
	return nil
}

// once runs the command one time.
func (m *measurer) once() (sample, error) {
	m.srv.Reset()
	if m.steps != nil {
		m.srv.Script(m.steps...)
	}
	m.first.reset()
	ws, err := os.MkdirTemp("", "fakellm-bench-ws-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(ws)
	if m.taskFiles {
		if err := benchscript.WriteTaskWorkspace(ws); err != nil {
			return sample{}, err
		}
	}
	r := strings.NewReplacer("{url}", m.url, "{openai_url}", m.url+"/v1", "{anthropic_url}", m.url, "{workspace}", ws)
	args := make([]string, len(m.args))
	for i, a := range m.args {
		args[i] = r.Replace(a)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	werr := cmd.Wait()
	wall := time.Since(start)
	s := sample{
		WallMS:     ms(wall),
		Requests:   len(m.srv.Requests()),
		Violations: len(m.srv.Violations()),
		Exit:       cmd.ProcessState.ExitCode(),
	}
	if at := m.first.get(); !at.IsZero() {
		s.ColdMS = ms(at.Sub(start))
	}
	user, sys, rss := usage(cmd.ProcessState)
	s.UserMS, s.SysMS, s.CPUMS, s.MaxRSSMB = ms(user), ms(sys), ms(user+sys), float64(rss)/(1<<20)
	if werr != nil || s.Violations > 0 {
		fmt.Fprintf(os.Stderr, "run failed (exit %d, %d strict-validation violations): %v\n%s\n", s.Exit, s.Violations, werr, out.String())
		for _, v := range m.srv.Violations() {
			fmt.Fprintln(os.Stderr, "  "+v)
		}
	}
	return s, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printTable(samples []sample) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tcold start ms\twall ms\tuser ms\tsys ms\tCPU ms\tpeak RSS MB\trequests\texit\t")
	for _, s := range samples {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t\n", s.Run, s.ColdMS, s.WallMS, s.UserMS, s.SysMS, s.CPUMS, s.MaxRSSMB, s.Requests, s.Exit)
	}
	col := func(f func(sample) float64) []float64 {
		v := make([]float64, len(samples))
		for i, s := range samples {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v
	}
	cols := [][]float64{
		col(func(s sample) float64 { return s.ColdMS }), col(func(s sample) float64 { return s.WallMS }),
		col(func(s sample) float64 { return s.UserMS }), col(func(s sample) float64 { return s.SysMS }),
		col(func(s sample) float64 { return s.CPUMS }), col(func(s sample) float64 { return s.MaxRSSMB }),
	}
	for _, row := range []struct {
		name string
		pick func([]float64) float64
	}{
		{"median", median},
		{"min", func(v []float64) float64 { return v[0] }},
		{"max", func(v []float64) float64 { return v[len(v)-1] }},
	} {
		fmt.Fprintf(tw, "%s\t", row.name)
		for _, c := range cols {
			fmt.Fprintf(tw, "%.1f\t", row.pick(c))
		}
		fmt.Fprintln(tw, "\t\t")
	}
	_ = tw.Flush()
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
