package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Built once by TestMain: the stand-in program (internal/standin) and, where main_other.go
// applies, the shim itself.
var standin, shim string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "winfleet-service-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	standin, shim = filepath.Join(dir, "standin"+exe), filepath.Join(dir, "winfleet-service"+exe)
	for target, pkg := range map[string]string{standin: "./internal/standin", shim: "."} {
		if out, err := exec.Command("go", "build", "-o", target, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// recorder is a reporter that keeps what it was told.
type recorder struct {
	mu          sync.Mutex
	ran         int
	checkpoints []uint32
	hints       []time.Duration
}

func (r *recorder) running() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran++
}

func (r *recorder) stopPending(checkpoint uint32, hint time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checkpoints = append(r.checkpoints, checkpoint)
	r.hints = append(r.hints, hint)
}

func testSupervisor(t *testing.T, args ...string) (*supervisor, string) {
	logDir := filepath.Join(t.TempDir(), "logs") // created by the supervisor
	s := newSupervisor(options{logDir: logDir, stopTimeout: 20 * time.Second, program: standin, programArgs: args}, false)
	s.checkpointInterval = 20 * time.Millisecond
	return s, filepath.Join(logDir, logFileName)
}

func TestAProgramThatExitsByItselfEndsTheServiceWithItsCode(t *testing.T) {
	s, logPath := testSupervisor(t, "--exit", "3")
	report := &recorder{}
	status := s.run(make(chan struct{}), report)
	if status != (exitStatus{serviceSpecific: true, code: 3}) {
		t.Fatalf("status %+v, want service-specific 3 (what SCM recovery restarts)", status)
	}
	if report.ran != 1 || len(report.checkpoints) != 0 {
		t.Fatalf("reported running %d times and %d stop checkpoints", report.ran, len(report.checkpoints))
	}
	log := read(t, logPath)
	for _, want := range []string{
		`(?m)^\S+Z winfleet-service: started .*standin --exit 3 \(pid \d+\)$`,
		`(?m)^\S+Z standin: started with \["--exit" "3"\], WINFLEET_STOP_ON_STDIN_EOF="1"$`,
		`(?m)^\S+Z standin: exiting with 3$`,
		`(?m)^\S+Z winfleet-service: .*standin exited by itself with code 3; the service stops with service-specific error 3$`,
	} {
		if !regexp.MustCompile(want).MatchString(log) {
			t.Errorf("the log has no line matching %s:\n%s", want, log)
		}
	}
}

func TestAProgramThatExitsWithZeroEndsTheServiceWithSuccess(t *testing.T) {
	s, _ := testSupervisor(t, "--exit", "0")
	if status := s.run(make(chan struct{}), &recorder{}); status != (exitStatus{}) {
		t.Fatalf("status %+v, want success", status)
	}
}

func TestStopClosesTheProgramsStandardInputAndWaitsForIt(t *testing.T) {
	s, logPath := testSupervisor(t)
	report := &recorder{}
	stop := make(chan struct{})
	done := make(chan exitStatus)
	go func() { done <- s.run(stop, report) }()
	waitForLog(t, logPath, "standin: started")
	close(stop)
	if status := <-done; status != (exitStatus{}) {
		t.Fatalf("status %+v, want success", status)
	}
	log := read(t, logPath)
	for _, want := range []string{
		"winfleet-service: stop requested: closed the standard input of " + standin + "; waiting up to 20s for it to exit",
		"standin: standard input closed, exiting",
		"winfleet-service: " + standin + " stopped with code 0",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the log has no %q:\n%s", want, log)
		}
	}
	if len(report.checkpoints) == 0 || report.checkpoints[0] != 1 || report.hints[0] != s.stopWaitHint {
		t.Fatalf("stop checkpoints %v with hints %v; want them to start at 1 with hint %s", report.checkpoints, report.hints, s.stopWaitHint)
	}
}

func TestAProgramThatIgnoresTheStopIsKilledAfterTheTimeout(t *testing.T) {
	s, logPath := testSupervisor(t, "--ignore-stdin")
	s.opts.stopTimeout = 300 * time.Millisecond
	report := &recorder{}
	stop := make(chan struct{})
	done := make(chan exitStatus)
	go func() { done <- s.run(stop, report) }()
	waitForLog(t, logPath, "standin: started")
	close(stop)
	if status := <-done; status != (exitStatus{code: errorProcessAborted}) {
		t.Fatalf("status %+v, want Win32 error 1067 (the process was killed)", status)
	}
	if !strings.Contains(read(t, logPath), "did not stop within 300ms: killing it") {
		t.Fatalf("the log does not say the program was killed:\n%s", read(t, logPath))
	}
	// Checkpoints count up by one, so the SCM sees progress while it waits.
	for i, checkpoint := range report.checkpoints {
		if checkpoint != uint32(i+1) {
			t.Fatalf("checkpoints %v do not count up from 1", report.checkpoints)
		}
	}
}

func TestAMissingProgramEndsTheServiceWithFileNotFound(t *testing.T) {
	s, logPath := testSupervisor(t)
	s.opts.program = filepath.Join(t.TempDir(), "missing.exe")
	report := &recorder{}
	if status := s.run(make(chan struct{}), report); status != (exitStatus{code: errorFileNotFound}) {
		t.Fatalf("status %+v, want Win32 error 2", status)
	}
	if report.ran != 0 {
		t.Fatal("reported running without a program")
	}
	if !strings.Contains(read(t, logPath), "winfleet-service: cannot start "+s.opts.program) {
		t.Fatalf("the log does not say why:\n%s", read(t, logPath))
	}
}

func TestStartErrorStatus(t *testing.T) {
	for err, want := range map[error]exitStatus{
		fmt.Errorf("start: %w", fs.ErrNotExist):          {code: errorFileNotFound},
		&os.PathError{Op: "open", Err: syscall.Errno(5)}: {code: 5},
		errors.New("something else"):                     {code: errorProcessAborted},
	} {
		if got := startErrorStatus(err); got != want {
			t.Errorf("startErrorStatus(%v) = %+v, want %+v", err, got, want)
		}
	}
}

func TestProgramEnvSetsTheStopVariableWhateverWasInherited(t *testing.T) {
	got := programEnv([]string{"PATH=/bin", "winfleet_stop_on_stdin_eof=0", "WINFLEET_STOP_ON_STDIN_EOF=", "HOME=/root"})
	want := []string{"PATH=/bin", "HOME=/root", "WINFLEET_STOP_ON_STDIN_EOF=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// waitForLog waits (at most 10 s) until the log file holds text.
func waitForLog(t *testing.T, path, text string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), text) {
			return
		}
	}
	data, _ := os.ReadFile(path)
	t.Fatalf("%s does not hold %q after 10 s:\n%s", path, text, data)
}
