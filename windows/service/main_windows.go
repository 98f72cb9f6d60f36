// winfleet-service.exe runs a program (winfleet-agent.exe run) as a real Windows service. A Node
// single executable never calls the service dispatcher, so the SCM would kill it after 30 s
// (error 1053); this shim calls it at once, starts the program as its child with its output in
// a size-rotated log, turns Stop, Shutdown and PreShutdown into closing the child's standard
// input (the agent's stop request), kills the child if it has not exited after the stop
// timeout, and ends with the child's exit code, so SCM recovery restarts a failed agent.
//
// Only the SCM glue lives here; the supervision is in supervise.go and tested on Linux.
package main

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
)

// The name the dispatcher is given. The SCM ignores it for a service in its own process, so a
// different service name still works.
const serviceName = "winfleet-agent"

const startWaitHint = 10 * time.Second

func main() {
	opts, parseErr := parseArgs(os.Args[1:])
	// The dispatcher first, even when the command line is wrong: the service then stops at once
	// with ERROR_INVALID_PARAMETER instead of hanging until the SCM's 30 s timeout. Outside the
	// SCM it fails at once with ERROR_FAILED_SERVICE_CONTROLLER_CONNECT, which is how a program
	// tells that it runs in a console (more reliable than looking at the parent process, which
	// Wine's services.exe does not pass: its session is not 0).
	err := svc.Run(serviceName, &handler{opts: opts, parseErr: parseErr})
	if err == nil {
		return // the service ran; its exit status went to the SCM
	}
	if !errors.Is(err, windows.ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
		fmt.Fprintf(os.Stderr, "winfleet-service: the service dispatcher failed: %v\n", err)
		os.Exit(1)
	}
	if parseErr != nil {
		fmt.Fprintf(os.Stderr, "winfleet-service: %v\n", parseErr)
		os.Exit(2)
	}
	os.Exit(int(runConsole(opts).code))
}

type handler struct {
	opts     options
	parseErr error
}

func (h *handler) Execute(_ []string, requests <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending, WaitHint: uint32(startWaitHint.Milliseconds())}
	if h.parseErr != nil {
		return false, errorInvalidParameter
	}
	stop := make(chan struct{})
	go forwardControls(requests, changes, stop)
	status := newSupervisor(h.opts, true).run(stop, scmReporter{changes})
	return status.serviceSpecific, status.code
}

// forwardControls answers Interrogate and turns the first Stop, Shutdown or PreShutdown into
// closing stop. It reads every request, so the SCM's control handler never blocks.
func forwardControls(requests <-chan svc.ChangeRequest, changes chan<- svc.Status, stop chan struct{}) {
	var once sync.Once
	for request := range requests {
		switch request.Cmd {
		case svc.Interrogate:
			changes <- request.CurrentStatus
		case svc.Stop, svc.Shutdown, svc.PreShutdown:
			once.Do(func() { close(stop) })
		}
	}
}

type scmReporter struct{ changes chan<- svc.Status }

func (r scmReporter) running() {
	r.changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown | svc.AcceptPreShutdown}
}

func (r scmReporter) stopPending(checkpoint uint32, waitHint time.Duration) {
	r.changes <- svc.Status{State: svc.StopPending, CheckPoint: checkpoint, WaitHint: uint32(waitHint.Milliseconds())}
}
