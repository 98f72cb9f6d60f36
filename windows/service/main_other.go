//go:build !windows

// On other systems winfleet-service runs only as a console program, so that the supervision
// (everything but the SCM handler) can be tested where the tests run.
package main

import (
	"fmt"
	"os"
)

func main() {
	opts, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "winfleet-service: %v\n", err)
		os.Exit(2)
	}
	status := runConsole(opts)
	// A Win32 code does not fit an exit status here; any failure is still non-zero.
	code := int(status.code)
	if code > 255 {
		code = 255
	}
	os.Exit(code)
}
