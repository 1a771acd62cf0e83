package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a throwaway PostgreSQL cluster: its own data directory, a
// loopback port and trust authentication, run as a child process (with
// a parent-death signal, so a killed test binary does not leave it behind).
// When the tests run as root it runs as an unprivileged user, since
// PostgreSQL refuses to run as root.
type Server struct {
	bin  string // directory of initdb and postgres
	dir  string // temp dir holding data/ and the log
	port int
	cred *syscall.Credential // nil: run as ourselves

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// binDir finds the PostgreSQL server binaries: PATH first, then Debian's
// versioned directories, newest first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if _, err := os.Stat(filepath.Join(filepath.Dir(real), "postgres")); err == nil {
				return filepath.Dir(real), nil
			}
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) found")
}

// runAs returns the credential to drop to when running as root: the
// postgres user when it exists, else nobody.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root and no unprivileged user (postgres, nobody) to run PostgreSQL as")
}

// Start initdb's a cluster in a temp dir and starts it.
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "talaria-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, cred: cred}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			s.Remove()
			return nil, err
		}
	}
	out, err := s.command(ctx, "initdb", "-D", s.data(), "-U", "talaria", "--auth=trust",
		"-E", "UTF8", "--no-locale", "--no-sync").CombinedOutput()
	if err != nil {
		s.Remove()
		return nil, fmt.Errorf("initdb: %v: %s", err, bytes.TrimSpace(out))
	}
	// Settings for a disposable test server: loopback only, no unix
	// socket (the temp dir path may be too long for one), no fsync.
	conf := "\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nfsync = off\n" +
		"synchronous_commit = off\nfull_page_writes = off\nmax_connections = 300\n"
	f, err := os.OpenFile(filepath.Join(s.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		s.Remove()
		return nil, err
	}
	// A free port can be taken between choosing and binding; try a few.
	for range 5 {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.Restart(ctx); err == nil {
			return s, nil
		}
	}
	s.Remove()
	return nil, err
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// URL is the DSN of the cluster's postgres database.
func (s *Server) URL() string {
	return fmt.Sprintf("postgres://talaria@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGINT}
	return cmd
}

// Restart starts the server (again, after Stop) on its port and waits
// until it accepts connections.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("pgtest: server already running")
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	// The server outlives ctx: it is stopped by Stop, not by the caller's
	// context.
	cmd := s.command(context.WithoutCancel(ctx), "postgres", "-D", s.data(), "-p", strconv.Itoa(s.port))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done

	deadline := time.Now().Add(60 * time.Second)
	for {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(c, s.URL())
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("postgres exited on start: %s", tail(log, 600))
		case <-ctx.Done():
			s.stopLocked()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stopLocked()
			return fmt.Errorf("postgres did not accept connections within a minute: %w", err)
		}
	}
}

// Stop shuts the server down (fast shutdown: connections are cut, committed
// data stays). Stopping a stopped server is not an error.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	return nil
}

// Remove deletes the cluster's files; call after Stop.
func (s *Server) Remove() { _ = os.RemoveAll(s.dir) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// StartOwn starts a cluster for one test alone (one it may stop and
// restart), stopped and removed when t ends. It skips or fails like New
// when PostgreSQL is not installed.
func StartOwn(t testing.TB) *Server {
	t.Helper()
	s, err := Start(t.Context())
	if err != nil {
		Unavailable(t, err.Error())
	}
	t.Cleanup(func() { _ = s.Stop(); s.Remove() })
	return s
}
