package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRotatingFileKeepsExactlyTheNewestFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	r, err := openRotatingFile(path, 100, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Ten 40-byte writes, two per file (a third would pass 100 bytes): five files, of which the
	// current one and the two before it are kept.
	for i := range 10 {
		if _, err := fmt.Fprintf(r, "%-39d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := names(t, dir), []string{"x.log", "x.log.1", "x.log.2"}; !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	for name, first := range map[string]int{"x.log": 8, "x.log.1": 6, "x.log.2": 4} {
		data := read(t, filepath.Join(dir, name))
		want := fmt.Sprintf("%-39d\n%-39d\n", first, first+1)
		if data != want {
			t.Errorf("%s holds %q, want %q", name, data, want)
		}
	}
}

func TestRotatingFileAppendsToAnExistingFileAndCountsItsSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("a", 90)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := openRotatingFile(path, 100, 1)
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("12345"))      // 95 bytes: fits
	r.Write([]byte("1234567890")) // would be 105: rotates first
	r.Close()
	if got := read(t, path+".1"); got != strings.Repeat("a", 90)+"12345" {
		t.Errorf("x.log.1 holds %q", got)
	}
	if got := read(t, path); got != "1234567890" {
		t.Errorf("x.log holds %q", got)
	}
}

func TestRotatingFileWithNothingKept(t *testing.T) {
	dir := t.TempDir()
	r, err := openRotatingFile(filepath.Join(dir, "x.log"), 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.Write([]byte("first line"))
	r.Write([]byte("second"))
	r.Close()
	if got := names(t, dir); !slices.Equal(got, []string{"x.log"}) {
		t.Fatalf("files %q", got)
	}
	if got := read(t, filepath.Join(dir, "x.log")); got != "second" {
		t.Errorf("x.log holds %q", got)
	}
}

func TestStampedLinesStampsWholeLines(t *testing.T) {
	var out bytes.Buffer
	s := newStampedLines(&out)
	s.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6000, time.FixedZone("x", 3600)) }
	s.Write([]byte("one\ntw"))
	s.Write([]byte("o\n"))
	s.Write([]byte("three"))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.Flush() // nothing left: writes nothing
	want := "2026-01-02T02:04:05.000006Z one\n" +
		"2026-01-02T02:04:05.000006Z two\n" +
		"2026-01-02T02:04:05.000006Z three\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestStampedLinesWritesALongLineWithoutWaitingForItsEnd(t *testing.T) {
	var out bytes.Buffer
	s := newStampedLines(&out)
	s.Write(bytes.Repeat([]byte("x"), maxLineLength+10))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 || len(lines[0]) != len(timeLayout)+maxLineLength+10 {
		t.Fatalf("got %d lines, the first %d bytes long", len(lines), len(lines[0]))
	}
	if len(s.partial) != 0 {
		t.Fatalf("%d bytes kept back", len(s.partial))
	}
}

func names(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, e := range entries {
		list = append(list, e.Name())
	}
	return list
}

func read(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
