package vm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
)

// fakeQMP answers QMP on sock: query-status with status (an error for
// "ERROR"), the rest with {}.
// It records the commands it was sent.
func fakeQMP(t *testing.T, sock, status string) <-chan string {
	t.Helper()
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	cmds := make(chan string, 16)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.WriteString(c, `{"QMP": {"version": {}, "capabilities": []}}`+"\n")
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var req struct {
				Execute string `json:"execute"`
			}
			_ = json.Unmarshal(line, &req)
			cmds <- req.Execute
			ret := `{}`
			if req.Execute == "query-status" {
				if status == "ERROR" {
					_, _ = io.WriteString(c, `{"error": {"class": "GenericError", "desc": "busy"}}`+"\n")
					continue
				}
				ret = `{"status": "` + status + `", "running": false}`
			}
			_, _ = io.WriteString(c, `{"return": `+ret+`}`+"\n")
		}
	}()
	return cmds
}

// TestResume: a restored VM's qemu that has read its state is let run
// (cont); one whose state QEMU refused, or whose qemu exited, loses the
// snapshot when it is booted instead; one whose monitor does not answer
// keeps it (bootWave asks keepSnapshot).
func TestResume(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name    string
		status  string
		exited  bool
		ok      bool
		keep    bool
		lastCmd string
	}{
		{name: "read, paused", status: "paused", ok: true, lastCmd: "cont"},
		{name: "already running", status: "running", ok: true, lastCmd: "query-status"},
		{name: "state refused", status: "internal-error", keep: false},
		{name: "qemu exited while reading", status: "inmigrate", exited: true, keep: false},
		{name: "monitor errs", status: "ERROR", keep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "qmp.sock")
			cmds := fakeQMP(t, sock, tc.status)
			v := &VM{Machine: Machine{Name: "server"}, dir: dir, exited: make(chan struct{}), snap: &snapshot{Dir: dir}}
			v.state.QMP = sock
			if tc.exited {
				close(v.exited)
			}
			s := &Set{opts: Options{Logger: quiet, Progress: func(string, string) {}}}
			err := s.resume(context.Background(), v)
			if (err == nil) != tc.ok {
				t.Fatalf("resume: %v, want ok %v", err, tc.ok)
			}
			if tc.ok {
				var last string
				for len(cmds) > 0 {
					last = <-cmds
				}
				if last != tc.lastCmd {
					t.Errorf("last QMP command %q, want %q", last, tc.lastCmd)
				}
				return
			}
			if got := keepSnapshot(errors.Join(errRestoreFailed, err)); got != tc.keep {
				t.Errorf("keepSnapshot(%v) = %v, want %v", err, got, tc.keep)
			}
		})
	}
}
