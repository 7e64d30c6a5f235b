package server

import (
	"testing"

	"github.com/rlab-dev/rlab/agent/proto"
)

// go test -run '^$' -bench . -benchtime 2000x ./agent/server/

// BenchmarkPing is one request/response round trip through the serve loop
// (decode, goroutine, dispatch, encode) over io.Pipe.
func BenchmarkPing(b *testing.B) {
	c, _ := startAgent(b, Options{})
	for b.Loop() {
		if e := c.call(proto.MethodPing, nil, nil); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkFacts is a whole facts call on this machine (tool versions run as
// processes).
func BenchmarkFacts(b *testing.B) {
	c, _ := startAgent(b, Options{})
	for b.Loop() {
		var f proto.Facts
		if e := c.call(proto.MethodFacts, nil, &f); e != nil {
			b.Fatal(e)
		}
	}
}

// BenchmarkTCPLoopback is the built-in TCP workload, 64 MiB over loopback;
// it reports the receiver's Gb/s.
func BenchmarkTCPLoopback(b *testing.B) {
	c, _ := startAgent(b, Options{})
	var gbps float64
	i := 0
	for b.Loop() {
		i++
		h := "rx" + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		var s proto.TCPServing
		if e := c.call(proto.MethodTCPServe, proto.TCPServeParams{Handle: h, Addr: "127.0.0.1"}, &s); e != nil {
			b.Fatal(e)
		}
		send := c.send(proto.MethodTCPSend, proto.TCPSendParams{Handle: "tx", Addr: "127.0.0.1", Port: s.Port, Bytes: 64 << 20})
		var r proto.TCPResult
		if e := c.call(proto.MethodTCPWait, proto.TCPWaitParams{Handle: h}, &r); e != nil {
			b.Fatal(e)
		}
		c.wait(send, nil)
		gbps += r.Gbps
	}
	b.ReportMetric(gbps/float64(i), "Gb/s")
	b.SetBytes(64 << 20)
}
