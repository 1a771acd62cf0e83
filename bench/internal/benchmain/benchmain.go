// Package benchmain is the command-line frame the bench tools share, so
// each exits alike: 2 with a usage line when a required flag is missing,
// 1 with the error when the work fails, 0 otherwise.
package benchmain

import (
	"flag"
	"fmt"
	"os"
)

// Run parses the command line, checks that every flag named in required
// was given a value, then runs work. It does not return when either fails.
func Run(name, usage string, required []string, work func() error) {
	flag.Parse()
	for _, f := range required {
		if flag.Lookup(f).Value.String() == "" {
			fmt.Fprintf(os.Stderr, "%s: -%s is required\nusage: %s %s\n", name, f, name, usage)
			os.Exit(2)
		}
	}
	if err := work(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
