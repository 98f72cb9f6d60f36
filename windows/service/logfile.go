package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"
)

// The log: <log dir>\winfleet-agent.log, rotated at 10 MiB, with the 5 files before it kept as
// winfleet-agent.log.1 (newest) to winfleet-agent.log.5, so it never takes more than 60 MiB.
const (
	logFileName   = "winfleet-agent.log"
	logMaxBytes   = 10 << 20
	logKeptFiles  = 5
	timeLayout    = "2006-01-02T15:04:05.000000Z "
	maxLineLength = 64 << 10
)

// rotatingFile appends to one file; when a write would take it past maxBytes, the file becomes
// path.1 (path.1 becomes path.2 and so on; the one past keep is deleted) and a new one starts.
// Rotation is synchronous and names are fixed, so what is kept is exact. Safe for concurrent
// writers; one process only (the service).
//
// Rotation is best effort: if a rename fails (on Windows, another program holds the file open
// without sharing delete), writing goes on in the same file rather than losing lines.
type rotatingFile struct {
	mu       sync.Mutex
	path     string
	maxBytes int64
	keep     int
	file     *os.File
	size     int64
}

func openRotatingFile(path string, maxBytes int64, keep int) (*rotatingFile, error) {
	r := &rotatingFile{path: path, maxBytes: maxBytes, keep: keep}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	file, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return err
	}
	r.file, r.size = file, info.Size()
	return nil
}

func (r *rotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil || (r.size > 0 && r.size+int64(len(p)) > r.maxBytes) {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.file.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingFile) rotate() error {
	if r.file != nil {
		r.file.Close()
		r.file = nil
		numbered := func(i int) string { return fmt.Sprintf("%s.%d", r.path, i) }
		if err := os.Remove(numbered(r.keep)); err == nil || errors.Is(err, fs.ErrNotExist) {
			for i := r.keep - 1; i >= 1; i-- {
				os.Rename(numbered(i), numbered(i+1)) // a missing one is a gap, not an error
			}
			if r.keep > 0 {
				os.Rename(r.path, numbered(1))
			} else {
				os.Remove(r.path)
			}
		}
	}
	return r.open()
}

func (r *rotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}

// stampedLines writes each complete line it is given to w with a UTC timestamp in front, as
// the shim's own lines have, so the agent's output reads in time order beside them. A partial
// line waits for its end (or is written as it is once it reaches maxLineLength).
type stampedLines struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	partial []byte
}

func newStampedLines(w io.Writer) *stampedLines {
	return &stampedLines{w: w, now: time.Now}
}

func (s *stampedLines) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partial = append(s.partial, p...)
	for {
		end := bytes.IndexByte(s.partial, '\n')
		if end < 0 && len(s.partial) < maxLineLength {
			break
		}
		line := s.partial
		if end >= 0 {
			line = s.partial[:end+1]
		} else {
			line = append(line, '\n')
		}
		if err := s.writeLine(line); err != nil {
			return 0, err
		}
		s.partial = s.partial[min(len(line), len(s.partial)):]
	}
	s.partial = append([]byte(nil), s.partial...) // do not keep the consumed bytes alive
	return len(p), nil
}

// Flush writes a last line that has no newline (the program's output ended mid-line).
func (s *stampedLines) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.partial) == 0 {
		return nil
	}
	line := append(s.partial, '\n')
	s.partial = nil
	return s.writeLine(line)
}

func (s *stampedLines) writeLine(line []byte) error {
	_, err := s.w.Write(append([]byte(s.now().UTC().Format(timeLayout)), line...))
	return err
}

// shimLogger writes the shim's own lines: timestamped, marked "winfleet-service:".
type shimLogger struct{ lines *stampedLines }

func (l shimLogger) printf(format string, args ...any) {
	l.lines.Write([]byte("winfleet-service: " + fmt.Sprintf(format, args...) + "\n"))
}
