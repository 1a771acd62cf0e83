package sandbox

import (
	"strings"
)

// readOnlyPrograms are the commands that only read, with the arguments
// that would make them write or run something else.
var readOnlyPrograms = map[string][]string{
	"ls": nil, "cat": nil, "wc": nil, "head": nil, "tail": nil, "pwd": nil,
	"echo": nil, "file": nil, "stat": nil, "du": nil, "df": nil, "tree": nil,
	"which": nil, "basename": nil, "dirname": nil, "realpath": nil, "uniq": nil,
	"grep": nil, "egrep": nil, "fgrep": nil, "diff": nil, "cut": nil, "tr": nil,
	"sort": {"-o", "--output", "--compress-program"},
	"rg":   {"--pre", "--search-zip", "-z"},
	"find": {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"},
}

// readOnlyGit are the git subcommands that only read.
var readOnlyGit = map[string]bool{"status": true, "diff": true, "log": true, "show": true, "blame": true, "ls-files": true}

// ReadOnlyCommands lists the programs ReadOnlyCommand accepts (for docs).
func ReadOnlyCommands() []string {
	out := []string{"git status|diff|log|show|blame|ls-files"}
	for p := range readOnlyPrograms {
		out = append(out, p)
	}
	return out
}

// ReadOnlyCommand reports whether a shell command line only reads: one
// command, or a pipeline of them, each a program from the read-only list
// with plain arguments. It parses the line rather than matching a prefix:
// anything else the shell would interpret — ;, &&, ||, &, redirections,
// $(…), backticks, $VARS, subshells, braces, newlines, assignments — makes
// it not read-only ("ls; rm -rf x" is not "ls").
func ReadOnlyCommand(line string) bool {
	stages, ok := splitPipeline(line)
	if !ok || len(stages) == 0 {
		return false
	}
	for _, words := range stages {
		if !readOnlyStage(words) {
			return false
		}
	}
	return true
}

func readOnlyStage(words []string) bool {
	if len(words) == 0 {
		return false
	}
	prog, args := words[0], words[1:]
	if prog == "git" {
		if len(args) == 0 || !readOnlyGit[args[0]] {
			return false
		}
		for _, a := range args[1:] {
			// --output writes a file; --ext-diff and textconv run programs.
			if strings.HasPrefix(a, "--output") || strings.HasPrefix(a, "--ext-diff") || strings.HasPrefix(a, "--textconv") {
				return false
			}
		}
		return true
	}
	bad, ok := readOnlyPrograms[prog]
	if !ok {
		return false
	}
	for _, a := range args {
		for _, b := range bad {
			if a == b || strings.HasPrefix(a, b+"=") || (strings.HasPrefix(b, "-") && !strings.HasPrefix(b, "--") && len(b) == 2 && strings.HasPrefix(a, b)) {
				return false
			}
		}
	}
	return true
}

// splitPipeline splits line into pipeline stages of words, honouring single
// and double quotes; ok is false for any shell syntax other than plain
// words and single | between commands.
func splitPipeline(line string) (stages [][]string, ok bool) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			s := line[i+1 : i+1+j]
			if strings.ContainsAny(s, "$`\\!") {
				return nil, false
			}
			cur.WriteString(s)
			inWord, i = true, i+1+j
		case c == ' ' || c == '\t':
			flush()
		case c == '|':
			flush()
			if len(words) == 0 || (i+1 < len(line) && line[i+1] == '|') {
				return nil, false
			}
			stages, words = append(stages, words), nil
		case strings.IndexByte(";&<>$`(){}\\\n\r#!~=", c) >= 0:
			// '=' refuses VAR=value prefixes and options with values
			// alike; a read-only line rarely needs one.
			return nil, false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	if len(words) == 0 {
		return nil, false
	}
	return append(stages, words), true
}

// Denial names what the sandbox denied when a failed command's output
// shows the errors it causes, or "".
func Denial(output string) string {
	switch {
	case strings.Contains(output, "refused by the sandbox"), strings.Contains(output, "CONNECT tunnel failed, response 403"),
		strings.Contains(output, "Received HTTP code 403 from proxy"):
		return "the host is not in the sandbox's network list (sandbox.network)"
	case strings.Contains(output, "Read-only file system"):
		return "writing outside the workspace (or anywhere, in read-only mode) is not allowed"
	case strings.Contains(output, "Network is unreachable"), strings.Contains(output, "Could not resolve host"),
		strings.Contains(output, "Temporary failure in name resolution"), strings.Contains(output, "Couldn't connect to server"),
		strings.Contains(output, "Connection refused") && strings.Contains(output, "127.0.0.1"):
		return "the network is off"
	}
	return ""
}
