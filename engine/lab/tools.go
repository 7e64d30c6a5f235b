package lab

import "github.com/rlab-dev/rlab/kinds"

// Tool describes what a workload tool accepts: its entry in the tool
// descriptor (kinds), the one place tool options are described, so
// a new tool is one entry there.
type Tool = kinds.Tool

// LookupTool returns the tool named n.
func LookupTool(n string) (Tool, bool) { return kinds.Lookup(n) }

// ToolNames lists every tool name, sorted.
func ToolNames() []string { return kinds.Names() }
