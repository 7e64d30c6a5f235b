package program

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/kinds"
)

// writeHost takes files.write and counts what it was sent.
type writeHost struct{ sent int64 }

func (h *writeHost) Name() string { return "h" }

func (h *writeHost) Send(_ context.Context, r *rpc.Request) error {
	p, res, ok := rpc.Match(r, rpc.FilesWrite)
	if !ok {
		return &proto.Error{Code: "bad_request", Message: "unexpected " + r.Method()}
	}
	h.sent += int64(len(p.Data))
	*res = proto.FileWritten{}
	return nil
}

// TestUploadSourceChanged: a program's source that changed between the
// lab's load and the upload (a file swapped for a FIFO, or one that keeps
// growing) fails the upload at once, naming the file: before, the FIFO
// held the run for good in open(2), and a growing file was read and sent
// without end.
func TestUploadSourceChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
		want string
	}{
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, "not a regular file"},
		{"grown", func(t *testing.T, p string) {
			if err := os.WriteFile(p, make([]byte, 3*chunk), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "changed since the lab was loaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.make(t, filepath.Join(dir, "main.c"))
			src := &kinds.Source{Name: "p", Dir: dir, Files: []kinds.SourceFile{{Path: "main.c", Size: 10, Mode: 0o644}}}
			h := &writeHost{}
			done := make(chan error, 1)
			go func() { done <- upload(context.Background(), h, src, "programs/p") }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "main.c") || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("upload: %v, want an error naming main.c: %s", err, tc.want)
				}
				if h.sent > 11 {
					t.Errorf("sent %d bytes of a file the lab saw with 10", h.sent)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("upload hangs on the changed source")
			}
		})
	}
}
