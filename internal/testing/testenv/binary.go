package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"
)

// Talaria is the import path of the talaria command.
const Talaria = "github.com/talaria-agent/talaria/cmd/talaria"

// MainWithBuild is the TestMain of a package whose tests run a program:
// it builds pkg once into a temporary directory, sets *bin to the
// executable, runs the tests and exits with their code. A failed build
// exits 1 before any test runs.
func MainWithBuild(m *testing.M, pkg string, bin *string) {
	os.Exit(mainWithBuild(m, pkg, bin))
}

func mainWithBuild(m *testing.M, pkg string, bin *string) int {
	dir, err := os.MkdirTemp("", "talaria-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, path.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", *bin, pkg).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
		return 1
	}
	return m.Run()
}
