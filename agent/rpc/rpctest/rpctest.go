// Package rpctest runs a real agent (agent/server) in-process over io.Pipe
// and speaks to it with the controller's client (agent/rpc), optionally
// through a liar that never answers a method or floods events instead: the
// test bed of the client's deadlines and of the engine against stuck hosts.
//
// It is for tests only; it imports agent/server, agent/rpc and agent/proto
// (internal/archtest checks it).
package rpctest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/agent/server"
)

// Lie says what the agent does with its answer to a call of method:
// Answer, Mute (never answers), Flood (streams log events for the call
// forever instead of answering) or HugeError (answers with an error whose
// message, command and stderr are each about a megabyte).
type Lie func(method string) string

const (
	Answer = ""
	Mute   = "mute"
	Flood  = "flood"
	// HugeError: a host whose every error is as long as a reply line
	// allows, in every field the controller shows (SECURITY 136).
	HugeError = "huge-error"
)

func hugeError(id uint64) []byte {
	big := strings.Repeat("E", 1<<20)
	b, _ := json.Marshal(proto.Envelope{ID: id, Error: &proto.Error{
		Code: proto.CodeInternal, Message: big, ExitCode: 1, Stderr: big,
		Command: strings.Split(strings.Repeat("arg ", 1<<18), " "),
	}})
	return append(b, '\n')
}

// Agent is an in-process agent and its client.
type Agent struct {
	Client *rpc.Client
	Hello  proto.Hello
	Server *server.Server

	in     *io.PipeWriter
	out    *io.PipeReader
	served chan error
	done   chan struct{}
	stop   func()
}

// Start serves a new agent with so (WorkDir required) and connects a
// client with o to it; lie, when set, filters its answers. The agent ends
// at cleanup.
func Start(t testing.TB, so server.Options, o rpc.Options, lie Lie) *Agent {
	t.Helper()
	if so.Hash == "" {
		so.Hash = "test"
	}
	if so.StopGrace == 0 {
		so.StopGrace = time.Second
	}
	srv, err := server.New(so)
	if err != nil {
		t.Fatalf("start in-process agent: %v", err)
	}
	inR, inW := io.Pipe()   // client -> agent
	srvR, srvW := io.Pipe() // agent -> liar
	outR, outW := io.Pipe() // liar -> client
	a := &Agent{Server: srv, in: inW, out: outR, served: make(chan error, 1), done: make(chan struct{})}
	go func() {
		err := srv.Serve(context.Background(), inR, srvW)
		srvW.Close()
		a.served <- err
		close(a.done)
	}()
	var mu sync.Mutex
	methods := map[uint64]string{}
	tap := &tapWriter{w: inW, fn: func(line []byte) {
		var q proto.Request
		if json.Unmarshal(line, &q) == nil {
			mu.Lock()
			methods[q.ID] = q.Method
			mu.Unlock()
		}
	}}
	go func() {
		br := bufio.NewReaderSize(srvR, 64<<10)
		// Once the client is gone the agent's output is drained, so its
		// shutdown never blocks on a write.
		defer io.Copy(io.Discard, br)
		for {
			line, err := rpc.ReadLine(br, proto.MaxLine)
			if err != nil {
				outW.CloseWithError(err)
				return
			}
			var env proto.Envelope
			if lie != nil && json.Unmarshal(line, &env) == nil && env.Event == "" && env.ID != 0 {
				mu.Lock()
				m := methods[env.ID]
				mu.Unlock()
				switch lie(m) {
				case Mute:
					continue
				case HugeError:
					line = hugeError(env.ID)
				case Flood:
					ev, _ := json.Marshal(proto.Event{ID: env.ID, Event: proto.EventLog, Data: json.RawMessage(`{"msg":"still going"}`)})
					ev = append(ev, '\n')
					go func() {
						for {
							if _, err := outW.Write(ev); err != nil {
								return
							}
						}
					}()
					continue
				}
			}
			if _, err := outW.Write(line); err != nil {
				return
			}
		}
	}()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			inW.Close()
			outR.CloseWithError(errors.New("closed by the client"))
		})
	}
	o.Close = a.stop
	c, hello, err := rpc.Dial(outR, tap, o)
	if err != nil {
		t.Fatalf("in-process agent: hello: %v", err)
	}
	a.Client, a.Hello = c, hello
	t.Cleanup(func() { a.Close() })
	return a
}

// Close ends the agent's input: it stops what it started and returns
// Serve's result.
func (a *Agent) Close() error {
	a.Client.Close()
	err := <-a.served
	a.served <- err
	a.stop()
	return err
}

// Done is closed once the agent's Serve has returned.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Kill drops the agent as a lost SSH session would: the client sees its
// output end mid-call; the agent then sees its input close.
func (a *Agent) Kill() {
	a.out.CloseWithError(errors.New("connection lost"))
	a.in.CloseWithError(errors.New("killed"))
}

// tapWriter passes lines on and shows each to fn.
type tapWriter struct {
	w  io.WriteCloser
	fn func([]byte)
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.fn(p)
	return t.w.Write(p)
}

func (t *tapWriter) Close() error { return t.w.Close() }
