// Package program is the program tool family: the lab author's own programs
// (a verbs client and server, a class's server.c and client.c), shipped to
// the hosts from a `program` block, built there, and run as a pair (server
// first, the client once the server is ready) or as one command on host.
// Their numbers come from `metric` blocks over their output
// (kinds.ReadOutputMetric), so expect, compare and the report read them as
// every tool's.
//
// Its workload attributes beyond the common ones (program, server_command,
// client_command, command, ready, metric blocks) are decoded here
// (Kind.DecodeWorkload, the engine/lab.BodyDecoder hook): the engine hands
// over the part of the block its own schema left.
//
// It imports kinds, steps and hcl; kinds/builtin registers it.
package program

import (
	"time"

	"github.com/rlab-dev/rlab/kinds"
	"github.com/rlab-dev/rlab/kinds/toolopts"
	"github.com/rlab-dev/rlab/steps"
)

// Flavor is the one flavor of program's tools (kinds.Flavor).
const Flavor kinds.Flavor = "program"

// Kind is the program family; kinds/builtin registers it.
type Kind struct{}

// NewOp is the op of one program workload.
func (Kind) NewOp(w *steps.Workload) (steps.Op, error) { return newOp(w) }

// Compiler is what the hosts need to build a program whatever its own
// packages: gcc (Debian's, RHEL's and SUSE's package of that name), probed
// by facts, named by preflight with its install command, installed by
// provisioning and carried by the default VM image. A program's own
// libraries (libibverbs-dev, librdmacm-dev) are its block's packages.
var Compiler = kinds.Program{Name: "gcc", Packages: kinds.Packages{Debian: "gcc", RHEL: "gcc", SUSE: "gcc"},
	Version: kinds.Version{Args: []string{"--version"}, Pattern: `[0-9]+\.[0-9]+(?:\.[0-9]+)?`}}

// Desc is program's descriptor: it records the common metrics, and the
// ones the workload's metric blocks name (kinds.OutputMetric).
func (Kind) Desc() kinds.Desc {
	c := Compiler
	return kinds.Desc{Name: "program",
		Tools: []kinds.Tool{{Name: "program", Flavor: Flavor, HostOrPair: true, Data: kinds.DataClient,
			TransportWhy: "a program chooses its own transport", Sizes: true, Iterations: true,
			Program: &c, Chart: "exec", View: kinds.View{Output: true, Declared: true},
			// The build (gcc under TCG: seconds per file) and the server's
			// start come before the first run; the programs' own time is
			// theirs to say.
			Pace: kinds.Pace{Start: 10 * time.Second, Unknown: "the program's own time, which the lab does not say"}}}}
}

// Options are the options program's tools take beyond the common ones, by
// their descriptor's flags (toolopts.Standard); engine/lab decodes a
// workload's through them (toolopts.Taker).
func (Kind) Options(t kinds.Tool) []toolopts.Option { return toolopts.Standard(t) }
