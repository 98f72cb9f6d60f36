package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// options is what the command line says: where to log, how long the program may take to stop,
// and the program to supervise with its arguments.
type options struct {
	logDir      string
	stopTimeout time.Duration
	program     string
	programArgs []string
}

const usage = `usage: winfleet-service --log-dir <directory> [--stop-timeout <duration>] -- <program> [arguments...]`

const (
	defaultStopTimeout = 30 * time.Second
	minStopTimeout     = time.Second
	maxStopTimeout     = 10 * time.Minute
)

// parseArgs reads the command line (without the program name). It is strict: each flag once,
// as "--flag value", only the flags it knows, then "--" and an absolute program path; anything
// else is an error that names the problem and the fix.
//
//	winfleet-service --log-dir C:\k\winfleet\logs -- C:\k\winfleet\winfleet-agent.exe run
func parseArgs(args []string) (options, error) {
	opts := options{stopTimeout: defaultStopTimeout}
	seen := map[string]bool{}
	for i := 0; ; i += 2 {
		if i >= len(args) {
			return options{}, fmt.Errorf(`missing "--" and the program to run; %s`, usage)
		}
		flag := args[i]
		if flag == "--" {
			if i+1 >= len(args) {
				return options{}, fmt.Errorf(`missing the program to run after "--"; %s`, usage)
			}
			opts.program, opts.programArgs = args[i+1], args[i+2:]
			break
		}
		if flag != "--log-dir" && flag != "--stop-timeout" {
			if strings.HasPrefix(flag, "-") {
				return options{}, fmt.Errorf(`unknown flag %q: winfleet-service accepts --log-dir and --stop-timeout, each followed by its value, before "--"; %s`, flag, usage)
			}
			return options{}, fmt.Errorf(`unexpected argument %q before "--": put the program and its arguments after "--"; %s`, flag, usage)
		}
		if seen[flag] {
			return options{}, fmt.Errorf("%s is given twice; give it once", flag)
		}
		seen[flag] = true
		if i+1 >= len(args) || args[i+1] == "" || strings.HasPrefix(args[i+1], "--") {
			return options{}, fmt.Errorf("%s needs a value after it; %s", flag, usage)
		}
		value := args[i+1]
		switch flag {
		case "--log-dir":
			opts.logDir = value
		case "--stop-timeout":
			timeout, err := time.ParseDuration(value)
			if err != nil || timeout < minStopTimeout || timeout > maxStopTimeout {
				return options{}, fmt.Errorf("--stop-timeout %q is not a duration from %s to %s; give one such as 30s", value, minStopTimeout, maxStopTimeout)
			}
			opts.stopTimeout = timeout
		}
	}
	if opts.logDir == "" {
		return options{}, fmt.Errorf("--log-dir is missing: name the directory for the log file; %s", usage)
	}
	if !filepath.IsAbs(opts.logDir) {
		return options{}, fmt.Errorf("--log-dir %q is not an absolute path; give the full path, with its drive", opts.logDir)
	}
	if !filepath.IsAbs(opts.program) {
		return options{}, fmt.Errorf(`the program %q after "--" is not an absolute path; give the full path of the executable, with its drive`, opts.program)
	}
	return opts, nil
}
