package sectest

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
)

// netdevLiar adds a netdev named name holding 127.0.0.1 to its facts.
func netdevLiar(name string) func(io.Writer, string, *requests) io.Writer {
	return func(w0 io.Writer, _ string, req *requests) io.Writer {
		w := &lockedWriter{w: w0}
		return &lineWriter{fn: func(line []byte) error {
			var env proto.Envelope
			if json.Unmarshal(line, &env) == nil && env.Event == "" && env.ID != 0 && req.method(env.ID) == proto.MethodFacts {
				var f map[string]any
				if json.Unmarshal(env.Result, &f) == nil {
					nds, _ := f["netdevs"].([]any)
					f["netdevs"] = append(nds, map[string]any{"name": name, "mtu": 1500, "state": "up", "addrs": []string{"127.0.0.1/8"}})
					res, _ := json.Marshal(f)
					b, _ := json.Marshal(proto.Response{ID: env.ID, Result: res})
					line = append(b, '\n')
				}
			}
			_, err := w.Write(line)
			return err
		}}
	}
}

// refuseLiar answers every tcp.send with a refused connect.
func refuseLiar(w0 io.Writer, _ string, req *requests) io.Writer {
	w := &lockedWriter{w: w0}
	return &lineWriter{fn: func(line []byte) error {
		var env proto.Envelope
		if json.Unmarshal(line, &env) == nil && env.Event == "" && env.ID != 0 && req.method(env.ID) == proto.MethodTCPSend {
			b, _ := json.Marshal(proto.Response{ID: env.ID, Error: &proto.Error{Code: proto.CodeCommand, Message: "tcp.send: connect to 127.0.0.1:1: connection refused"}})
			line = append(b, '\n')
		}
		_, err := w.Write(line)
		return err
	}}
}

// TestHostNetdevCopiedPerWorkload (attack round 14, host side, high): the
// server's netdev holding a tcp workload's address, as its facts name it,
// was named in the skip reason of every later workload of the pair once
// the data link was called down (engine/run linkDownError): a host
// answering a 7 MiB name, its peer refusing the probes, made 6 tcp
// workloads a 250 MB run directory in 12 s (330 MiB heap). Facts with such
// a name are refused now (proto.MaxNetdevName).
func TestHostNetdevCopiedPerWorkload(t *testing.T) {
	name := "eth" + strings.Repeat("n", 7<<20)
	srv := startHost(t, "srv", netdevLiar(name))
	cli := startHost(t, "cli", refuseLiar)
	var ws strings.Builder
	n := 6
	for i := range n {
		fmt.Fprintf(&ws, "workload \"t%d\" {\n  tool = \"tcp\"\n  server = host.srv\n  client = host.cli\n  bytes = \"1MiB\"\n  timeout = \"5s\"\n}\n", i)
	}
	l := writeLab(t, `lab "netdev" {}
`+srv.hcl()+cli.hcl()+ws.String(), lab.LoadOptions{})
	res, peak, took := runWatched(t, l)
	t.Logf("code %d in %v, heap peak %d MiB; run error %d bytes: %.300s", res.Code, took.Round(time.Millisecond), peak>>20, len(fmt.Sprint(res.Err)), fmt.Sprint(res.Err))
	checkAnswerNotCopied(t, res, "the host's netdev name")
}
