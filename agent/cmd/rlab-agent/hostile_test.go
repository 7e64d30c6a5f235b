//go:build rlabhostile

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// go test -tags rlabhostile ./agent/cmd/rlab-agent
func TestHostileFromEnv(t *testing.T) {
	t.Setenv("RLAB_AGENT_HOSTILE", "wrong-proto")
	t.Setenv("RLAB_AGENT_HOSTILE_HASH", "claimed")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"serve", "--run-id", "h", "--work-dir", t.TempDir()}, inR, outW, &errb)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var h proto.Hello
	if err := json.Unmarshal(line, &h); err != nil || h.Proto != 999 || h.Hash != "claimed" {
		t.Errorf("hello %q, want proto 999 and the claimed hash", line)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	<-code

	t.Setenv("RLAB_AGENT_HOSTILE", "nonsense")
	if c := run([]string{"serve", "--run-id", "h", "--work-dir", t.TempDir()}, bytes.NewReader(nil), io.Discard, &errb); c != 2 {
		t.Errorf("unknown hostile mode: exit %d, want 2", c)
	}
}
