package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopOnStdinEOFVariable tells the program that its standard input closing is the request to
// stop (winfleet-agent watches it only then, so an interactive run is not affected).
const stopOnStdinEOFVariable = "WINFLEET_STOP_ON_STDIN_EOF"

// Win32 errors the shim reports for itself (its program's own exit codes are reported as
// service-specific codes, so the two never mix).
const (
	errorFileNotFound     = 2    // ERROR_FILE_NOT_FOUND: the program does not exist
	errorInvalidParameter = 87   // ERROR_INVALID_PARAMETER: the command line is wrong
	errorProcessAborted   = 1067 // ERROR_PROCESS_ABORTED: the program was killed or died abnormally
)

// exitStatus is how the service ends, as the SCM records it: a Win32 error, or (serviceSpecific)
// the program's own non-zero exit code, which SCM recovery (sc failureflag 1) counts as a failure.
type exitStatus struct {
	serviceSpecific bool
	code            uint32
}

// statusOf maps how the program ended to the service's exit status: 0 is success, another
// exit code is passed on as a service-specific code, and a program that did not exit by itself
// (killed, or ended by a signal on Linux) is ERROR_PROCESS_ABORTED.
func statusOf(state *os.ProcessState, killed bool) exitStatus {
	if killed || state == nil || state.ExitCode() < 0 {
		return exitStatus{code: errorProcessAborted}
	}
	if state.ExitCode() == 0 {
		return exitStatus{}
	}
	return exitStatus{serviceSpecific: true, code: uint32(state.ExitCode())}
}

// startErrorStatus is the exit status when the program could not be started.
func startErrorStatus(err error) exitStatus {
	if errors.Is(err, fs.ErrNotExist) {
		return exitStatus{code: errorFileNotFound}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno != 0 {
		return exitStatus{code: uint32(errno)} // a Win32 error on Windows
	}
	return exitStatus{code: errorProcessAborted}
}

// reporter is told what the SCM must hear: the Windows service handler turns each call into a
// SERVICE_STATUS; a console run ignores them.
type reporter interface {
	running()
	stopPending(checkpoint uint32, waitHint time.Duration)
}

// supervisor runs the program as a child and stops it when asked.
type supervisor struct {
	opts options
	// asService: the shim runs under the SCM (the child then gets no console of its own).
	asService bool
	// While stopping, the SCM hears a new checkpoint this often, with this wait hint.
	checkpointInterval time.Duration
	stopWaitHint       time.Duration
	// Bounds Wait when the program exits but something it started keeps its output open.
	pipeWaitDelay time.Duration
	// Log rotation.
	logMaxBytes int64
	logKeep     int
}

func newSupervisor(opts options, asService bool) *supervisor {
	return &supervisor{
		opts:               opts,
		asService:          asService,
		checkpointInterval: time.Second,
		stopWaitHint:       3 * time.Second,
		pipeWaitDelay:      5 * time.Second,
		logMaxBytes:        logMaxBytes,
		logKeep:            logKeptFiles,
	}
}

// programEnv is the shim's environment for the program, with stopOnStdinEOFVariable set to 1
// (whatever the shim itself was given).
func programEnv(environ []string) []string {
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return strings.EqualFold(name, stopOnStdinEOFVariable)
	})
	return append(env, stopOnStdinEOFVariable+"=1")
}

// run starts the program with its output in the log, reports running, and waits for the program
// to exit or for stop to close. Asked to stop, it closes the program's standard input, reports
// STOP_PENDING with a new checkpoint every checkpointInterval, and kills the program if it has
// not exited after the stop timeout. It returns the service's exit status.
func (s *supervisor) run(stop <-chan struct{}, report reporter) exitStatus {
	if err := os.MkdirAll(s.opts.logDir, 0o700); err != nil {
		os.Stderr.WriteString("winfleet-service: cannot create --log-dir: " + err.Error() + "\n")
		return startErrorStatus(err)
	}
	file, err := openRotatingFile(filepath.Join(s.opts.logDir, logFileName), s.logMaxBytes, s.logKeep)
	if err != nil {
		os.Stderr.WriteString("winfleet-service: cannot open the log file: " + err.Error() + "\n")
		return startErrorStatus(err)
	}
	defer file.Close()
	log := shimLogger{newStampedLines(file)}
	output := newStampedLines(file)
	defer output.Flush()

	cmd := exec.Command(s.opts.program, s.opts.programArgs...)
	cmd.Env = programEnv(os.Environ())
	cmd.Stdout, cmd.Stderr = output, output // one writer: one pipe, lines never interleave
	cmd.WaitDelay = s.pipeWaitDelay
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.printf("cannot make the standard input pipe of %s: %v", s.opts.program, err)
		return startErrorStatus(err)
	}
	prepareChild(cmd, s.asService)
	if err := cmd.Start(); err != nil {
		log.printf("cannot start %s: %v", s.opts.program, err)
		return startErrorStatus(err)
	}
	if err := tieToShim(cmd.Process); err != nil {
		log.printf("warning: %s (pid %d) may outlive this service if it is killed: %v", s.opts.program, cmd.Process.Pid, err)
	}
	log.printf("started %s %s (pid %d)", s.opts.program, strings.Join(s.opts.programArgs, " "), cmd.Process.Pid)
	report.running()

	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
		status := statusOf(cmd.ProcessState, false)
		log.printf("%s exited by itself with code %d; the service stops with %s", s.opts.program, cmd.ProcessState.ExitCode(), status)
		return status
	case <-stop:
	}

	log.printf("stop requested: closed the standard input of %s; waiting up to %s for it to exit", s.opts.program, s.opts.stopTimeout)
	stdin.Close()
	checkpoint := uint32(1)
	report.stopPending(checkpoint, s.stopWaitHint)
	ticker := time.NewTicker(s.checkpointInterval)
	defer ticker.Stop()
	deadline := time.NewTimer(s.opts.stopTimeout)
	defer deadline.Stop()
	for {
		select {
		case <-exited:
			status := statusOf(cmd.ProcessState, false)
			log.printf("%s stopped with code %d", s.opts.program, cmd.ProcessState.ExitCode())
			return status
		case <-ticker.C:
			checkpoint++
			report.stopPending(checkpoint, s.stopWaitHint)
		case <-deadline.C:
			log.printf("%s did not stop within %s: killing it", s.opts.program, s.opts.stopTimeout)
			cmd.Process.Kill()
			<-exited // bounded: the process is gone, and Wait gives up on its pipes after WaitDelay
			return statusOf(cmd.ProcessState, true)
		}
	}
}

func (s exitStatus) String() string {
	switch {
	case s.code == 0:
		return "success"
	case s.serviceSpecific:
		return "service-specific error " + strconv.FormatUint(uint64(s.code), 10)
	default:
		return "Win32 error " + strconv.FormatUint(uint64(s.code), 10)
	}
}
