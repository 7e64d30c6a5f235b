package vm

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleBounded: what a guest writes to its serial port is kept up to
// twice the cap, the newest output in console.log and the one before in
// console.log.earlier (SECURITY 150; qemu's -serial file: kept it all).
func TestConsoleBounded(t *testing.T) {
	for _, tc := range []struct {
		name        string
		total, cap  int
		wantEarlier bool
	}{
		{"under the cap", 900, 1000, false},
		{"at the cap", 1000, 1000, false},
		{"past it once", 1500, 1000, true},
		{"far past it", 1 << 20, 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "console.log")
			in := bytes.Repeat([]byte("0123456789abcdef\n"), tc.total/17+1)[:tc.total]
			if err := copyBounded(&chunked{in, 333}, path, int64(tc.cap)); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			earlier, eerr := os.ReadFile(consoleEarlier(path))
			if (eerr == nil) != tc.wantEarlier {
				t.Fatalf("console.log.earlier there: %v, want %v", eerr == nil, tc.wantEarlier)
			}
			if len(got) > tc.cap || len(earlier) > tc.cap {
				t.Errorf("kept %d + %d bytes, cap %d each", len(got), len(earlier), tc.cap)
			}
			if !bytes.HasSuffix(in, got) || len(got) == 0 {
				t.Errorf("console.log (%d bytes) is not the newest output", len(got))
			}
			if tc.wantEarlier && !bytes.HasSuffix(in[:len(in)-len(got)], earlier) {
				t.Errorf("console.log.earlier is not the output just before console.log's")
			}
			if !tc.wantEarlier && len(got) != tc.total {
				t.Errorf("kept %d of %d bytes under the cap", len(got), tc.total)
			}
		})
	}
}

// TestCopyConsoleFromSocket: the copier reads qemu's serial socket (here a
// listener standing in for qemu) until it is closed.
func TestCopyConsoleFromSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "console.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(strings.Repeat("Linux version 6.1\n", 100)))
		c.Close()
	}()
	path := filepath.Join(dir, "console.log")
	if err := copyConsole(sock, path, 1<<20, make(chan struct{})); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if got := strings.Count(string(b), "Linux version"); got != 100 {
		t.Errorf("console.log holds %d lines, want 100", got)
	}
	if args := strings.Join(consoleArgs(sock), " "); strings.Contains(args, "file:") || !strings.Contains(args, "path="+sock) {
		t.Errorf("qemu's serial arguments %q: want the socket, no file", args)
	}
}

// chunked reads b n bytes at a time, as a socket hands them over.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}
