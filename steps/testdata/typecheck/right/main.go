// Command right is the control of TestWrongParamsDoNotCompile: typed calls
// through a steps.Host with the right params, which must build (so the
// test's failing build of ../wrong is about the types, not the set-up).
package main

import (
	"context"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/steps"
)

func use(ctx context.Context, h steps.Host) error {
	var started proto.ProcStarted
	started, err := rpc.Invoke(ctx, h, rpc.ProcStart, proto.ProcStartParams{Handle: "x", Argv: []string{"true"}})
	if err != nil {
		return err
	}
	_ = started
	var facts proto.Facts
	facts, err = rpc.Invoke(ctx, h, rpc.Facts, proto.FactsParams{})
	_ = facts
	return err
}

func main() { _ = use }
