package rpc_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
)

// TestReplyOfEmptyObjectsRefused: a host's reply is bounded in bytes
// (MaxLine) but what decoding it built was not: a facts answer of a line
// of empty netdevs ("{},": 3 bytes each, about 780 once decoded) took the
// controller about 2 GB per host (issue 24 attack round). Past
// proto.MaxValues the call fails naming the host and method, within an
// allocation of a few times the line; a reply of as many netdevs as facts
// may list (proto.Bounds) decodes.
func TestReplyOfEmptyObjectsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		refused bool
	}{
		{"past the bound", 2_000_000, true},
		// As many netdevs as a facts answer may list (proto.Bounds), less
		// than MaxValues: decoded.
		{"at the netdevs' bound", proto.Bounds["Facts.Netdevs"].Max, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqW, repR := answerEach(t, func(req proto.Request) proto.Envelope {
				res := `{"hostname":"h","netdevs":[` + strings.TrimSuffix(strings.Repeat("{},", tc.n), ",") + `]}`
				return proto.Envelope{ID: req.ID, Result: json.RawMessage(res)}
			})
			c := rpc.New(repR, reqW, rpc.Options{Host: "h1", Timeout: 30 * time.Second})
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			f, err := rpc.Invoke(context.Background(), c, rpc.Facts, proto.FactsParams{})
			runtime.ReadMemStats(&m1)
			if !tc.refused {
				if err != nil || len(f.Netdevs) != tc.n {
					t.Fatalf("%d netdevs: %d decoded, %v", tc.n, len(f.Netdevs), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), `host "h1": facts: decode result`) || !strings.Contains(err.Error(), "more than") {
				t.Fatalf("%d empty netdevs: %v (%d decoded), want refused", tc.n, err, len(f.Netdevs))
			}
			if a := m1.TotalAlloc - m0.TotalAlloc; a > 8*uint64(3*tc.n)+(32<<20) {
				t.Errorf("refusing a %d-byte reply allocated %d MiB", 3*tc.n, a>>20)
			}
		})
	}
}
