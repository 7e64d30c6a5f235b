package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// FuzzClientStream: whatever an agent writes after its hello, a call ends
// with its answer or an error (no panic, no hang), and the client ends
// lost once the stream does.
func FuzzClientStream(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":{"time_unix_nano":1}}` + "\n",
		`{"id":1,"event":"log","data":{"msg":"x"}}` + "\n" + `{"id":1,"result":{}}` + "\n",
		`{"id":1,"error":{"code":"internal","message":"boom","command":["a"],"exit_code":3,"stderr":"e"}}` + "\n",
		`{"id": 1, "result": {"unterminated` + "\n",
		`{"id":2,"result":1}` + "\n",
		`{"id":1,"result":"not a pong"}` + "\n",
		"\n\n\n",
		`{"id":0,"error":{"code":"bad_request","message":"x"}}` + "\n",
		"{\"id\":1,\"result\":\"\xff\xfe\"}\n",
		`{"id":1,"result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		inR, inW := io.Pipe()
		go io.Copy(io.Discard, inR)
		defer inR.Close()
		c := rpc.New(bytes.NewReader(b), inW, rpc.Options{Host: "f", Timeout: 2 * time.Second, Heartbeat: 10 * time.Millisecond})
		p, err := c.Go(proto.MethodPing, nil)
		if err != nil {
			if !errors.Is(err, rpc.ErrLost) {
				t.Fatalf("send: %v", err)
			}
			return
		}
		var pong proto.Pong
		p.Wait(context.Background(), &pong)
		<-c.Lost()
		if c.Err() == nil || !errors.Is(c.Err(), rpc.ErrLost) {
			t.Fatalf("lost without its error: %v", c.Err())
		}
	})
}
