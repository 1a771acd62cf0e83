package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/talaria-agent/talaria/internal/config"
)

// cmdHelp is what `talaria CMD --help` prints: how to call it, what it
// does, its flags (from the FlagSet) and examples. Every command and
// subcommand has its own, so no help lists flags that do not apply.
type cmdHelp struct {
	name     string // "sessions show": also the name in error lines
	usage    string // the arguments after "talaria NAME"
	about    string
	examples []string
}

// flags returns a FlagSet for h whose output is silent: parseFlags words
// the errors and prints the help.
func (h cmdHelp) flags() *flag.FlagSet {
	fs := flag.NewFlagSet(h.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. It reports done with the exit code when
// the command must stop: --help prints the help on stdout (exit 0); a bad
// flag is one line that says what is wrong and points at --help (exit 2),
// not a page of usage.
func (c *cli) parseFlags(fs *flag.FlagSet, h cmdHelp, args []string) (code int, done bool) {
	err := fs.Parse(args)
	if err == nil {
		err = c.resolvePathFlags(fs)
	}
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, flag.ErrHelp):
		c.printHelp(fs, h)
		return exitOK, true
	}
	return c.usageError(h, "%v", err), true
}

// usageError prints a one-line usage mistake of command h and returns 2.
func (c *cli) usageError(h cmdHelp, format string, a ...any) int {
	return c.fail(exitUsage, "%s: %s (see talaria %s --help)", h.name, fmt.Sprintf(format, a...), h.name)
}

// printHelp prints h with fs's flags on stdout.
func (c *cli) printHelp(fs *flag.FlagSet, h cmdHelp) {
	w := c.stdout
	fmt.Fprintf(w, "Usage: talaria %s %s\n\n%s\n", h.name, h.usage, strings.TrimSpace(h.about))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if fs != nil && n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range h.examples {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

// subcommandHead is how a command with subcommands starts: --help prints
// h, and no subcommand at all is a usage error naming them (want). done
// reports that the command stops with code.
func (c *cli) subcommandHead(args []string, h cmdHelp, want string) (code int, done bool) {
	if wantsHelp(args) {
		c.printHelp(h.flags(), h)
		return exitOK, true
	}
	if len(args) == 0 {
		return c.usageError(h, "needs a command: %s", want), true
	}
	return exitOK, false
}

// subcommand resolves sub (or its alias) to one of parent's subcommands
// and returns its help. An unknown one is a usage error of parent: done
// reports that the command stops with code.
func (c *cli) subcommand(parent cmdHelp, subs map[string]cmdHelp, aliases map[string]string, sub string) (_ string, h cmdHelp, code int, done bool) {
	if a, ok := aliases[sub]; ok {
		sub = a
	}
	h, ok := subs[sub]
	if !ok {
		return sub, h, c.usageError(parent, "unknown %s command %q", parent.name, sub), true
	}
	return sub, h, exitOK, false
}

// wantsHelp reports whether args ask for help before any subcommand.
func wantsHelp(args []string) bool {
	return len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help")
}

// pathFlags are the flags that name a file or directory; every one follows
// the shell's rule (config.ResolveUserPath): ~ and $VAR expanded, a
// relative path resolved against the current directory. A database flag
// may also be a URL: a sqlite:// one has its path resolved, others pass.
var pathFlags = []string{"database", "workspace", "from", "tls-cert", "tls-key", "body-file"}

// resolvePathFlags applies that rule to the path flags the user set.
func (c *cli) resolvePathFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err != nil || !slices.Contains(pathFlags, f.Name) {
			return
		}
		v, what := f.Value.String(), "--"+f.Name
		var p string
		var e error
		switch {
		case strings.HasPrefix(v, "sqlite://"):
			p, e = config.ResolveDatabaseURL(what, v, c.getenv)
		case strings.Contains(v, "://"):
			return
		default:
			p, e = config.ResolveUserPath(what, v, c.getenv)
		}
		if e == nil {
			e = f.Value.Set(p)
		}
		err = e
	})
	return err
}
