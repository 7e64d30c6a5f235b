package vm

// The agent disk (engine/agentdisk, issue 27): every VM of a set, and the
// template a snapshot is saved from, attaches one read-only raw disk with
// the serial "rlab-agent" holding the agent binary, at a fixed PCI slot and
// of a fixed capacity, so a restored guest has the device set and the disk
// size its template had. The file is made here, in the set's own folder
// (0700) under the run directory, 0600 and never over a file: no path a
// lab names. QEMU opens it read-only; the guest reads it with O_DIRECT, so
// a restored guest's page cache, filled from its template's disk, is never
// what it reads.

import (
	"os"
	"path/filepath"

	"github.com/rlab-dev/rlab/engine/agentdisk"
)

// agentDiskSlot is the disk's PCI slot: the last of the bus, above the data
// NICs (0x6 on).
const agentDiskSlot = 0x1f

// AgentDiskEnv set to "0" attaches every VM's agent disk empty, whatever
// Options.Agent holds: the agent is then uploaded, as before the disk (to
// compare the two, or to step around a disk that misbehaves).
const AgentDiskEnv = "RLAB_VM_AGENT_DISK"

// writeAgentDisk makes the set's agent disk. An agent that cannot be put on
// it leaves it empty (the connection then uploads the agent, saying so).
func (s *Set) writeAgentDisk() error {
	s.agentDisk = filepath.Join(s.Dir, "agent.disk")
	if os.Getenv(AgentDiskEnv) == "0" && s.opts.Agent != nil {
		s.opts.Logger.Info("the agent disk is left empty ("+AgentDiskEnv+"=0): the agent will be uploaded", "disk", s.agentDisk)
		s.opts.Agent = nil
	}
	_ = os.Remove(s.agentDisk) // a run directory used again: made anew
	err := agentdisk.Write(s.agentDisk, s.opts.Agent)
	if err == nil {
		if s.opts.Agent == nil {
			s.opts.Logger.Info("no agent for the agent disk; attaching it empty", "disk", s.agentDisk)
		}
		return nil
	}
	if s.opts.Agent == nil {
		return err
	}
	s.opts.Logger.Warn("the agent does not fit the agent disk; attaching it empty", "err", err)
	return agentdisk.Write(s.agentDisk, nil)
}
