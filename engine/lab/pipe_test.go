package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVarFilePipe: -var-file <(cmd) keeps working (a pipe, and a FIFO its
// writer opens later, both written slowly), while a FIFO nobody writes, or
// whose writer never writes, is named with the cause once the idle bound
// passes instead of holding rlab for good (issue 24, round 3 lows, item 2).
func TestVarFilePipe(t *testing.T) {
	defer func(d time.Duration) { pipeIdle = d }(pipeIdle)
	pipeIdle = 400 * time.Millisecond
	const vars = "server = \"192.0.2.50\"\n"
	folder := filepath.Join(corpus, "folder")
	tests := []struct {
		name string
		// make returns the path to pass as -var-file, writing it as a
		// command would.
		make func(t *testing.T, dir string) string
		want string // the address read, or "" for a refusal
	}{
		{"pipe as <(cmd) names it", func(t *testing.T, dir string) string {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			go func() { // a command that takes a while, writing in two parts
				time.Sleep(pipeIdle / 2)
				w.WriteString(vars[:5])
				time.Sleep(pipeIdle / 2)
				w.WriteString(vars[5:])
				w.Close()
			}()
			return fmt.Sprintf("/proc/self/fd/%d", r.Fd())
		}, "192.0.2.50"},
		{"FIFO written after a while", func(t *testing.T, dir string) string {
			p := fifo(t, dir)
			go func() {
				time.Sleep(pipeIdle / 2)
				if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
					f.WriteString(vars)
					f.Close()
				}
			}()
			return p
		}, "192.0.2.50"},
		{"FIFO nobody writes", func(t *testing.T, dir string) string { return fifo(t, dir) }, ""},
		{"FIFO whose writer stalls", func(t *testing.T, dir string) string {
			p := fifo(t, dir)
			go func() {
				f, err := os.OpenFile(p, os.O_WRONLY, 0)
				if err == nil {
					t.Cleanup(func() { f.Close() })
				}
			}()
			return p
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.make(t, t.TempDir())
			type res struct {
				addr  string
				diags string
			}
			done := make(chan res, 1)
			go func() {
				l, diags := Load([]string{folder}, LoadOptions{VarFiles: []string{p}})
				done <- res{l.HostByName("server").Address, diagLines(diags)}
			}()
			var got res
			select {
			case got = <-done:
			case <-time.After(20 * pipeIdle):
				t.Fatalf("loading with -var-file %s did not end", p)
			}
			if tt.want != "" {
				if got.addr != tt.want || got.diags != "" {
					t.Fatalf("server = %q, want %q; diagnostics:\n%s", got.addr, tt.want, got.diags)
				}
				return
			}
			if !strings.Contains(got.diags, "Cannot read variable file") || !strings.Contains(got.diags, p) ||
				!strings.Contains(got.diags, "nothing was written to it") {
				t.Errorf("want the stalled -var-file %s named with the cause, got:\n%s", p, got.diags)
			}
		})
	}
}

func fifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "vars.rlabvars")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no mkfifo here:", err)
	}
	return p
}
