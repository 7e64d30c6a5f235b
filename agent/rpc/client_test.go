package rpc_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/agent/rpc/rpctest"
	"github.com/rlab-dev/rlab/agent/server"
)

// pipeAgent is a real agent in-process over io.Pipe, its answers passed
// through lie, spoken to with the client.
func pipeAgent(t *testing.T, lie rpctest.Lie, o rpc.Options) (*rpc.Client, proto.Hello) {
	t.Helper()
	a := rpctest.Start(t, server.Options{WorkDir: t.TempDir(), Version: "test"}, o, lie)
	return a.Client, a.Hello
}

// paramsFor is a call of each method that the agent answers at once (an
// error mostly: nothing of that name exists), bounded where the method
// takes a bound: what is tested is the client's side.
func paramsFor(method string) any {
	switch method {
	case proto.MethodProcWait:
		return proto.ProcWaitParams{Handle: "none", TimeoutMs: 10}
	case proto.MethodTCPSend:
		return proto.TCPSendParams{Handle: "none", Addr: "127.0.0.1", Port: 1, Bytes: 1, TimeoutMs: 10}
	case proto.MethodTCPWait:
		return proto.TCPWaitParams{Handle: "none", TimeoutMs: 10}
	case proto.MethodProcStop:
		return proto.ProcStopParams{Handle: "none"}
	case proto.MethodCaptureStop:
		return proto.CaptureStopParams{Handle: "none"}
	case proto.MethodDeviceDelete:
		return proto.DeviceDeleteParams{Name: "rxe_none"}
	case proto.MethodDeviceEnsure:
		return proto.DeviceEnsureParams{Name: "rxe_none", Netdev: "nonexistent0"}
	case proto.MethodProcStart:
		return proto.ProcStartParams{Handle: "p", Argv: []string{"true"}}
	case proto.MethodCaptureStart:
		return proto.CaptureStartParams{Handle: "c", Netdev: "../bad", MaxBytes: 1}
	case proto.MethodTCPServe:
		return proto.TCPServeParams{Handle: "s", Addr: "127.0.0.1"}
	case proto.MethodFilesRead:
		return proto.FilesReadParams{Path: "none", MaxBytes: 10}
	case proto.MethodFilesWrite:
		return proto.FilesWriteParams{Path: "../bad"}
	case proto.MethodLease:
		return proto.LeaseParams{RunID: "r"}
	case proto.MethodProvision:
		return proto.ProvisionParams{Family: "debian", TimeoutMs: 10, GraceMs: 10}
	}
	return nil
}

// TestStuckAgentEveryMethod: for every method, an agent that never answers
// it, and one that streams events for it forever instead, is given up on
// once the call's deadline passes: the call fails with an error naming the
// host, the method and the deadline; the agent is lost (its transport
// closed), so every later call fails at once too.
func TestStuckAgentEveryMethod(t *testing.T) {
	methods := rpc.Methods()
	slices.Sort(methods)
	for _, mode := range []string{"mute", "flood"} {
		for _, m := range methods {
			t.Run(mode+"/"+m, func(t *testing.T) {
				c, _ := pipeAgent(t, func(got string) string {
					if got == m {
						return mode
					}
					return ""
				}, rpc.Options{Host: "h2", Timeout: 100 * time.Millisecond})
				err := c.Do(context.Background(), m, paramsFor(m), nil)
				var se *rpc.StuckError
				if !errors.As(err, &se) || se.Method != m || !errors.Is(err, rpc.ErrLost) {
					t.Fatalf("call %s: %v, want a StuckError for it", m, err)
				}
				want := `host "h2": agent did not answer ` + m + " within "
				if !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error %q, want it to start %q", err, want)
				}
				<-c.Lost()
				err = c.Do(context.Background(), proto.MethodPing, nil, nil)
				if !errors.As(err, &se) || !strings.Contains(err.Error(), `host "h2": agent did not answer `+m) {
					t.Errorf("call after giving up: %v, want the lost agent's error", err)
				}
			})
		}
	}
}

// TestHeartbeatFindsSilentAgent: a call with no bound of its own (a
// proc.wait without a timeout) on an agent that answers nothing any more,
// pings included, ends with an error naming the heartbeat and the call.
func TestHeartbeatFindsSilentAgent(t *testing.T) {
	silent := false
	var mu sync.Mutex
	c, _ := pipeAgent(t, func(string) string {
		mu.Lock()
		defer mu.Unlock()
		if silent {
			return "mute"
		}
		return ""
	}, rpc.Options{Host: "h2", Timeout: time.Minute, Heartbeat: 20 * time.Millisecond, HeartbeatTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	if _, err := rpc.Call(ctx, c, rpc.ProcStart, proto.ProcStartParams{Handle: "sleeper", Argv: []string{"sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	silent = true
	mu.Unlock()
	_, err := rpc.Call(ctx, c, rpc.ProcWait, proto.ProcWaitParams{Handle: "sleeper"})
	var se *rpc.StuckError
	if !errors.As(err, &se) || se.Method != proto.MethodPing || se.While != proto.MethodProcWait {
		t.Fatalf("proc.wait on a silent agent: %v, want a heartbeat StuckError", err)
	}
	if !strings.Contains(err.Error(), `host "h2": agent did not answer a heartbeat (ping) within`) {
		t.Errorf("error %q", err)
	}
}

// TestHeartbeatKeepsLiveAgent: a long wait on an agent that answers its
// pings is not cut short however many heartbeats pass.
func TestHeartbeatKeepsLiveAgent(t *testing.T) {
	pings := 0
	var mu sync.Mutex
	c, _ := pipeAgent(t, func(m string) string {
		if m == proto.MethodPing {
			mu.Lock()
			pings++
			mu.Unlock()
		}
		return ""
	}, rpc.Options{Host: "h1", Timeout: time.Minute, Heartbeat: 5 * time.Millisecond})
	ctx := context.Background()
	// The process is stopped once several heartbeats were answered.
	if _, err := rpc.Call(ctx, c, rpc.ProcStart, proto.ProcStartParams{Handle: "w", Argv: []string{"sleep", "1000"}}); err != nil {
		t.Fatal(err)
	}
	wait, err := c.Go(proto.MethodProcWait, proto.ProcWaitParams{Handle: "w"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		mu.Lock()
		n := pings
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := rpc.Call(ctx, c, rpc.ProcStop, proto.ProcStopParams{Handle: "w"}); err != nil {
		t.Fatal(err)
	}
	var r proto.ProcResult
	if err := wait.Wait(ctx, &r); err != nil || !r.Stopped {
		t.Fatalf("proc.wait with heartbeats: %+v, %v", r, err)
	}
}

// TestTypedCalls: the typed methods decode into their result types; an
// answered error is a CallError carrying the agent's code.
func TestTypedCalls(t *testing.T) {
	c, hello := pipeAgent(t, nil, rpc.Options{Host: "h1"})
	ctx := context.Background()
	if hello.Magic != proto.Magic {
		t.Fatalf("hello %+v", hello)
	}
	pong, err := rpc.Call(ctx, c, rpc.Ping, rpc.None{})
	if err != nil || pong.Time == 0 {
		t.Errorf("ping: %+v, %v", pong, err)
	}
	f, err := rpc.Call(ctx, c, rpc.Facts, proto.FactsParams{})
	if err != nil || f.WorkDir != hello.WorkDir {
		t.Errorf("facts: work dir %q, %v; want %q", f.WorkDir, err, hello.WorkDir)
	}
	_, err = rpc.Call(ctx, c, rpc.ProcWait, proto.ProcWaitParams{Handle: "nope"})
	var ce *rpc.CallError
	var pe *proto.Error
	if !errors.As(err, &ce) || !errors.As(err, &pe) || pe.Code != proto.CodeNotFound || !strings.HasPrefix(err.Error(), `host "h1": proc.wait: `) {
		t.Errorf("proc.wait of no process: %v", err)
	}
	var events []proto.Event
	var emu sync.Mutex
	c2, _ := pipeAgent(t, nil, rpc.Options{Host: "h1", OnEvent: func(e proto.Event) {
		emu.Lock()
		events = append(events, e)
		emu.Unlock()
	}})
	st, err := rpc.Call(ctx, c2, rpc.ProcStart, proto.ProcStartParams{Handle: "r", Argv: []string{"sh", "-c", "echo up; sleep 1000"}, Ready: &proto.Ready{OutputRegex: "up"}})
	if err != nil || st.PID == 0 {
		t.Fatalf("proc.start: %+v, %v", st, err)
	}
	emu.Lock()
	defer emu.Unlock()
	if len(events) == 0 || events[len(events)-1].Event != proto.EventReady {
		t.Errorf("events %+v, want the ready event", events)
	}
}

// fakeCaller answers facts and ping typed (rpc.Match) and fails anything
// else, recording the methods it saw: what a wrapper or a fake host in
// the engine's tests does.
type fakeCaller struct{ seen []string }

func (f *fakeCaller) Send(_ context.Context, r *rpc.Request) error {
	f.seen = append(f.seen, r.Method())
	if p, res, ok := rpc.Match(r, rpc.Facts); ok {
		res.WorkDir = "/w"
		if p.Refresh {
			res.WorkDir = "/fresh"
		}
		return nil
	}
	if _, res, ok := rpc.Match(r, rpc.Ping); ok {
		if r.Params() != nil {
			return errors.New("ping carried params")
		}
		res.Time = 7
		return nil
	}
	return &proto.Error{Code: proto.CodeUnknown, Message: r.Method()}
}

// TestMatch: a typed call through any Caller reaches it as its method with
// its own params and result types, which Match hands back (and refuses
// for another method).
func TestMatch(t *testing.T) {
	ctx := context.Background()
	f := &fakeCaller{}
	facts, err := rpc.Invoke(ctx, f, rpc.Facts, proto.FactsParams{Refresh: true})
	if err != nil || facts.WorkDir != "/fresh" {
		t.Errorf("facts: %+v, %v; want work dir /fresh", facts, err)
	}
	pong, err := rpc.Invoke(ctx, f, rpc.Ping, rpc.None{})
	if err != nil || pong.Time != 7 {
		t.Errorf("ping: %+v, %v; want time 7", pong, err)
	}
	_, err = rpc.Invoke(ctx, f, rpc.ProcWait, proto.ProcWaitParams{Handle: "x"})
	var pe *proto.Error
	if !errors.As(err, &pe) || pe.Code != proto.CodeUnknown {
		t.Errorf("proc.wait through a caller that answers only facts and ping: %v", err)
	}
	if want := []string{proto.MethodFacts, proto.MethodPing, proto.MethodProcWait}; !slices.Equal(f.seen, want) {
		t.Errorf("methods seen %v, want %v", f.seen, want)
	}
}

// TestDeadlines: each method's deadline from its params.
func TestDeadlines(t *testing.T) {
	tests := []struct {
		method string
		params any
		base   time.Duration
		want   time.Duration
		ok     bool
	}{
		{proto.MethodFacts, nil, 0, 2 * time.Minute, true},
		{proto.MethodFacts, nil, time.Second, time.Second, true},
		{proto.MethodPing, nil, 0, time.Minute, true},
		{proto.MethodFilesList, proto.FilesListOptions{HashMax: 1}, 0, 10 * time.Minute, true},
		{proto.MethodFilesList, proto.FilesListParams{}, 0, 10 * time.Minute, true},
		{proto.MethodProcWait, proto.ProcWaitParams{TimeoutMs: 5000}, 0, time.Minute + 5*time.Second, true},
		{proto.MethodProcWait, &proto.ProcWaitParams{TimeoutMs: 5000}, time.Second, 6 * time.Second, true},
		{proto.MethodProcWait, proto.ProcWaitParams{}, 0, 0, false},
		{proto.MethodProcWait, nil, 0, 0, false},
		{proto.MethodTCPSend, proto.TCPSendParams{TimeoutMs: 1000}, 0, time.Minute + time.Second, true},
		{proto.MethodTCPWait, proto.TCPWaitParams{}, 0, 0, false},
		{proto.MethodProcStart, proto.ProcStartParams{}, 0, time.Minute, true},
		{proto.MethodProcStart, proto.ProcStartParams{Ready: &proto.Ready{TCPListen: 1}}, 0, time.Minute + 10*time.Second, true},
		{proto.MethodProcStart, proto.ProcStartParams{Ready: &proto.Ready{TimeoutMs: 60000}}, 0, 2 * time.Minute, true},
		{proto.MethodDeviceEnsure, proto.DeviceEnsureParams{WaitMs: 30000}, 0, 2*time.Minute + 30*time.Second, true},
		{proto.MethodProcStop, proto.ProcStopParams{GraceMs: 2000}, 0, time.Minute + 2*time.Second, true},
		{"no.such.method", nil, 0, 10 * time.Minute, true},
	}
	for _, tt := range tests {
		d, ok := rpc.Deadline(tt.method, tt.params, tt.base)
		if d != tt.want || ok != tt.ok {
			t.Errorf("Deadline(%s, %+v, %s) = %s, %v; want %s, %v", tt.method, tt.params, tt.base, d, ok, tt.want, tt.ok)
		}
	}
	for d, want := range map[time.Duration]string{time.Minute: "60s", 100 * time.Millisecond: "100ms", 2 * time.Minute: "2m", 10 * time.Minute: "10m", 65 * time.Second: "65s", 150 * time.Second: "2m30s"} {
		if got := rpc.FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestMethodsCoverProto: every Method* constant of agent/proto has its
// typed Method value here, so no call goes without a deadline of its own.
func TestMethodsCoverProto(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(filepath.Dir(file), "..", "proto", "proto.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if strings.HasPrefix(n.Name, "Method") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						v, _ := strconv.Unquote(lit.Value)
						want = append(want, v)
					}
				}
			}
		}
	}
	got := rpc.Methods()
	slices.Sort(want)
	slices.Sort(got)
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Errorf("rpc methods %q\nproto methods %q", got, want)
	}
}
