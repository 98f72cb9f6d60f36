// standin stands in for winfleet-agent.exe in the shim's tests (Go tests on Linux, and the
// Windows build under Wine, where Node 24 does not start): it follows the agent's contract
// with winfleet-service, exiting when its standard input closes only if
// WINFLEET_STOP_ON_STDIN_EOF is 1.
//
//	standin [run]           run until the standard input closes (if told to watch it)
//	standin --exit <code>   exit at once with that code
//	standin --ignore-stdin  run until killed
package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

func main() {
	watch := os.Getenv("WINFLEET_STOP_ON_STDIN_EOF") == "1"
	fmt.Printf("standin: started with %q, WINFLEET_STOP_ON_STDIN_EOF=%q\n", os.Args[1:], os.Getenv("WINFLEET_STOP_ON_STDIN_EOF"))
	switch {
	case len(os.Args) == 3 && os.Args[1] == "--exit":
		code, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "standin: --exit %q is not a number\n", os.Args[2])
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "standin: exiting with %d\n", code)
		os.Exit(code)
	case len(os.Args) == 2 && os.Args[1] == "--ignore-stdin":
		watch = false
	case len(os.Args) == 2 && os.Args[1] == "run", len(os.Args) == 1:
	default:
		fmt.Fprintf(os.Stderr, "standin: unknown arguments %q; use run, --exit <code> or --ignore-stdin\n", os.Args[1:])
		os.Exit(2)
	}
	if !watch {
		for {
			time.Sleep(time.Hour) // until killed
		}
	}
	io.Copy(io.Discard, os.Stdin)
	fmt.Println("standin: standard input closed, exiting")
}
