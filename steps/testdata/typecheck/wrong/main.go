// Command wrong must not build (TestWrongParamsDoNotCompile): each call
// below passes a method params of another method, takes its result as
// another type, or names a method as a string, and the test checks the
// compiler refuses every one of them, by line.
package main

import (
	"context"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/steps"
)

func use(ctx context.Context, h steps.Host) {
	_, _ = rpc.Invoke(ctx, h, rpc.ProcStart, proto.ProcStopParams{Handle: "x"}) // ERROR: wrong params
	var facts proto.Facts
	facts, _ = rpc.Invoke(ctx, h, rpc.Ping, rpc.None{}) // ERROR: wrong result
	_ = facts
	_ = h.Call(ctx, proto.MethodProcStart, proto.ProcStopParams{}, nil)                 // ERROR: no method by name
	_, _ = rpc.Invoke(ctx, h, rpc.DeviceEnsure, proto.DeviceDeleteParams{Name: "rxe0"}) // ERROR: wrong params
}

func main() { _ = use }
