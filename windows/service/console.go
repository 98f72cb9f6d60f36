package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// quietReporter is the reporter of a console run: there is no SCM to tell.
type quietReporter struct{}

func (quietReporter) running()                          {}
func (quietReporter) stopPending(uint32, time.Duration) {}

// runConsole supervises the program outside the SCM (by hand, or in tests): Ctrl+C or
// SIGTERM asks it to stop, as a service stop would.
func runConsole(opts options) exitStatus {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	stop := make(chan struct{})
	go func() {
		<-signals
		close(stop)
	}()
	return newSupervisor(opts, false).run(stop, quietReporter{})
}
