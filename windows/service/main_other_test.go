//go:build !windows

package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The built shim, run as a console program (main_other.go) with the stand-in as its program.

func TestTheShimRefusesABadCommandLineWithExitCode2(t *testing.T) {
	out, err := exec.Command(shim, "--log-dir", t.TempDir(), "--log-level", "debug", "--", standin).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("err %v, want exit code 2", err)
	}
	if want := `winfleet-service: unknown flag "--log-level"`; !strings.HasPrefix(string(out), want) {
		t.Fatalf("output %q does not start with %q", out, want)
	}
}

func TestTheShimExitsWithItsProgramsCode(t *testing.T) {
	err := exec.Command(shim, "--log-dir", t.TempDir(), "--", standin, "--exit", "7").Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("err %v, want exit code 7", err)
	}
}

func TestSigtermStopsTheShimAndItsProgram(t *testing.T) {
	logDir := t.TempDir()
	cmd := exec.Command(shim, "--log-dir", logDir, "--", standin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(logDir, logFileName)
	waitForLog(t, logPath, "standin: started")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the shim ended with %v, want exit code 0", err)
	}
	if log := read(t, logPath); !strings.Contains(log, "standin: standard input closed, exiting") {
		t.Fatalf("the stand-in was not stopped through its standard input:\n%s", log)
	}
}
