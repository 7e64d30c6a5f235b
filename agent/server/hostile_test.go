package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// rawAgent runs a hostile agent and returns its stdin and a reader of its
// raw stdout.
func rawAgent(t *testing.T, mode string) (io.WriteCloser, *bufio.Reader, string) {
	t.Helper()
	wd := t.TempDir()
	writeTree(t, wd, map[string]string{"a.log": "alpha"})
	srv, err := New(Options{WorkDir: wd, Hash: "h", hostile: mode})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		srv.Serve(context.Background(), inR, outW)
		outW.Close()
		close(done)
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close() // unblocks an endless writer
		<-done
	})
	return inW, bufio.NewReaderSize(outR, 64<<10), wd
}

func readLine(t *testing.T, r *bufio.Reader) []byte {
	t.Helper()
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		line = append(line, chunk...)
		if !isPrefix || len(line) > proto.MaxLine+100 {
			return line
		}
	}
}

func TestHostileModes(t *testing.T) {
	if validHostile("endless") != nil || validHostile("friendly") == nil {
		t.Error("validHostile accepts the wrong modes")
	}
	for _, mode := range HostileModes {
		t.Run(mode, func(t *testing.T) {
			in, out, _ := rawAgent(t, mode)
			if mode == "silent" {
				io.WriteString(in, `{"id":1,"method":"ping"}`+"\n")
				in.Close()
				if b, _ := io.ReadAll(out); len(b) != 0 {
					t.Errorf("silent agent wrote %q", b)
				}
				return
			}
			first := readLine(t, out)
			if mode == "banner" {
				if !strings.HasPrefix(string(first), "Welcome") {
					t.Errorf("first line %q, want the banner", first)
				}
				readLine(t, out) // "Last login"
				first = readLine(t, out)
			}
			var h proto.Hello
			if err := json.Unmarshal(first, &h); err != nil {
				t.Fatalf("hello %q: %v", first, err)
			}
			wantHello := map[string]bool{
				"bad-magic": h.Magic != proto.Magic, "wrong-proto": h.Proto == 999, "wrong-hash": h.Hash != "h",
			}
			if ok, checked := wantHello[mode]; checked && !ok {
				t.Errorf("hello %+v does not misbehave as %s", h, mode)
			} else if !checked && (h.Magic != proto.Magic || h.Proto != proto.Version || h.Hash != "h") {
				t.Errorf("hello %+v altered in mode %s", h, mode)
			}
			io.WriteString(in, `{"id":1,"method":"files.list"}`+"\n")
			if mode == "mute" {
				io.WriteString(in, `{"id":2,"method":"ping"}`+"\n")
				in.Close()
				if b, _ := io.ReadAll(out); len(b) != 0 {
					t.Errorf("mute agent answered %q", b)
				}
				return
			}
			reply := readLine(t, out)
			var env proto.Envelope
			jsonErr := json.Unmarshal(reply, &env)
			switch mode {
			case "malformed":
				if jsonErr == nil {
					t.Errorf("reply %q is valid JSON", reply)
				}
			case "huge-line":
				if len(reply) <= proto.MaxLine {
					t.Errorf("reply of %d bytes, want more than %d", len(reply), proto.MaxLine)
				}
			case "endless":
				for range 1000 {
					if jsonErr != nil || env.Event != proto.EventLog || env.ID != 1 {
						t.Fatalf("line %q, want endless log events for id 1", reply)
					}
					reply = readLine(t, out)
					env = proto.Envelope{}
					jsonErr = json.Unmarshal(reply, &env)
				}
			case "traversal":
				var list proto.FilesList
				if jsonErr != nil || json.Unmarshal(env.Result, &list) != nil || len(list.Files) != 1 {
					t.Fatalf("reply %q", reply)
				}
				if p := list.Files[0].Path; filepath.IsLocal(p) {
					t.Errorf("path %q stays inside", p)
				}
			default:
				if jsonErr != nil || env.Error != nil || !bytes.Contains(env.Result, []byte("a.log")) {
					t.Errorf("reply %q altered in mode %s", reply, mode)
				}
			}
		})
	}
}
