package sectest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/sshx"
	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// FuzzAgentStream: whatever a host's agent prints after a valid hello, the
// controller's protocol client (engine/remote over real SSH) answers a call
// with a result or an error: no panic, no hang. Seeds are the agent's own
// replies and the hostile modes' lines.
func FuzzAgentStream(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":{"pong":true}}` + "\n",
		`{"id":1,"event":"log","data":{"msg":"x"}}` + "\n" + `{"id":1,"result":{}}` + "\n",
		`{"id":1,"error":{"code":"internal","message":"boom","command":["a"],"exit_code":3,"stderr":"e"}}` + "\n",
		`{"id": 1, "result": {"unterminated` + "\n",
		`{"id":2,"result":1}` + "\n",
		`{"id":1,"result":null}` + "\n",
		"\n\n\n",
		`{"id":1}` + "\n",
		"{\"id\":1,\"result\":\"\xff\xfe\"}\n",
	} {
		f.Add([]byte(s))
	}
	var mu sync.Mutex
	var reply []byte
	srv := sshtest.Start(f, nil)
	home := f.TempDir()
	srv.Handler = func(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
		m := serveCmd.FindStringSubmatch(cmd)
		if m == nil {
			return sshtest.ShellHandler(home)(cmd, stdin, stdout, stderr)
		}
		h, _ := json.Marshal(proto.Hello{Magic: proto.Magic, Proto: proto.Version, Hash: filepath.Base(m[1]), WorkDir: m[3]})
		stdout.Write(append(h, '\n'))
		br := bufio.NewReader(stdin)
		if _, err := br.ReadString('\n'); err != nil {
			return 0
		}
		mu.Lock()
		b := reply
		mu.Unlock()
		stdout.Write(b)
		return 0
	}
	srv.SFTPDir = home
	kh := sshtest.WriteKnownHosts(f, srv.KnownHostsLine())
	d, err := sshx.NewDialer(sshx.Options{KnownHosts: []string{kh}, SSHConfig: "none", AgentSocket: "none"})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })
	h := &host{name: "fuzz", srv: srv}
	c, err := d.Dial(context.Background(), target(h))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { c.Close() })
	inst, err := remote.NewAgents(standIns).Install(context.Background(), c)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		mu.Lock()
		reply = b
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a, err := remote.Start(ctx, c, inst, remote.StartOptions{Host: "fuzz", RunID: "fuzz", HelloTimeout: 5 * time.Second})
		if err != nil {
			t.Fatalf("start: %v", err)
		}
		defer a.Close()
		var res json.RawMessage
		err = a.Call(ctx, proto.MethodPing, nil, &res)
		if ctx.Err() != nil {
			t.Fatalf("the call hung on %q", b)
		}
		_ = err // any answer or error is fine; a panic or hang is not
	})
}
