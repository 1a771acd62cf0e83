// Command firstframe measures `talaria chat` from process start to its
// first frame (the prompt drawn) in a pty, next to `talaria version`'s
// wall time in the same, interleaved runs (issue 27 item 8).
//
//	go run ./bench/firstframe -bin path/to/talaria [-n 20]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/creack/pty"

	"github.com/talaria-agent/talaria/bench/internal/benchmain"
)

// measure interleaves n first-frame runs with n `talaria version` runs and
// reports both.
func measure(bin string, n int) error {
	home, err := os.MkdirTemp("", "firstframe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	ws := filepath.Join(home, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return err
	}
	env := []string{"TALARIA_HOME=" + home, "HOME=" + home, "TERM=xterm-256color", "PATH=" + os.Getenv("PATH")}
	var frames, versions []time.Duration
	for i := 0; i < n; i++ {
		d, err := firstFrame(bin, ws, env)
		if err != nil {
			return err
		}
		frames = append(frames, d)
		v, err := version(bin, env)
		if err != nil {
			return err
		}
		versions = append(versions, v)
	}
	report("chat first frame", frames)
	report("talaria version ", versions)
	return nil
}

// firstFrame starts chat in a pty and waits for the prompt's "›".
func firstFrame(bin, ws string, env []string) (time.Duration, error) {
	// No provider is contacted before the first message: the URL is never
	// dialled.
	cmd := exec.Command(bin, "chat", "--api", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "gpt-4.1", "--workspace", ws)
	cmd.Dir, cmd.Env = ws, env
	start := time.Now()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var out bytes.Buffer
	buf := make([]byte, 4096)
	var took time.Duration
	for took == 0 {
		k, err := f.Read(buf)
		out.Write(buf[:k])
		if strings.Contains(out.String(), "›") {
			took = time.Since(start)
		}
		if err != nil {
			_ = cmd.Process.Kill()
			return 0, fmt.Errorf("chat ended before its first frame: %v\n%s", err, out.String())
		}
	}
	_, _ = f.WriteString("\x04") // Ctrl+D on an empty prompt quits
	go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(f) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return took, nil
}

func version(bin string, env []string) (time.Duration, error) {
	cmd := exec.Command(bin, "version")
	cmd.Env = env
	start := time.Now()
	err := cmd.Run()
	return time.Since(start), err
}

func report(name string, ds []time.Duration) {
	slices.Sort(ds)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("%s: median %s (min %s, max %s, n=%d)\n", name, ms(ds[len(ds)/2]), ms(ds[0]), ms(ds[len(ds)-1]), len(ds))
}

func main() {
	bin := flag.String("bin", "", "the talaria binary")
	n := flag.Int("n", 20, "runs of each")
	benchmain.Run("firstframe", "-bin TALARIA [-n 20]", []string{"bin"}, func() error { return measure(*bin, *n) })
}
