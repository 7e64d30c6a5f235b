package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !regexp.MustCompile(`^rlab-agent \S+ proto 1 sha256 [0-9a-f]{64}\n$`).MatchString(out.String()) {
		t.Errorf("version printed %q", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"bogus"}, {"serve"}, {"serve", "--run-id", "../x"}, {"serve", "--run-id", "a", "extra"},
		{"serve", "--run-id", "a", "--owner", "root"}} {
		var out, errb bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %q)", args, code, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", args, out.String())
		}
	}
}

// TestServe runs the serve command on pipes: hello first, a ping, and a
// clean exit when stdin closes.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--run-id", "r1", "--work-dir", dir}, inR, outW, &errb)
		outW.Close()
	}()
	br := bufio.NewReader(outR)
	line, err := br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var h proto.Hello
	if err := json.Unmarshal(line, &h); err != nil || h.Magic != proto.Magic || h.WorkDir != dir {
		t.Fatalf("hello %q: %v", line, err)
	}
	io.WriteString(inW, `{"id":1,"method":"ping"}`+"\n")
	line, err = br.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var resp proto.Response
	if err := json.Unmarshal(line, &resp); err != nil || resp.ID != 1 || resp.Error != nil {
		t.Fatalf("ping reply %q: %v", line, err)
	}
	inW.Close()
	if c := <-code; c != 0 {
		t.Errorf("serve exit %d: %s", c, errb.String())
	}
	if !strings.Contains(errb.String(), "msg=serving") {
		t.Errorf("no log on stderr: %q", errb.String())
	}
}
