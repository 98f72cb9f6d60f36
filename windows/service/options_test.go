package main

import (
	"path/filepath"
	"reflect"
	"regexp"
	"testing"
	"time"
)

func TestParseArgsAcceptsTheServiceCommandLine(t *testing.T) {
	logDir, program := abs(t, "logs"), abs(t, "winfleet-agent.exe")
	got, err := parseArgs([]string{"--log-dir", logDir, "--", program, "run"})
	if err != nil {
		t.Fatal(err)
	}
	want := options{logDir: logDir, stopTimeout: defaultStopTimeout, program: program, programArgs: []string{"run"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	// Flags in any order; everything after "--" is the program's, flags included.
	got, err = parseArgs([]string{"--stop-timeout", "90s", "--log-dir", logDir, "--", program, "--log-dir", "--", ""})
	if err != nil {
		t.Fatal(err)
	}
	want = options{logDir: logDir, stopTimeout: 90 * time.Second, program: program, programArgs: []string{"--log-dir", "--", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestParseArgsRefusesWhatItDoesNotExpect(t *testing.T) {
	logDir, program := abs(t, "logs"), abs(t, "agent.exe")
	cases := []struct {
		args []string
		want string
	}{
		{nil, `^missing "--" and the program to run; usage: winfleet-service --log-dir`},
		{[]string{"--log-dir", logDir}, `^missing "--" and the program to run`},
		{[]string{"--log-dir", logDir, "--"}, `^missing the program to run after "--"`},
		{[]string{"--", program}, `^--log-dir is missing: name the directory for the log file`},
		{[]string{"--log-dir", logDir, "--verbose", "--", program}, `^unknown flag "--verbose": winfleet-service accepts --log-dir and --stop-timeout, each followed by its value, before "--"`},
		{[]string{"--log-dir=" + logDir, "--", program}, `^unknown flag "--log-dir=`},
		{[]string{"-log-dir", logDir, "--", program}, `^unknown flag "-log-dir"`},
		{[]string{program, "run"}, `^unexpected argument ".*agent.exe" before "--": put the program and its arguments after "--"`},
		{[]string{"--log-dir", logDir, "--log-dir", logDir, "--", program}, `^--log-dir is given twice; give it once$`},
		{[]string{"--log-dir", "--", program}, `^--log-dir needs a value after it`},
		{[]string{"--log-dir", "", "--", program}, `^--log-dir needs a value after it`},
		{[]string{"--log-dir"}, `^--log-dir needs a value after it`},
		{[]string{"--log-dir", "logs", "--", program}, `^--log-dir "logs" is not an absolute path; give the full path, with its drive$`},
		{[]string{"--log-dir", logDir, "--", "winfleet-agent.exe", "run"}, `^the program "winfleet-agent.exe" after "--" is not an absolute path`},
		{[]string{"--log-dir", logDir, "--stop-timeout", "30", "--", program}, `^--stop-timeout "30" is not a duration from 1s to 10m0s; give one such as 30s$`},
		{[]string{"--log-dir", logDir, "--stop-timeout", "500ms", "--", program}, `^--stop-timeout "500ms" is not a duration`},
		{[]string{"--log-dir", logDir, "--stop-timeout", "11m", "--", program}, `^--stop-timeout "11m" is not a duration`},
		{[]string{"--log-dir", logDir, "--stop-timeout", "-5s", "--", program}, `^--stop-timeout "-5s" is not a duration`},
	}
	for _, c := range cases {
		_, err := parseArgs(c.args)
		if err == nil {
			t.Errorf("parseArgs(%q) accepted it; want an error matching %s", c.args, c.want)
			continue
		}
		if !regexp.MustCompile(c.want).MatchString(err.Error()) {
			t.Errorf("parseArgs(%q) = %q; want a match for %s", c.args, err, c.want)
		}
	}
}

// abs is an absolute path on the system the tests run on (C:\... on Windows, /... elsewhere).
func abs(t *testing.T, name string) string {
	path, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
